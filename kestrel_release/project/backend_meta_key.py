"""What the backend's name and version are computed from: the metadata cache's key, and why it changed.

The key is a dict of named inputs (its digest names the cache file): the isolation mode, every
file the metadata can be read from (backend config, version files, an in-tree backend), the
environment variables VCS version tools read, and what git says now: HEAD, the branch, every
tag (a tag made at HEAD turns 5.11.1.dev1 into 5.11.1 without any file changing) and the
tracked files with uncommitted changes (setuptools-scm's `+dirty` versions; a hand-edited
version in a C header). Each project's last key is kept beside the cache, so `-v` can say which
input changed when an answer is not reused.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from pathlib import Path

# Files the name and version are read from by setuptools, hatch, scikit-build-core, meson-python, versioneer.
_INPUTS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "meson.build",
    "meson.options",
    "meson_options.txt",
    "CMakeLists.txt",
    "PKG-INFO",
    "hatch.toml",
    "versioneer.py",
    ".git_archival.txt",
)
_VERSION_NAMES = {"__init__.py", "version.py", "_version.py", "__about__.py", "VERSION", "version.txt"}
_SKIP_DIRS = {".git", "build", "dist", "dist-all", ".venv", "venv", "node_modules", "__pycache__", ".tox"}
_MAX_DEPTH = 3
_BIG = 16 * 1024 * 1024  # a larger dirty file is keyed by size and mtime, not read
# Variables the VCS version tools read (pretend versions, overrides).
_ENV = re.compile(r"^(SETUPTOOLS_SCM_|PDM_BUILD_SCM_|POETRY_DYNAMIC_VERSIONING_|HATCH_VCS_|VERSIONEER_)")
CACHE_FORMAT = 2


def _version_inputs(project: Path) -> list[Path]:
    """__init__.py / version.py files near the top of the tree (where setup.py reads versions)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(project):
        depth = len(Path(root).relative_to(project).parts)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_DIRS and not d.startswith(".") and not d.endswith(".egg-info") and depth < _MAX_DEPTH
        )
        found += [Path(root) / f for f in sorted(files) if f in _VERSION_NAMES]
    return found


def _backend_path_files(project: Path) -> list[Path]:
    """An in-tree backend's modules ([build-system] backend-path, PyYAML's): they compute the metadata."""
    from kestrel_release._compat import tomllib

    try:
        system = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8")).get("build-system", {})
        paths = [str(p) for p in system.get("backend-path", [])] if isinstance(system, dict) else []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, TypeError):
        return []
    out: list[Path] = []
    for rel in paths:
        where = (project / rel).resolve()
        if where.is_relative_to(project) and where.is_dir():  # its modules and packages (backend-path may be ".")
            out += sorted(where.glob("*.py"))
            out += sorted(
                p for p in where.glob("*/*.py") if p.parent.name not in _SKIP_DIRS and not p.parent.name.startswith(".")
            )[:200]
    return out


def _digest_file(path: Path) -> str:
    try:
        st = path.stat()
        if st.st_size > _BIG:
            return f"size {st.st_size} mtime {st.st_mtime_ns}"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def inputs(project: Path, isolated: bool, extra: tuple[str, ...] = (), env: dict[str, str] | None = None) -> dict:
    """The named inputs of the backend's answer for `project` (resolved), as a JSON-able dict."""
    from kestrel_release.adapters import git

    key: dict = {"format": CACHE_FORMAT, "isolated": isolated}
    files = [*(project / n for n in _INPUTS), *_version_inputs(project), *_backend_path_files(project)]
    for path in [*files, *(project / e for e in extra)]:
        if path.is_file():
            key[f"file {path.relative_to(project).as_posix()}"] = _digest_file(path)
    merged = {**{k: v for k, v in os.environ.items() if _ENV.match(k)}, **(env or {})}
    for name in sorted(merged):
        key[f"env {name}"] = hashlib.sha256(merged[name].encode()).hexdigest()[:16]  # values may be secrets
    state = git.version_state(project)
    if state is not None:
        key["git HEAD"] = state.commit
        key["git branch"] = state.branch
        key["git tags"] = list(state.tags)
        key["git dirty"] = {rel: _digest_file(state.root / rel) for rel in state.dirty}
        if state.dirty:  # setuptools-scm's dirty version carries the day: +g<sha>.d<YYYYMMDD>
            key["git dirty day"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d")
    return key


def digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def describe(key: dict) -> str:
    """The key in a few words, for `-v` when a cached answer is used."""
    parts = [f"{sum(k.startswith('file ') for k in key)} input file(s) unchanged"]
    if "git HEAD" in key:
        head = (key["git HEAD"] or "no commit")[:12]
        at_head = [t.split(" ")[0] for t in key["git tags"] if key["git HEAD"] and t.endswith(" " + key["git HEAD"])]
        parts.append(f"HEAD {head}")
        parts.append(f"tags at HEAD: {', '.join(at_head)}" if at_head else "no tag at HEAD")
        parts.append(f"{len(key['git dirty'])} dirty file(s)" if key["git dirty"] else "clean tree")
    return ", ".join(parts)


def changes(old: dict | None, new: dict) -> list[str]:
    """What differs between the key of the last answer for this project and now, in words."""
    if not old:
        return ["no earlier answer for this project"]
    out: list[str] = []
    for name in sorted(set(old) | set(new), key=lambda n: (not n.startswith("git"), n)):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if name == "git tags":
            added = sorted({t.split(" ")[0] for t in after or []} - {t.split(" ")[0] for t in before or []})
            gone = sorted({t.split(" ")[0] for t in before or []} - {t.split(" ")[0] for t in after or []})
            moved = "" if added or gone else "a tag moved"
            out.append(
                "git tags changed: " + "; ".join(filter(None, [_list("new", added), _list("gone", gone), moved]))
            )
        elif name == "git HEAD":
            out.append(f"HEAD moved: {(before or 'none')[:12]} -> {(after or 'none')[:12]}")
        elif name == "git branch":
            out.append(f"branch changed: {before or 'none'} -> {after or 'none'}")
        elif name == "git dirty":
            out.append("uncommitted changes differ (" + (", ".join(sorted(after or {})[:3]) or "now clean") + ")")
        elif name == "git dirty day":
            if before and after:  # else the dirty files above say it
                out.append("a new day with uncommitted changes (setuptools-scm's dirty versions carry the date)")
        elif name.startswith("file "):
            what = "appeared" if before is None else "is gone" if after is None else "changed"
            out.append(f"{name[5:]} {what}")
        elif name.startswith("env "):
            out.append(f"${name[4:]} {'is set' if before is None else 'is unset' if after is None else 'changed'}")
        elif name == "isolated":
            out.append(f"build isolation is {'on' if after else 'off'} now")
        else:
            out.append(f"{name} changed (another kestrel-release version)")
    return out or ["the inputs are the same, but the cached answer is missing or unreadable"]


def _list(word: str, names: list[str]) -> str:
    return f"{word} {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}" if names else ""
