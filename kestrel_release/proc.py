"""The single subprocess wrapper: every child process of the tool goes through `run`.

Why one place: secrets must never reach a child's argv (only its env), output is
shown only on failure or with -v, and a failure always names the log to read.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kestrel_release import console, reaper, secrets
from kestrel_release.errors import KestrelError


@dataclass
class Result:
    argv: list[str]
    returncode: int
    output: str

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def child_env(extra: Mapping[str, str] | None = None,
              base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: `base` (default os.environ) without publish credentials, plus `extra`.

    Why: builds run third-party code (backends, CMake scripts, build dependencies from PyPI) that
    needs no upload token; a child that never sees one cannot print or send it. `extra` is the
    caller's own additions and is kept as given.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not secrets.is_credential_var(k, v)}
    env.update(extra or {})
    return env


def _check_argv(argv: Sequence[str]) -> None:
    # A secret on argv is readable by every local user in /proc/<pid>/cmdline.
    for arg in argv:
        if secrets.mask(arg) != arg:
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
) -> Result:
    """Run a child, capture stdout+stderr together (into `log` too, masked).

    `env` is merged over os.environ. On a non-zero exit with `check`, raises
    `error` naming `what`, the log path and the last lines of output.
    """
    args = [os.fspath(a) for a in argv]
    _check_argv(args)
    console.debug("+ " + shlex.join(args))
    full_env = child_env(env)
    try:
        completed = subprocess.run(
            args, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, timeout=timeout, check=False,
        )
    except FileNotFoundError as exc:
        raise error(f"{args[0]} not found", "install it or put it on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what or args[0]} timed out after {timeout:.0f} s") from exc
    output = secrets.mask(completed.stdout.decode("utf-8", "replace"))
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


def probe(argv: Sequence[str | os.PathLike], *, timeout: float = 30,
          env: Mapping[str, str] | None = None) -> Result | None:
    """Ask a tool something (its version, a path): stdout and the exit code, stderr dropped.

    None when it cannot run at all (missing, not executable, timed out); never raises,
    because callers treat an unanswered question as "not available".
    """
    args = [os.fspath(a) for a in argv]
    _check_argv(args)
    console.debug("+ " + shlex.join(args))
    try:
        completed = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                                   stdin=subprocess.DEVNULL, env=child_env(env))
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Result(args, completed.returncode, completed.stdout)


def popen(argv: Sequence[str | os.PathLike], **kwargs) -> subprocess.Popen:
    """Start a long-running child (local servers, builds); same argv and environment rules as `run`."""
    args = [os.fspath(a) for a in argv]
    kwargs["env"] = child_env(base=kwargs.get("env"))
    _check_argv(args)
    console.debug("+ " + shlex.join(args) + " &")
    child = subprocess.Popen(args, **kwargs)
    reaper.watch(child, group=bool(kwargs.get("start_new_session")))  # dies with the tool, even on SIGKILL
    return child
