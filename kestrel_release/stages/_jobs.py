"""Long child processes that must die with us: builds, repairs, the precompile step.

Each child starts in its own session (process group), so on Ctrl-C/SIGTERM we
can kill the whole tree (uv -> python -> cmake -> ninja -> cc) rather than
only the direct child; output goes to a per-step log file, shown on failure.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from kestrel_release import console, proc, secrets
from kestrel_release.errors import BuildError, KestrelError

# Compiler, CMake and Python errors; the frontend's own summary lines come later and say less.
_ERROR = re.compile(r"(: (fatal )?error[: ]|^CMake Error|^\w*Error: |^ERROR: )")
_lock = threading.Lock()
_live: set[subprocess.Popen] = set()
_stopping = threading.Event()  # set by kill_all: a child's death is then ours, not its failure


def stopping() -> bool:
    return _stopping.is_set()


def reset() -> None:
    _stopping.clear()


def run_logged(argv: Sequence[str | os.PathLike], *, log: Path, cwd: Path | None = None,
               env: Mapping[str, str] | None = None, what: str,
               error: type[KestrelError] = BuildError, show_tail: bool = True) -> None:
    """Run `argv` with stdout+stderr into `log`; raise `error` with the log's tail on failure."""
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    with open(log, "w", encoding="utf-8") as fh:
        fh.write("+ " + secrets.mask(shlex.join(map(os.fspath, argv))) + "\n")
        fh.flush()
        child = spawn(argv, cwd=cwd, env=full_env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            code = child.wait()
        finally:
            forget(child)
            mask_log(log)
    if code != 0:
        fail(log, code, what, error, show_tail=show_tail)


def spawn(argv: Sequence[str | os.PathLike], **popen_kwargs) -> subprocess.Popen:
    """Start a child in its own session and track it, so kill_all reaches its whole tree; forget() it after."""
    child = proc.popen(argv, start_new_session=True, **popen_kwargs)
    with _lock:
        _live.add(child)
    return child


def mask_log(log: Path) -> None:
    """Mask credentials a child wrote straight into its log (it writes to the file, not through us)."""
    try:
        text = log.read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return
    masked = secrets.mask(text)
    if masked != text:
        tmp = log.with_name(log.name + ".masking")
        tmp.write_text(masked, encoding="utf-8", errors="surrogateescape")
        os.replace(tmp, log)


def forget(child: subprocess.Popen) -> None:
    with _lock:
        _live.discard(child)


def fail(log: Path, code: int, what: str, error: type[KestrelError] = BuildError, *, show_tail: bool = True) -> None:
    """Raise `error` for a child that exited `code`: 'stopped' when we killed it, else the log's first error."""
    if stopping():
        raise error(f"{what} stopped")
    lines = tail(log, 400)
    for line in lines[-15:] if show_tail else ():  # context above the one error line
        console.info(f"  | {line}")
    first = next((ln.strip() for ln in lines if _ERROR.search(ln)), None)
    raise error(f"{what} failed with exit code {code} (log: {log})",
                f"first error: {first}" if first else "last output: " + " | ".join(lines[-5:]))


def tail(log: Path, lines: int = 20) -> list[str]:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [secrets.mask(line) for line in text.splitlines()[-lines:]]


def kill_all() -> None:
    """Kill every live child's process group (used on interrupt or a sibling's failure)."""
    _stopping.set()
    with _lock:
        children = list(_live)
    for child in children:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
