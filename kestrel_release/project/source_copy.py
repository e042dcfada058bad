"""A clean copy of a project's sources: the tree every build and every backend query starts from.

Why: a build backend works in the tree it is given. setuptools reuses its in-tree `build/` (a compiled
module whose version lives in a header, and a module moved out of the package, both kept shipping
from `build/lib.*` under a new version's wheel name), writes egg-info beside the sources, and two
Pythons building at once share its `build/bdist.*`. So each build gets its own copy of exactly what
a fresh clone holds, as the work tree has it now (pypa/build does the same from an sdist): git's
tracked files, plus the untracked files git does not ignore; never build outputs, egg-info or
virtual environments, which are not sources. The user's tree is only read: its own `build/` is
neither used nor touched, and `git status` stays as it was.

Versions from git (setuptools-scm, hatch-vcs, versioneer) still see the repository: the copy holds a
private one (adapters/git.shadow: the user's objects borrowed, same HEAD and tags, index of HEAD), so
`git describe --dirty` answers in the copy as in the user's tree. A project in a subdirectory keeps
its place under the copy's root, and the copy also holds the repository's other tracked files (a
setup.py reading `../README.md`, a monorepo's shared LICENSE or headers), as a fresh clone would.
Outside git, every file is copied except those same outputs.

`sources` is what the wheel cache keys on: the project's files as the copy holds them (so git-ignored
files and the tool's own output and rehearsal dirs never count), plus the tracked files directly in
the directories above it (`../README.md`, `../../LICENSE`), the ones a build reads above itself in
practice. Files elsewhere in the repository (a sibling package of a monorepo) are copied but not keyed,
so a change to a sibling does not rebuild every package; a build that reads one needs `--no-cache`
after it changes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from kestrel_release.adapters import git
from kestrel_release.errors import BuildError
from kestrel_release.files import statedir
from kestrel_release.ui import console

# Build outputs at the project's top (setuptools, scikit-build, pypa/build, the tool's default out dirs).
_TOP_OUTPUTS = frozenset({"build", "dist", "dist-all", "wheelhouse", "_skbuild", ".eggs"})
# Never sources, wherever they are: VCS data, caches, environments.
_ANYWHERE = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache"}
)


def _not_source(parts: Sequence[str], excluded: frozenset[str]) -> bool:
    """Whether a file (its path's parts, relative to the project) lies in an output rather than the
    sources: only its directories are judged (a top-level script named `build` is a source)."""
    dirs = parts[:-1]
    if dirs and dirs[0] in _TOP_OUTPUTS:
        return True
    return any(
        d in _ANYWHERE or d.endswith(".egg-info") or d.startswith(".kestrel-") or "/".join(dirs[: i + 1]) in excluded
        for i, d in enumerate(dirs)
    )


def _walk(root: Path, excluded: frozenset[str], under: tuple[str, ...] = ()) -> Iterator[str]:
    """Every file below `root` that is a source (relative POSIX paths); environments are skipped whole."""
    for here, dirs, files in os.walk(root):
        rel = Path(here).relative_to(root).parts
        if "pyvenv.cfg" in files and rel:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not _not_source((*under, *rel, d, ""), excluded))
        for name in sorted(files):
            if not _not_source((*under, *rel, name), excluded):
                yield "/".join((*rel, name))
        for name in dirs:  # symlinked directories are copied as links, not followed
            if (Path(here) / name).is_symlink():
                yield "/".join((*rel, name))
        dirs[:] = [d for d in dirs if not (Path(here) / d).is_symlink()]


def _files(project: Path, listing: git.SourceFiles | None, excluded: frozenset[str]) -> list[str]:
    if listing is None:
        return list(_walk(project, excluded))
    files = list(listing.tracked)  # a fresh clone has them, whatever their names
    venvs = {f[: -len("pyvenv.cfg")] for f in listing.untracked if f == "pyvenv.cfg" or f.endswith("/pyvenv.cfg")}
    for name in listing.untracked:
        if name.endswith("/"):  # a nested repository (not a submodule): its files, not its .git
            nested = name.rstrip("/")
            if not _not_source((*nested.split("/"), ""), excluded):
                files += [f"{nested}/{f}" for f in _walk(project / nested, excluded, tuple(nested.split("/")))]
        elif not _not_source(name.split("/"), excluded) and not any(name.startswith(v) for v in venvs if v):
            files.append(name)
    return files


def _include_files(project: Path, include: Sequence[str]) -> Iterator[str]:
    for name in include:
        src = project / name
        if src.is_dir():
            for here, _dirs, files in os.walk(src):
                rel = Path(here).relative_to(project).as_posix()
                yield from (f"{rel}/{f}" for f in sorted(files) if not f.endswith((".lock", ".tmp")))
        elif src.is_file():
            yield Path(name).as_posix()


def _ancestor_files(prefix: str, above: Sequence[str]) -> list[str]:
    """The tracked files (relative to the repository root) directly in a directory above the project."""
    dirs = prefix.rstrip("/").split("/")[:-1]
    ancestors = {"/".join(dirs[:i]) for i in range(len(dirs) + 1)}
    return [f for f in above if (f.rsplit("/", 1)[0] if "/" in f else "") in ancestors]


def sources(project: Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> dict[str, Path]:
    """The files the wheel cache keys on (name -> path; the name relative to the project, `../x` above
    it): what the clean copy holds of the project, hidden files left out as ever, plus the tracked files
    directly in the directories above it (the module docstring says why not the whole repository)."""
    project = project.resolve()
    excluded = frozenset(e.strip("/") for e in exclude if e)
    listing = git.source_files(project)
    names = [*_files(project, listing, excluded), *_include_files(project, include)]
    out = {n: project / n for n in sorted(set(names)) if not any(p.startswith(".") for p in n.split("/"))}
    if listing is not None and listing.prefix:
        root, up = project, "../" * listing.prefix.rstrip("/").count("/")
        for _part in listing.prefix.rstrip("/").split("/"):
            root = root.parent
        for f in _ancestor_files(listing.prefix, listing.above):
            if not f.rsplit("/", 1)[-1].startswith("."):
                out["../" + up + f] = root / f
    return out


def make(project: Path, dest: Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Path:
    """Fill the empty or missing `dest` with a clean copy of `project`'s sources; returns the project
    dir inside it. `include`: paths (relative to the project) copied whatever git says (what the
    precompile step wrote); `exclude`: paths never copied (the output dir)."""
    project = project.resolve()
    excluded = frozenset(e.strip("/") for e in exclude if e)
    listing = git.source_files(project)
    dest.mkdir(parents=True, exist_ok=True)
    if listing is not None:
        git.shadow(project, dest)
    target = dest / (listing.prefix if listing is not None else "")
    made: set[Path] = set()
    try:
        for name in _files(project, listing, excluded):
            _copy(project / name, target / name, made)
        if listing is not None and listing.above:
            root = project
            for _part in listing.prefix.rstrip("/").split("/"):
                root = root.parent
            for name in listing.above:
                _copy(root / name, dest / name, made)
        for name in include:
            src = project / name
            if src.is_dir():
                shutil.copytree(src, target / name, symlinks=True, dirs_exist_ok=True, ignore=_locks)
            elif src.is_file():
                _copy(src, target / name, made)
    except OSError as exc:
        raise BuildError(
            f"cannot copy the sources of {project} to a clean build dir ({dest}): {exc}",
            "check the file's permissions, or free disk space",
        ) from None
    return target


def _locks(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n.endswith((".lock", ".tmp"))]


def _copy(src: Path, dst: Path, made: set[Path]) -> None:
    if dst.parent not in made:
        dst.parent.mkdir(parents=True, exist_ok=True)
        made.add(dst.parent)
    if src.is_symlink():
        with contextlib.suppress(FileNotFoundError):
            dst.unlink()
        os.symlink(os.readlink(src), dst)
    elif src.is_file():
        shutil.copy2(src, dst)  # mtimes kept: a persistent CMake build dir stays incremental
    # anything else (a tracked file deleted in the work tree, an uninitialised submodule) is absent


@contextlib.contextmanager
def at(project: Path, dest: Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Iterator[Path]:
    """A clean copy at the fixed place `dest` (made afresh, so a persistent CMake build dir keyed by it
    stays valid), removed after a success; after a failure it stays until the next build, so the
    paths in the build log can be opened."""
    shutil.rmtree(dest, ignore_errors=True)
    target = make(project, dest, include=include, exclude=exclude)
    console.debug(f"building from a clean copy of the sources: {target}")
    yield target
    shutil.rmtree(dest, ignore_errors=True)


# A log line saying a file is missing, and the path-like words in it.
_MISSING = re.compile(r"no such file|not found|cannot find|can't open|cannot open|does not exist", re.IGNORECASE)
_QUOTED = re.compile(r"['\"`]([\w./+@-]+)['\"`]")
_PATHLIKE = re.compile(r"[\w.+@-]*/[\w./+@-]*\w|[\w+@-]+\.\w+")


def left_out(copy: Path, log_lines: Sequence[str], ignored: Sequence[str]) -> list[str]:
    """The git-ignored files (`ignored`, relative to the project) a failed build's log says are
    missing from the clean copy at `copy`: an sdist's `.gitignore` naming `lib/`, a generated header.
    A fresh clone lacks them too; naming them turns "No such file" about a file the user can see into
    the fix. A word with a `/` must be the file's path (relative, or absolute inside the copy); a bare
    name (a compiler's `#include "x.h"`) matches by file name. Build outputs are never suggested."""
    copy = copy.resolve()
    sources = [f for f in ignored if not _not_source(f.split("/"), frozenset())]
    by_name: dict[str, list[str]] = {}
    for f in sources:
        by_name.setdefault(f.rsplit("/", 1)[-1], []).append(f)
    found: list[str] = []
    for line in log_lines:
        if not _MISSING.search(line):
            continue
        for word in _PATHLIKE.findall(line) + _QUOTED.findall(line):
            path = Path(word)
            if path.is_absolute():
                if not path.is_relative_to(copy):
                    continue
                path = path.relative_to(copy)
            rel = path.as_posix().removeprefix("./")
            if "/" not in rel and rel in by_name:
                hits = by_name[rel]
            elif rel in sources:
                hits = [rel]
            else:  # a directory the build wants (a package dir, setuptools' egg_base), all of it ignored
                hits = [f"{rel.rstrip('/')}/"] if any(f.startswith(f"{rel.rstrip('/')}/") for f in sources) else []
            found += [f for f in hits if f not in found and not (copy / f).exists()]
    return found


def left_out_hint(files: Sequence[str]) -> str:
    shown = " ".join(files[:3]) + (f" (+{len(files) - 3} more)" if len(files) > 3 else "")
    return (
        f"{shown} {'is' if len(files) == 1 else 'are'} in your tree but not in the clean copy the build runs in "
        "(git ignores it, so a fresh clone lacks it too): track what the build needs "
        f"(git add -f {shown if len(files) <= 3 else files[0]}) and commit, then build again"
    )


@contextlib.contextmanager
def temporary(project: Path, *, exclude: Sequence[str] = ()) -> Iterator[Path]:
    """A clean copy in an owned temp dir of the tool's cache (a killed run's is collected), removed after."""
    with statedir.temp_dir("source", statedir.root() / "sources") as tmp:
        yield make(project, tmp / "copy", exclude=exclude)
