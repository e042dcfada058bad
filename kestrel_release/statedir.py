"""Where the tool keeps its working files, so that none lands untracked in the user's repository.

Per project, `<cache>/projects/<dir name>-<hash of its path>/` (under $KESTREL_RELEASE_CACHE_DIR,
else $XDG_CACHE_HOME/kestrel-release, else ~/.cache/kestrel-release) holds the build logs and the
project lock. Secrets a sandbox prints a path to live in a private session directory there,
removed when the sandbox stops. The output directory gets a `.gitignore` of `*` (as venv and
pytest's cache do, outputs.install writes it) so `dist-all/` never shows in `git status`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

GITIGNORE = ".gitignore"
GITIGNORE_TEXT = "# written by kestrel-release: its output does not belong in git\n*\n"


def cache_dir() -> Path:
    """$KESTREL_RELEASE_CACHE_DIR, else $XDG_CACHE_HOME/kestrel-release, else ~/.cache/kestrel-release."""
    if os.environ.get("KESTREL_RELEASE_CACHE_DIR"):
        from kestrel_release import safepaths

        # The tool creates and replaces entries in it: never the home directory or a parent of it.
        return safepaths.check_target(
            Path(os.environ["KESTREL_RELEASE_CACHE_DIR"]), None, "cache directory", flag="KESTREL_RELEASE_CACHE_DIR="
        )
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kestrel-release"


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


def lock_path(project_dir: Path) -> Path:
    return project(project_dir) / "lock"


@contextlib.contextmanager
def session(kind: str) -> Iterator[Path]:
    """A 0700 directory for one sandbox run's files (its token), removed when the run ends."""
    base = root() / "sessions"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
