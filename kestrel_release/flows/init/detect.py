"""What `init` reads from a project: backend, name/version sources, native code, CUDA, abi3.

Reading only: files are parsed (TOML, setup.cfg, setup.py as an AST, CMakeLists.txt as
text) and never executed, so a setup.py that imports torch can be inspected on a machine
without torch. Each finding keeps a short "why" that `init` prints, so a wrong guess is
easy to spot and fix in the written table.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kestrel_release.flows.init import headers, native, version_spots
from kestrel_release.flows.init.detected import Detected as Detected
from kestrel_release.flows.init.version_sources import (
    name_version,
    norm,
    read,
    setup_kw,
    table,
)
from kestrel_release.project import package_cuda

BACKENDS = {  # build-backend module -> the name init reports
    "setuptools.build_meta": "setuptools",
    "setuptools.build_meta:__legacy__": "setuptools",
    "scikit_build_core.build": "scikit-build-core",
    "hatchling.build": "hatchling",
    "mesonpy": "meson-python",
    "flit_core.buildapi": "flit",
    "poetry.core.masonry.api": "poetry",
    "pdm.backend": "pdm",
    "maturin": "maturin",
}
# Directories that are never the importable package, and never worth walking.
# (build/ and dist/ are not here: setuptools' output dirs have no __init__.py, and pypa/build's
# own package is src/build.)
NOT_PACKAGES = {
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "benchmark",
    "scripts",
    "tools",
    "csrc",
    "include",
    "third_party",
    "setup",
}
SKIP_WALK = {
    ".git",
    ".hg",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "dist-all",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".kestrel-build-logs",
}
_LIMITED_HEX = re.compile(r"Py_LIMITED_API\s*=\s*(?:0x)?03([0-9A-Fa-f]{2})")
_LIMITED_TAG = re.compile(r"""py_limited_api['"]?\s*[:=]\s*['"](cp3\d+)['"]""")
MAX_WALK = 20000  # files; a huge monorepo is not scanned whole


def detect(project_dir: Path, pyproject: dict[str, Any]) -> Detected:
    d = Detected(project_dir=project_dir)
    tool = raw if isinstance(raw := pyproject.get("tool"), dict) else {}
    d.configured = "kestrel-release" in tool
    setup_py = read(project_dir / "setup.py")
    cfg = _setup_cfg(project_dir / "setup.cfg")
    _backend(d, pyproject, bool(setup_py))
    d.packages = _packages(project_dir, pyproject, setup_py)
    name_version(d, pyproject, tool, setup_py, cfg)
    files = list(_walk(project_dir))
    version_spots.record(d, files, setup_py)
    native.find(d, setup_py, pyproject, files)
    if d.cuda:
        d.compiled = package_cuda.read(project_dir, {})  # init writes build.env itself
    project = raw if isinstance(raw := pyproject.get("project"), dict) else {}
    declared = project.get("requires-python")
    d.requires_python = (
        (declared if isinstance(declared, str) else None)
        or setup_kw(setup_py, "python_requires")
        or cfg.get("options", {}).get("python_requires")
    )
    _abi3(d, tool, setup_py, cfg, native.cargo_abi3(project_dir, pyproject))
    _layout(d)
    headers.find(d, setup_py, pyproject, cfg, files)
    return d


def _setup_cfg(path: Path) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(read(path))
    except configparser.Error:
        return {}
    return {s: dict(parser[s]) for s in parser.sections()}


def _backend(d: Detected, pyproject: dict[str, Any], has_setup_py: bool) -> None:
    bs = raw if isinstance(raw := pyproject.get("build-system"), dict) else {}
    requires = bs.get("requires")
    d.build_requires = [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []
    spec = bs.get("build-backend")
    if not isinstance(spec, str):
        # PEP 517: no build-backend means setuptools' legacy backend.
        spec = "setuptools.build_meta:__legacy__" if has_setup_py or not bs else ""
    d.backend_spec = spec
    d.backend = BACKENDS.get(spec) or ("setuptools" if spec.startswith("setuptools") else "generic")
    if d.backend == "generic" and spec:
        d.wraps_setuptools = _in_tree_setuptools(d.project_dir, bs, spec)
    d.torch = any(norm(r) == "torch" for r in d.build_requires)


def _in_tree_setuptools(root: Path, bs: dict[str, Any], spec: str) -> bool:
    """An in-tree backend (backend-path) that hands the build to setuptools, as PyYAML's _pyyaml_pep517
    does: it builds in-tree like setuptools (build/, *.egg-info)."""
    paths = bs.get("backend-path")
    module = spec.split(":")[0].replace(".", "/")
    for base in paths if isinstance(paths, list) else []:
        if isinstance(base, str) and ".." not in base:
            text = read(root / base / f"{module}.py") or read(root / base / module / "__init__.py")
            if re.search(r"^\s*(?:from|import)\s+setuptools\b", text, re.MULTILINE):
                return True
    return False


def _packages(root: Path, pyproject: dict[str, Any], setup_py: str = "") -> dict[str, str]:
    """Top-level import packages: directories with __init__.py at the root, in src/, python/ or lib/
    (PyYAML, contourpy), or in the directory the backend is told to look in (package_dir={"": "x"})."""
    found: dict[str, str] = {}
    for base in [root] + [root / rel for rel in ("src", "python", "lib", *_package_roots(pyproject, setup_py))]:
        if not base.is_dir() or (base != root and (base / "__init__.py").is_file()):
            continue  # a lib/ with __init__.py is itself a package, found at the root
        for child in sorted(base.iterdir()):
            if (
                child.is_dir()
                and child.name.isidentifier()
                and child.name not in NOT_PACKAGES
                and (child / "__init__.py").is_file()
            ):
                found.setdefault(child.name, child.relative_to(root).as_posix())
    return found


def _package_roots(pyproject: dict[str, Any], setup_py: str) -> list[str]:
    """setuptools' package root: package_dir={"": "x"} in setup.py, package-dir or packages.find.where."""
    roots = re.findall(r"""package_dir\s*=\s*\{\s*['"]{2}\s*:\s*['"]([\w./-]+)['"]""", setup_py)
    st = table(pyproject, "tool", "setuptools")
    mapped = st.get("package-dir")
    if isinstance(mapped, dict) and isinstance(mapped.get(""), str):
        roots.append(mapped[""])
    where = table(st, "packages", "find").get("where")
    roots += [w for w in where if isinstance(w, str)] if isinstance(where, list) else []
    return [r.strip("/") for r in roots if r.strip("/") and ".." not in r]


def _walk(root: Path) -> Iterator[Path]:
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            n
            for n in dirnames
            if n not in SKIP_WALK and not n.startswith(".") and not n.endswith((".egg-info", ".rehearsal"))
        ]
        for name in filenames:
            count += 1
            if count > MAX_WALK:
                return
            yield Path(dirpath) / name


def _abi3(
    d: Detected, tool: dict[str, Any], setup_py: str, cfg: dict[str, dict[str, str]], cargo: str | None = None
) -> None:
    """The abi3 floor ("cp39") or "py3", from whichever place the backend reads it."""
    tags = [m.group(1) for m in _LIMITED_TAG.finditer(setup_py)] + ([cargo] if cargo else [])
    bdist = {**cfg.get("bdist_wheel", {}), **table(tool, "distutils", "bdist_wheel")}
    tags += [str(v) for k, v in bdist.items() if k.replace("-", "_") == "py_limited_api" and str(v).startswith("cp3")]
    api = table(tool, "scikit-build", "wheel").get("py-api") or table(tool, "scikit-build").get("wheel.py-api")
    if isinstance(api, str) and (api.startswith("cp3") or api == "py3"):
        tags.append(api)
    limited = re.search(r"""py_limited_api['"]?\s*[:=]\s*True""", setup_py) or table(tool, "meson-python").get(
        "limited-api"
    )
    if not tags and limited:
        # The floor is the Py_LIMITED_API value the sources are compiled with, else requires-python's;
        # "abi3" alone when setup.py computes it (the wheel's tag will tell).
        floor = _floor_minor(d.requires_python)
        tags = [f"cp3{int(h, 16)}" for h in _LIMITED_HEX.findall(setup_py)] or [f"cp3{floor}" if floor else "abi3"]
    if tags:
        cp = [t for t in tags if t.startswith("cp3")]
        d.abi3 = "py3" if "py3" in tags else min(cp, key=lambda t: int(t[3:])) if cp else "abi3"


def _floor_minor(spec: str | None) -> str | None:
    m = re.search(r">=\s*3\.(\d+)", spec or "")
    return m.group(1) if m else None


def _layout(d: Detected) -> None:
    root = d.project_dir
    d.top_dirs = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name in NOT_PACKAGES - {"setup"})
    for rel in d.packages.values():
        pkg = root / rel
        d.shipped_tests += [f"{rel}/{t}" for t in ("tests", "test") if (pkg / t).is_dir()]
