"""Where the tool keeps its working files, so that none lands untracked in the user's repository.

Per project, `<cache>/projects/<dir name>-<hash of its path>/` (under $KESTREL_RELEASE_CACHE_DIR,
else $XDG_CACHE_HOME/kestrel-release, else ~/.cache/kestrel-release) holds the build logs and the
project lock. Secrets a sandbox prints a path to live in a private session directory there,
removed when the sandbox stops. Every temp or session dir the tool makes comes from owned_dir:
it names its owner in a marker, and the next owned_dir in the same folder removes it once that
owner is dead (a SIGKILLed run cleans up nothing itself). The output directory gets a `.gitignore` of `*` (as venv and
pytest's cache do, outputs.install writes it) so `dist-all/` never shows in `git status`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from kestrel_release import run_context
from kestrel_release.errors import FilesystemError

GITIGNORE = ".gitignore"
GITIGNORE_TEXT = "# written by kestrel-release: its output does not belong in git\n*\n"


def _configured() -> tuple[Path, str]:
    """The cache dir the environment names, and the variable(s) to set to move it."""
    if os.environ.get("KESTREL_RELEASE_CACHE_DIR"):
        from kestrel_release.files import safepaths

        # The tool creates and replaces entries in it: never the home directory or a parent of it.
        path = safepaths.check_target(
            Path(os.environ["KESTREL_RELEASE_CACHE_DIR"]), None, "cache directory", flag="KESTREL_RELEASE_CACHE_DIR="
        )
        return path, "KESTREL_RELEASE_CACHE_DIR"
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "kestrel-release", "KESTREL_RELEASE_CACHE_DIR or XDG_CACHE_HOME"
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no $HOME and no passwd entry
        raise _unusable(Path("~/.cache/kestrel-release"), "no home directory", "KESTREL_RELEASE_CACHE_DIR") from None
    return home / ".cache" / "kestrel-release", "KESTREL_RELEASE_CACHE_DIR or XDG_CACHE_HOME"


def _unusable(path: Path, why: str, variable: str) -> FilesystemError:
    return FilesystemError(
        f"cannot use {path} as the cache directory: {why}",
        f"set {variable} to a writable directory (e.g. {variable.split()[0]}=/var/tmp/$USER-cache)",
    )


_ready: set[Path] = set()  # checked usable: a cache of the filesystem, not run policy


def cache_dir() -> Path:
    """$KESTREL_RELEASE_CACHE_DIR, else $XDG_CACHE_HOME/kestrel-release, else ~/.cache/kestrel-release.

    Created on first use; one that cannot be (HOME=/proc, a read-only or foreign directory) is
    FilesystemError (exit 2) naming it and the variable that moves it, never a traceback later."""
    temporary = run_context.current().record.temporary_cache  # allow_temporary_cache's, for this run only
    if temporary is not None:
        return temporary
    path, variable = _configured()
    if path not in _ready:
        try:
            path.mkdir(parents=True, exist_ok=True)
            if not os.access(path, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "permission denied")
        except OSError as exc:
            raise _unusable(path, exc.strerror or str(exc), variable) from None
        _ready.add(path)
    return path


def allow_temporary_cache() -> None:
    """Commands that keep nothing (`version` printing one) run without a usable cache dir: then
    this process's cache is a private temp dir (and uv's too when its own is as unusable),
    removed at exit (or, after a SIGKILL, by the next owned_dir there)."""
    record = run_context.current().record
    if record.temporary_cache is not None:
        return
    try:
        cache_dir()
        return
    except FilesystemError:
        pass
    import atexit

    temporary = record.temporary_cache = owned_dir("cache")
    atexit.register(shutil.rmtree, temporary, ignore_errors=True)
    if not _uv_cache_usable():
        os.environ["UV_CACHE_DIR"] = str(temporary / "uv")  # inherited by every child (proc.child_env)


def root() -> Path:
    return cache_dir()


def project(project_dir: Path) -> Path:
    """The project's own state directory (created, private to the user)."""
    resolved = Path(project_dir).resolve()
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", resolved.name)[:40] or "root"
    path = root() / "projects" / f"{name}-{digest}"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def build_logs(project_dir: Path) -> Path:
    return project(project_dir) / "build-logs"


def sources(project_dir: Path) -> Path:
    """Where build makes each Python's clean copy of the project's sources (source_copy.py)."""
    return project(project_dir) / "sources"


def lock_path(project_dir: Path) -> Path:
    return project(project_dir) / "lock"


@contextlib.contextmanager
def session(kind: str) -> Iterator[Path]:
    """A 0700 directory for one sandbox run's files (its token), removed when the run ends; a
    killed run's is removed by the next session (owned_dir)."""
    base = root() / "sessions"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    with temp_dir(kind, base) as path:
        yield path


#: Inside every temp or session dir the tool makes: `<pid> <start time> <boot id>` of its owner.
OWNER = ".kestrel-owner"
# `kestrel-<kind>-<pid>-<random>` (hidden beside an output: `.kestrel-staging-<pid>-<random>`).
_OWNED = re.compile(r"^\.?kestrel-([a-z]+)-(\d+)-[A-Za-z0-9_]+$")


def owned_dir(kind: str, parent: Path | None = None, *, hidden: bool = False) -> Path:
    """Make a 0700 temp dir `[.]kestrel-<kind>-<pid>-*` in `parent` (default: the system temp dir)
    holding an OWNER marker, after collecting the dirs of that scheme whose owner is dead.

    Why: a process killed with SIGKILL runs no cleanup, so what it made (a wheel copy, a sandbox's
    htpasswd or password file) would stay forever; the next run that makes such a dir there
    removes it instead. The caller removes its own dir (shutil.rmtree) when done."""
    folder = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    collect_owned(folder)
    from kestrel_release.process import reaper

    dot = "." if hidden else ""
    path = Path(tempfile.mkdtemp(prefix=f"{dot}kestrel-{kind}-{os.getpid()}-", dir=folder))
    (path / OWNER).write_text(reaper.identity() + "\n", encoding="utf-8")
    return path


@contextlib.contextmanager
def temp_dir(kind: str, parent: Path | None = None, *, hidden: bool = False) -> Iterator[Path]:
    """owned_dir as a context manager: removed on exit."""
    path = owned_dir(kind, parent, hidden=hidden)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def collect_owned(folder: Path) -> list[Path]:
    """Remove the dirs of the owned_dir scheme in `folder` whose owner is dead; returns them.

    Only real directories of this user whose name fits the scheme and that hold the OWNER marker
    naming the same pid (or are empty: killed before the marker was written) are candidates, so
    a user's file of a similar name is never touched."""
    from kestrel_release.process import reaper

    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None:
            continue
        try:
            st = entry.lstat()
            if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                continue
            owner = (entry / OWNER).read_text(encoding="utf-8").strip() if (entry / OWNER).exists() else None
            if owner is None and any(entry.iterdir()):
                continue  # not ours: the scheme's dirs get their marker at once
        except OSError:
            continue
        if owner is not None and owner.split()[:1] not in ([match.group(2)], []):
            continue  # a marker naming another pid: not this scheme's
        if reaper.owner_alive(owner or match.group(2)):
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(entry)
            removed.append(entry)
    return removed


def _uv_cache_usable() -> bool:
    """Whether uv's own cache dir (UV_CACHE_DIR, else XDG_CACHE_HOME/uv, else ~/.cache/uv) can be made."""
    base = os.environ.get("UV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "uv"
    )
    try:
        Path(base).mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(base, os.W_OK | os.X_OK)
