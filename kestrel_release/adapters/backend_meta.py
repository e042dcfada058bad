"""A project's name and version from its PEP 517 build backend, cached by the inputs.

Why: most CUDA extensions are setup.py projects with no [project] table (docs/real-packages.md
section 1); the standard way to read them is `prepare_metadata_for_build_wheel`, through
pypa/build. It runs the project's setup.py, so it runs in a child process
(_backend_meta_child) whose environment carries no credentials, and its answer is cached
under the tool's cache dir, keyed by a hash of every file the metadata can come from.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kestrel_release import fsutil, proc
from kestrel_release.adapters import toolchain
from kestrel_release.errors import BuildError

# Files the name and version are read from by setuptools, hatch, scikit-build-core, meson-python.
_INPUTS = ("pyproject.toml", "setup.py", "setup.cfg", "meson.build", "CMakeLists.txt", "PKG-INFO")
_VERSION_NAMES = {"__init__.py", "version.py", "_version.py", "__about__.py", "VERSION", "version.txt"}
_SKIP_DIRS = {".git", "build", "dist", "dist-all", ".venv", "venv", "node_modules", "__pycache__", ".tox"}
_MAX_DEPTH = 3
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Metadata:
    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None


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


def input_digest(project: Path, isolated: bool, extra: tuple[str, ...] = ()) -> str:
    """sha256 over the metadata's inputs (and the git commit: VCS versions come from it)."""
    from kestrel_release.adapters import git

    h = hashlib.sha256(f"{CACHE_FORMAT}\0{isolated}\0".encode())
    for path in [*(project / n for n in _INPUTS), *_version_inputs(project), *(project / e for e in extra)]:
        if path.is_file():
            h.update(str(path.relative_to(project)).encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    state = git.state(project)
    h.update(f"{state.commit}\0{state.dirty}".encode())
    return h.hexdigest()


def _cache_file(project: Path, isolated: bool, extra_inputs: tuple[str, ...]) -> Path:
    return toolchain.cache_dir() / "metadata" / f"{input_digest(project.resolve(), isolated, extra_inputs)}.json"


def cached(project: Path, *, isolated: bool = True, extra_inputs: tuple[str, ...] = ()) -> Metadata | None:
    """The cached answer for these exact inputs, or None.

    The key keeps the isolation mode (a host's setuptools may differ from an isolated env's), but
    an answer from the other mode is reused when this one has none: the same inputs give the same
    name and version, and a `--no-isolation` build checked its answer against the wheels it made,
    so an offline host need not reach an index to verify or publish them.
    """
    for mode in (isolated, not isolated):
        try:
            data = json.loads(_cache_file(project, mode, extra_inputs).read_text())
            fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
            return Metadata(**fields)
        except (OSError, ValueError, TypeError):
            continue
    return None


def metadata(
    project: Path,
    *,
    isolated: bool = True,
    env: dict[str, str] | None = None,
    python: Path | None = None,
    extra_inputs: tuple[str, ...] = (),
    cache_as_isolated: bool | None = None,
) -> Metadata:
    """The backend's metadata for `project`; BuildError (exit 4) with its last lines on failure.

    `python`: run the backend in that interpreter (a build env or the user's build Python)
    instead of a throwaway isolated env; `cache_as_isolated` keys the cache as the caller's
    isolation setting says (a reusable build env is isolation too).
    """
    project = project.resolve()
    key_isolated = isolated if cache_as_isolated is None else cache_as_isolated
    found = cached(project, isolated=key_isolated, extra_inputs=extra_inputs)
    if found is not None:
        return found
    cache = _cache_file(project, key_isolated, extra_inputs)
    meta = _ask_backend(project, isolated, env or {}, python)
    cache.parent.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write_text(
        cache,
        json.dumps(
            {
                "name": meta.name,
                "version": meta.version,
                "requires_dist": list(meta.requires_dist),
                "requires_python": meta.requires_python,
            }
        ),
    )
    return meta


def _ask_backend(project: Path, isolated: bool, env: dict[str, str], python: Path | None) -> Metadata:
    from kestrel_release.adapters._backend_meta_child import FAILED, MARKER

    argv = [
        sys.executable,
        "-m",
        "kestrel_release.adapters._backend_meta_child",
        str(project),
        "1" if isolated else "0",
        *([str(python)] if python else []),
    ]
    # The tool's bin dir first: the child's isolated env installs with the uv we ship.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = proc.run(
        argv,
        cwd=project,
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
