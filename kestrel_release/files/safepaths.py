"""Where the tool may write: the one check every writer goes through, and leftover collection.

Why one place: an output directory the tool manages (build output, rehearsal indexes, logs,
caches, a sandbox's packages) that resolves to the project, its git work tree, a parent of
either, or the home directory would put the user's own files in the tool's hands. Such a path
is refused (exit 2) before anything is written.

Leftovers: every temp path the tool creates carries `kestrel-<pid>` in its name, so a later run
can tell its own debris (whose writer is dead) from a user's file and remove only that.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from kestrel_release.errors import UsageError

#: The marker in every temp name the tool creates: `...kestrel-<pid>...`.
TEMP_TAG = "kestrel-{pid}"
_LEFTOVER = re.compile(r"^\.(?:kestrel-staging-|.+\.kestrel-)(\d+)(?:[.-].*)?$")


def git_root(start: Path) -> Path | None:
    """The git work tree holding `start` (a `.git` dir or file), found without running git."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _protected(project_dir: Path | None) -> list[tuple[Path, str]]:
    guarded: list[tuple[Path, str]] = []
    if project_dir is not None:
        project = Path(project_dir).resolve()
        guarded.append((project, "the project directory"))
        root = git_root(project)
        if root is not None:
            guarded.append((root, "the project's git work tree"))
    with contextlib.suppress(RuntimeError, KeyError):  # no resolvable home: nothing to guard there
        guarded.append((Path.home().resolve(), "the home directory"))
    return guarded


def check_target(path: Path, project_dir: Path | None, what: str, flag: str = "--out") -> Path:
    """`path` resolved (symlinks followed), or UsageError when it would hold the user's own files.

    Refused: the project directory, its git work tree root, a parent of either, the home
    directory (or a parent of it). `what` names the place in the message ("output directory").
    """
    target = Path(path).expanduser().resolve()
    guarded_places = _protected(project_dir)
    # The closest match names the place best: "is the git work tree" over "is a parent of the project".
    hits = [(g, n) for g, n in guarded_places if target == g] + [
        (g, n) for g, n in guarded_places if target != g and g.is_relative_to(target)
    ]
    if hits:
        guarded, name = hits[0]
        relation = "is" if target == guarded else "is a parent of"
        raise UsageError(
            f"refusing to use {target} as the {what}: it {relation} {name} ({guarded})",
            f"choose a dedicated directory (e.g. {flag} dist-all); nothing was changed",
        )
    return target


def temp_prefix(name: str) -> str:
    """Prefix of a temp file beside `name`: hidden, tagged with this process's pid."""
    return f".{name}.{TEMP_TAG.format(pid=os.getpid())}."


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def collect_leftovers(*folders: Path, swapped: str | None = None) -> list[Path]:
    """Remove the tool's own temp debris in `folders` whose writing process is dead.

    Only names of the tool's scheme (`.kestrel-staging-<pid>-*`, `.<name>.kestrel-<pid>.*`,
    and `.<swapped>.old-<pid>` left by older versions' directory swap of the output `swapped`)
    are candidates; anything else is never touched.
    """
    old = re.compile(rf"^\.{re.escape(swapped)}\.old-(\d+)$") if swapped else None
    removed = []
    for folder in folders:
        try:
            entries = list(Path(folder).iterdir())
        except OSError:
            continue
        for entry in entries:
            match = _LEFTOVER.match(entry.name) or (old.match(entry.name) if old else None)
            if match is None or _alive(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
                removed.append(entry)
    return removed
