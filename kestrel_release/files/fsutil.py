"""Atomic file and directory writes, hashing, and the per-project lock.

Nothing the tool writes is ever half-written: content goes to a temp path in
the same directory and is renamed into place (rename is atomic on POSIX).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from kestrel_release.errors import UsageError
from kestrel_release.files import safepaths


class _Project(Protocol):
    """What `locked` needs of a stage's config (config_model.Config; not imported: it imports this module)."""

    @property
    def project_dir(self) -> Path: ...


_C = TypeVar("_C", bound=_Project)
_P = ParamSpec("_P")
_R = TypeVar("_R")

CHUNK = 1 << 20


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    # A symlinked file (a shared pyproject.toml, a version file) is written through: the
    # link stays a link and its target gets the new content.
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    # The pid in the temp name lets a later run collect it if this process is killed mid-write.
    fd, tmp = tempfile.mkstemp(prefix=safepaths.temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str, mode: int | None = None) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def replace_dir(staged: Path, final: Path) -> None:
    """Move a fully written `staged` directory to `final`, swapping out the old one.

    The old directory is renamed aside first, so at every instant `final` is
    either the complete old content or the complete new content.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
    try:
        os.replace(staged, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def staging_dir(near: Path, kind: str = "staging") -> Iterator[Path]:
    """An empty temp directory on the same filesystem as `near`, removed on exit.

    It is `work/` inside a statedir.owned_dir beside `near` (`.kestrel-<kind>-<pid>-*`, with its OWNER
    marker), so the caller may move the yielded directory away whole, and a run killed with
    SIGKILL leaves debris the next staging run there (and safepaths.collect_leftovers) removes.
    """
    from kestrel_release.files import statedir

    near = Path(near)
    path = statedir.owned_dir(kind, near.parent, hidden=True)
    try:
        (path / "work").mkdir()
        yield path / "work"
    finally:
        shutil.rmtree(path, ignore_errors=True)


_held: dict[str, int] = {}


def _holder(holder: Path) -> tuple[str, str]:
    """What holds the lock (operation, pid). The holder writes it just after taking the lock, so a
    second run that lands in between briefly polls rather than naming no operation."""
    for _ in range(20):
        with contextlib.suppress(OSError):
            running, _, pid = holder.read_text(encoding="utf-8").strip().partition(" ")
            if running:
                return running, pid
        time.sleep(0.05)
    return "", ""


@contextlib.contextmanager
def project_lock(project_dir: Path, what: str, wait: float = 0.0) -> Iterator[None]:
    """Hold an exclusive lock on the project so two runs never interleave.

    With wait=0 a second run refuses at once with a clear message (exit 2).
    Re-entrant within one process: `release` holds it while calling `build`.
    """
    from filelock import FileLock, Timeout

    from kestrel_release.files import statedir

    # Outside the work tree (the tool's state dir): a lock file never shows in `git status`.
    lock_path = str(statedir.lock_path(project_dir))
    holder = Path(lock_path + ".holder")  # what holds it: the lock file itself is truncated by each try
    if _held.get(lock_path):
        _held[lock_path] += 1
        try:
            yield
        finally:
            _held[lock_path] -= 1
        return
    lock = FileLock(lock_path)
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        running, pid = _holder(holder)
        raise UsageError(
            f"another kestrel-release {running or 'run'} is running on {project_dir}" + (f" ({pid})" if pid else ""),
            f"wait for it to finish, then run {what} again (lock: {lock_path})",
        ) from None
    _held[lock_path] = 1
    try:
        with contextlib.suppress(OSError):  # only the refusal message reads it (a torn read says "run")
            holder.write_text(f"{what} pid {os.getpid()}\n", encoding="utf-8")
        yield
    finally:
        _held.pop(lock_path, None)
        lock.release()


def locked(
    what: str,
) -> Callable[[Callable[Concatenate[_C, _P], _R]], Callable[Concatenate[_C, _P], _R]]:
    """Decorator: run a stage function `f(cfg, ...)` under the project lock."""
    import functools

    def decorate(func: Callable[Concatenate[_C, _P], _R]) -> Callable[Concatenate[_C, _P], _R]:
        @functools.wraps(func)
        def wrapper(cfg: _C, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            with project_lock(cfg.project_dir, what):
                return func(cfg, *args, **kwargs)

        return wrapper

    return decorate
