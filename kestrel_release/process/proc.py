"""The single subprocess wrapper: every child process of the tool goes through `run`.

Why one place: secrets must never reach a child's argv (only its env), output is
shown only on failure or with -v, and a failure always names the log to read.

Long children that must die with us (builds, repairs, the precompile step) start through `spawn` or
`run_logged` in their own session (process group), so on Ctrl-C/SIGTERM `kill_all` kills the whole tree
(uv -> python -> cmake -> ninja -> cc) rather than only the direct child; their output goes to a per-step
log file, shown on failure.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kestrel_release.errors import BuildError, KestrelError
from kestrel_release.process import build_log, proctree, reaper
from kestrel_release.ui import console, redact


@dataclass
class Result:
    argv: list[str]
    returncode: int
    output: str

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def child_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: `base` (default os.environ) without publish credentials, plus `extra`.

    Why: builds run third-party code (backends, CMake scripts, build dependencies from PyPI) that
    needs no upload token; a child that never sees one cannot print or send it. `extra` is the
    caller's own additions and is kept as given.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if not redact.is_credential_var(k, v)}
    env.update(extra or {})
    return env


def _check_argv(argv: Sequence[str]) -> None:
    # A secret on argv is readable by every local user in /proc/<pid>/cmdline.
    for arg in argv:
        if redact.mask(arg) != arg:
            raise KestrelError("refusing to pass a secret on a command line (use the environment)")


def run(
    argv: Sequence[str | os.PathLike],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    check: bool = True,
    error: type[KestrelError] = KestrelError,
    what: str | None = None,
    timeout: float | None = None,
    input: bytes | None = None,
) -> Result:
    """Run a child, capture stdout+stderr together (into `log` too, masked).

    `env` is merged over os.environ. On a non-zero exit with `check`, raises
    `error` naming `what`, the log path and the last lines of output. `input`: the child's stdin
    (else it reads nothing).
    """
    args = [os.fspath(a) for a in argv]
    _check_argv(args)
    console.debug("+ " + shlex.join(args))
    full_env = child_env(env)
    try:
        completed = subprocess.run(
            args,
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL if input is None else None,
            input=input,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise error(f"{args[0]} not found", "install it or put it on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what or args[0]} timed out after {timeout:.0f} s") from exc
    output = redact.mask(completed.stdout.decode("utf-8", "replace"))
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("+ " + shlex.join(args) + "\n" + output)
    result = Result(args, completed.returncode, output)
    if console.verbose() and output:
        console.debug(result.tail(40))
    if check and completed.returncode != 0:
        where = f" (log: {log})" if log else ""
        raise error(
            f"{what or shlex.join(args[:3])} failed with exit code {completed.returncode}{where}",
            "last output: " + " | ".join(result.tail(5).splitlines()),
        )
    return result


def probe(
    argv: Sequence[str | os.PathLike], *, timeout: float = 30, env: Mapping[str, str] | None = None
) -> Result | None:
    """Ask a tool something (its version, a path): stdout and the exit code, stderr dropped.

    None when it cannot run at all (missing, not executable, timed out); never raises,
    because callers treat an unanswered question as "not available".
    """
    args = [os.fspath(a) for a in argv]
    _check_argv(args)
    console.debug("+ " + shlex.join(args))
    try:
        completed = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=child_env(env)
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Result(args, completed.returncode, completed.stdout)


def popen(argv: Sequence[str | os.PathLike], **kwargs: Any) -> subprocess.Popen:
    """Start a long-running child (local servers, builds); same argv and environment rules as `run`."""
    args = [os.fspath(a) for a in argv]
    kwargs["env"] = child_env(base=kwargs.get("env"))
    _check_argv(args)
    console.debug("+ " + shlex.join(args) + " &")
    child = subprocess.Popen(args, **kwargs)
    reaper.watch(child, group=bool(kwargs.get("start_new_session")))  # dies with the tool, even on SIGKILL
    return child


_lock = threading.Lock()
_live: dict[subprocess.Popen, str] = {}  # child -> the tag its environment carries (proctree)
GRACE = 3.0  # seconds between SIGTERM and SIGKILL when kill_all stops a tree
_stopping = threading.Event()  # set by kill_all: a child's death is then ours, not its failure


def stopping() -> bool:
    return _stopping.is_set()


def reset() -> None:
    _stopping.clear()


def run_logged(
    argv: Sequence[str | os.PathLike],
    *,
    log: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    what: str,
    error: type[KestrelError] = BuildError,
    show_tail: bool = True,
    started: Callable[[subprocess.Popen], None] | None = None,
) -> None:
    """Run `argv` with stdout+stderr into `log`; raise `error` with the log's tail on failure.
    `started`: told the child once it runs (build's meter samples its process tree)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(log, "w", encoding="utf-8") as fh:
        fh.write("+ " + redact.mask(shlex.join([os.fspath(a) for a in argv])) + "\n")
        fh.flush()
        child = spawn(argv, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            if started is not None:
                started(child)
            code = child.wait()
        finally:
            forget(child)
            mask_log(log)
    if code != 0:
        fail(log, code, what, error, show_tail=show_tail)


def spawn(argv: Sequence[str | os.PathLike], **popen_kwargs: Any) -> subprocess.Popen:
    """Start a child in its own session and track it, so kill_all reaches its whole tree; forget() it after.
    Its environment carries a tag (proctree.TAG_VAR) that finds its descendants even when they left its
    session and their parent died."""
    if _stopping.is_set():  # kill_all has run: a thread that waited (a build slot, a lock) starts nothing more
        raise BuildError(f"{os.fspath(argv[0])} not started: the command is stopping")
    tag = proctree.new_tag()
    popen_kwargs["env"] = {
        **(os.environ if popen_kwargs.get("env") is None else popen_kwargs["env"]),
        proctree.TAG_VAR: tag,
    }
    if os.name == "nt":  # Windows has no sessions; a new process group can still get CTRL_BREAK_EVENT
        popen_kwargs["creationflags"] = popen_kwargs.get("creationflags", 0) | _new_group_flag()
        child = popen(argv, **popen_kwargs)
    else:
        child = popen(argv, start_new_session=True, **popen_kwargs)
    with _lock:
        _live[child] = tag
        late = _stopping.is_set()
    if late:  # kill_all ran while it started, and did not see it: its tree ends here instead
        kill_group(child)
        forget(child)
        raise BuildError(f"{os.fspath(argv[0])} stopped as it started: the command is stopping")
    return child


def mask_log(log: Path) -> None:
    """Mask credentials a child wrote straight into its log (it writes to the file, not through us)."""
    try:
        text = log.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    masked = redact.mask(text)
    if masked != text:
        tmp = log.with_name(log.name + ".masking")
        tmp.write_text(masked, encoding="utf-8", errors="surrogateescape")
        os.replace(tmp, log)


def forget(child: subprocess.Popen) -> None:
    with _lock:
        _live.pop(child, None)


def fail(log: Path, code: int, what: str, error: type[KestrelError] = BuildError, *, show_tail: bool = True) -> None:
    """Raise `error` for a child that exited `code`: 'stopped' when we killed it, else the log's first error."""
    if stopping():
        raise error(f"{what} stopped")
    lines = tail(log, 400)
    for line in lines[-15:] if show_tail else ():  # context above the one error line
        console.info(f"  | {line}")
    found = build_log.first_error_in(log)  # the whole log: a compiler's error may be far above the traceback
    first = redact.mask(found) if found else None
    raise error(
        f"{what} failed with exit code {code} (log: {log})",
        f"first error: {first}" if first else "last output: " + " | ".join(lines[-5:]),
    )


def tail(log: Path, lines: int = 20) -> list[str]:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [redact.mask(line) for line in text.splitlines()[-lines:]]


def kill_all() -> None:
    """Stop every live child's whole tree (used on interrupt or a sibling's failure): SIGTERM, then
    SIGKILL after GRACE seconds, to every process proctree finds (ninja's jobs, setsid helpers included)."""
    _stopping.set()
    with _lock:
        children = dict(_live)
    if children and proctree.available():
        proctree.kill([(child.pid, tag) for child, tag in children.items()], GRACE)
        return
    for child in children:
        kill_group(child)


def _new_group_flag() -> int:
    return getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200)


def kill_group(child: subprocess.Popen) -> None:
    """Kill `child` and its process group (its whole tree where /proc shows it); os.killpg exists only on POSIX."""
    if proctree.available():
        with _lock:
            tag = _live.get(child)
        proctree.kill([(child.pid, tag)], 0)
    try:
        if hasattr(os, "killpg"):
            os.killpg(child.pid, signal.SIGKILL)
            return
        # Windows: CTRL_BREAK_EVENT reaches the group `spawn` created; terminate the child itself in any case.
        ctrl_break = getattr(signal, "CTRL_BREAK_EVENT", None)
        if ctrl_break is not None:
            try:
                child.send_signal(ctrl_break)
            except (OSError, ValueError):
                pass
        child.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass
