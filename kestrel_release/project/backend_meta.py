"""A project's name and version from its PEP 517 build backend, cached by the inputs.

Why: most CUDA extensions are setup.py projects with no [project] table (docs/real-packages.md
section 1); the standard way to read them is `prepare_metadata_for_build_wheel`, through
pypa/build. It runs the project's setup.py, so it runs in a child process
(_backend_meta_child) whose environment carries no credentials, and its answer is cached
under the tool's cache dir, keyed by everything the answer can come from: the files, the
version tools' environment and what git says now (backend_meta_key).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kestrel_release.adapters import toolchain
from kestrel_release.errors import BuildError
from kestrel_release.files import fsutil
from kestrel_release.process import proc
from kestrel_release.project import backend_meta_key
from kestrel_release.ui import console


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None


@dataclass(frozen=True)
class Lookup:
    """The inputs of the backend's answer now, where that answer is cached, and the answer if it is."""

    project: Path
    key: dict
    path: Path
    found: Metadata | None


def _cache_root() -> Path:
    return toolchain.cache_dir() / "metadata"


def _record(project: Path) -> Path:
    """Where the key of this project's last answer is kept (for -v's "why not reused")."""
    return _cache_root() / "projects" / f"{hashlib.sha256(str(project).encode()).hexdigest()[:16]}.json"


def _read(path: Path) -> Metadata | None:
    try:
        data = json.loads(path.read_text())
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data["answer"].items()}
        return Metadata(**fields)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def lookup(
    project: Path, *, isolated: bool = True, extra_inputs: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Lookup:
    """The cached answer for exactly today's inputs, if any; -v says which was used, or what changed.

    The key keeps the isolation mode (a host's setuptools may differ from an isolated env's), but
    an answer from the other mode is reused when this one has none: the same inputs give the same
    name and version, and a `--no-isolation` build checked its answer against the wheels it made,
    so an offline host need not reach an index to verify or publish them.
    """
    project = project.resolve()
    key = backend_meta_key.inputs(project, isolated, extra_inputs, env)
    path = _cache_root() / f"{backend_meta_key.digest(key)}.json"
    for mode in (isolated, not isolated):
        where = (
            path if mode == isolated else _cache_root() / f"{backend_meta_key.digest({**key, 'isolated': mode})}.json"
        )
        found = _read(where)
        if found is not None:
            other = "" if mode == isolated else f" (asked with isolation {'on' if mode else 'off'})"
            console.debug(
                f"metadata cache: using {found.name} {found.version} from {where}{other}: "
                f"{backend_meta_key.describe(key)}"
            )
            return Lookup(project, key, path, found)
    try:
        last = json.loads(_record(project).read_text()).get("key")
    except (OSError, ValueError, AttributeError):
        last = None
    why = "; ".join(backend_meta_key.changes(last if isinstance(last, dict) else None, key))
    console.debug(f"metadata cache: no answer for today's inputs ({why}); asking the build backend")
    return Lookup(project, key, path, None)


def cached(
    project: Path, *, isolated: bool = True, extra_inputs: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Metadata | None:
    """The cached answer for these exact inputs, or None (see lookup)."""
    return lookup(project, isolated=isolated, extra_inputs=extra_inputs, env=env).found


def metadata(
    project: Path,
    *,
    isolated: bool = True,
    env: dict[str, str] | None = None,
    python: Path | None = None,
    extra_inputs: tuple[str, ...] = (),
    cache_as_isolated: bool | None = None,
    looked_up: Lookup | None = None,
) -> Metadata:
    """The backend's metadata for `project`; BuildError (exit 4) with its last lines on failure.

    `python`: run the backend in that interpreter (a build env or the user's build Python)
    instead of a throwaway isolated env; `cache_as_isolated` keys the cache as the caller's
    isolation setting says (a reusable build env is isolation too). `looked_up`: the caller's
    lookup (its inputs were read before the backend ran: the answer is stored under them).
    """
    project = project.resolve()
    key_isolated = isolated if cache_as_isolated is None else cache_as_isolated
    found = looked_up or lookup(project, isolated=key_isolated, extra_inputs=extra_inputs, env=env)
    if found.found is not None:
        return found.found
    meta = _ask_backend(project, isolated, env or {}, python)
    answer = {
        "name": meta.name,
        "version": meta.version,
        "requires_dist": list(meta.requires_dist),
        "requires_python": meta.requires_python,
    }
    try:  # a cache that cannot be written costs the next run a question, nothing else
        found.path.parent.mkdir(parents=True, exist_ok=True)
        fsutil.atomic_write_text(found.path, json.dumps({"answer": answer, "key": found.key}, indent=1))
        _record(project).parent.mkdir(parents=True, exist_ok=True)
        fsutil.atomic_write_text(
            _record(project), json.dumps({"project": str(project), "key": found.key, "answer": str(found.path)})
        )
    except OSError as exc:
        console.debug(f"metadata cache: not written ({exc})")
    return meta


def _ask_backend(project: Path, isolated: bool, env: dict[str, str], python: Path | None) -> Metadata:
    from kestrel_release.project import source_copy
    from kestrel_release.project._backend_meta_child import FAILED, MARKER

    # The tool's bin dir first: the child's isolated env installs with the uv we ship. Before it, the
    # build Python's own bin (a build env's), as an activated env has it: meson-python runs `meson`
    # and `ninja` from PATH, which a build env installs there.
    bins = [*([str(Path(python).parent)] if python else []), str(Path(sys.executable).parent)]
    path = os.pathsep.join([*bins, env.get("PATH") or os.environ.get("PATH", "")])
    # In a clean copy: the backend writes into the tree it runs in (setuptools' egg-info, a whole
    # build where it has no metadata hook), and the user's leftovers must not shape its answer.
    with source_copy.temporary(project) as src:
        argv = [
            sys.executable,
            "-m",
            "kestrel_release.project._backend_meta_child",
            str(src),
            "1" if isolated else "0",
            *([str(python)] if python else []),
        ]
        result = proc.run(
            argv,
            cwd=src,
            env={**env, "PATH": path, "PYTHONDONTWRITEBYTECODE": "1"},
            check=False,
            error=BuildError,
            timeout=900,
        )
    line = next((ln for ln in reversed(result.output.splitlines()) if ln.startswith(MARKER)), None)
    if result.returncode != 0 or line is None:
        lines = result.output.splitlines()
        where = next((ln[len(FAILED) :] for ln in reversed(lines) if ln.startswith(FAILED)), "")
        # The backend's last words (the exception), without tracebacks' ^^^ markers or our own lines.
        said = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(FAILED) and ln.strip(" ^~")]
        tail = " | ".join(said[-3:]) or "the child printed nothing (run with -v for its log)"
        raise BuildError(
            f"the build backend could not report {project.name}'s metadata"
            f"{' (' + _short(where) + ')' if where else ''}: {tail}",
            _hint(where, isolated),
        )
    data = json.loads(line[len(MARKER) :])
    return Metadata(data["name"], data["version"], tuple(data["requires_dist"]), data["requires_python"])


def _short(where: str) -> str:
    """A failed command's argv cut to its first words: its output says the rest."""
    return where if len(where) <= 160 else where[:157] + "..."


def _hint(where: str, isolated: bool) -> str:
    """Fit the hint to the cause: an installer that could not get the build requirements is not a broken project."""
    if isolated and where.startswith("CalledProcessError") and "install" in where:
        return (
            "the build requirements could not be installed (an offline host, or a missing package): "
            "install them in the build Python and set `build.isolation = false` in [tool.kestrel-release] "
            "(or KESTREL_RELEASE_BUILD_ISOLATION=false; build takes --no-isolation), or make them "
            "available to the installer (UV_INDEX_URL / UV_FIND_LINKS / PIP_FIND_LINKS)"
        )
    return "fix the project so that `python -m build --wheel` works, then run again"
