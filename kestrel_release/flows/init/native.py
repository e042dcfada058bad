"""Whether a project compiles native code, read from wherever its backend declares it.

A wrong "no" is costly: init then writes `abi = "py3"`, build makes one wheel for one Python and
`ci init` a one-Python matrix (contourpy and PyWavelets declare their extensions in sub-`meson.build`
files, not in the top one). Each backend's own declaration is read, never executed:
- meson-python: `extension_module(` in any meson.build;
- CMake (scikit-build-core, a setup.py driving cmake): a root CMakeLists.txt, or a library or module
  target (`add_library`, `python_add_library`, `pybind11_add_module`, `nanobind_add_module`, ...) in any
  CMakeLists.txt or *.cmake;
- setuptools: `ext_modules`/`Extension(`/`cffi_modules`/`rust_extensions` in setup.py (or a pdm/poetry
  build script), `[tool.setuptools] ext-modules`;
- Rust: Cargo.toml with maturin or setuptools-rust; hatch build hooks that compile (cython, mypyc, ...);
- Cython `.pyx` and C/C++ sources with a build requirement that compiles them (Cython, pybind11, cffi).
Tests, docs, examples and benchmarks are not the package: their build files are not read.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from kestrel_release.flows.init.detected import Detected
from kestrel_release.flows.init.version_sources import norm, read, table
from kestrel_release.project import cuda_gate

_NOT_BUILT = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "benchmark"}
_CMAKE_TARGET = re.compile(
    r"^[ \t]*(add_library|python3?_add_library|pybind11_add_module|nanobind_add_module|cuda_add_library"
    r"|add_cython_target|python_extension_module)[ \t]*\(",
    re.IGNORECASE | re.MULTILINE,  # CMake commands are case-insensitive
)
_CMAKE_CUDA = re.compile(
    r"LANGUAGES[^)]*\bCUDA\b|enable_language\s*\(\s*CUDA|find_package\s*\(\s*CUDAToolkit|project\s*\([^)]*\bCUDA\b",
    re.IGNORECASE,
)
_SETUP_EXT = re.compile(
    r"\b(CUDAExtension|CppExtension|Pybind11Extension|Extension|RustExtension)\s*\(|ext_modules|cffi_modules"
    r"|rust_extensions|mypycify\s*\("
)
_COMPILING_REQUIRES = {"cython", "pybind11", "nanobind", "cffi", "setuptools-rust", "mypy", "scikit-build"}
_COMPILING_HOOKS = ("cython", "mypyc", "scikit-build", "cmake", "cffi", "rust", "meson", "pybind", "nanobind")
SOURCES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".pyx", ".rs")


def find(d: Detected, setup_py: str, pyproject: dict[str, Any], files: list[Path]) -> None:
    """Fill d.native (why there is native code), d.cuda, d.cmake and d.cmake_sets_arch."""
    root = d.project_dir
    built = [p for p in files if not _NOT_BUILT.intersection(p.relative_to(root).parts[:-1])]
    exts: dict[str, int] = {}
    for path in files:
        exts[path.suffix] = exts.get(path.suffix, 0) + 1
    if exts.get(".cu") or exts.get(".cuh"):
        d.cuda.append(f"{exts.get('.cu', 0)} .cu / {exts.get('.cuh', 0)} .cuh files")
    if "CUDAExtension" in setup_py:
        d.cuda.append("setup.py uses torch CUDAExtension")
        d.cuda_gate = cuda_gate.read(setup_py)
    if "torch.utils.cpp_extension" in setup_py:
        d.torch = True
    imports_torch = re.search(r"^\s*(?:import torch\b|from torch[ .])", setup_py, re.MULTILINE)
    d.torch_unlisted = bool(imports_torch) and not any(norm(r) == "torch" for r in d.build_requires)
    if _SETUP_EXT.search(setup_py):
        d.native.append("setup.py builds extension modules")
        d.ext_modules = extension_names(setup_py)
    if table(pyproject, "tool", "setuptools").get("ext-modules"):
        d.native.append("pyproject.toml [tool.setuptools] ext-modules")
    for script in _build_scripts(pyproject):
        if _SETUP_EXT.search(read(root / script)):
            d.native.append(f"{script} builds extension modules")
    if _cmake_builds(d, setup_py):
        _cmake(d, [p for p in built if p.name == "CMakeLists.txt" or p.suffix == ".cmake"])
    _meson(d, [p for p in built if p.name == "meson.build"])
    _rust(d, setup_py, pyproject, [p for p in built if p.name == "Cargo.toml"])
    _hooks(d, pyproject)
    sources = sum(exts.get(s, 0) for s in SOURCES)
    compiling = sorted({norm(r) for r in d.build_requires} & _COMPILING_REQUIRES)
    if sources and not d.native:
        if d.backend in ("setuptools", "maturin", "generic"):
            d.native.append(f"{sources} C/C++/CUDA/Cython/Rust source files")
        elif compiling:
            d.native.append(f"{sources} C/C++/Cython source files; the build requires {', '.join(compiling)}")


def _cmake_builds(d: Detected, setup_py: str) -> bool:
    """CMake runs in this build: a root CMakeLists.txt, a CMake backend, or a setup.py driving cmake.
    (ujson vendors double-conversion with its CMakeLists.txt; setup.py compiles the sources itself. A root
    CMakeLists.txt beside a setup.py that never runs cmake builds something else: torch-spline-conv's
    installs its C++ library for libtorch users, while setup.py compiles the wheel's extensions.)"""
    setup_alone = d.backend == "setuptools" and bool(setup_py.strip())  # "cmake" not in it: tested below
    return (
        ((d.project_dir / "CMakeLists.txt").is_file() and not setup_alone)
        or d.backend == "scikit-build-core"
        or "cmake" in setup_py.lower()
        or any(norm(r) in ("cmake", "py-build-cmake", "scikit-build") for r in d.build_requires)
    )


def _cmake(d: Detected, paths: list[Path]) -> None:
    root_file = d.project_dir / "CMakeLists.txt"
    texts = {p: read(p) for p in paths}
    d.cmake = root_file in texts
    if d.cmake:
        d.native.append("CMakeLists.txt")
    targets = [p for p, text in texts.items() if _CMAKE_TARGET.search(text)]
    if targets and not d.cmake:
        d.native.append(f"{_rel(d, targets[0])} declares a library or module target")
    if any(_CMAKE_CUDA.search(text) for text in texts.values()):
        d.cuda.append("CMake enables the CUDA language")
    d.cmake = d.cmake or bool(targets)
    d.cmake_sets_arch = any("CUDA_ARCHITECTURES" in text for text in texts.values())


def _meson(d: Detected, paths: list[Path]) -> None:
    texts = {p: read(p) for p in sorted(paths, key=lambda p: (len(p.parts), p.as_posix()))}
    modules = [p for p, text in texts.items() if re.search(r"\bextension_module\s*\(", text)]
    if modules:
        names = ", ".join(_rel(d, p) for p in modules[:3]) + (
            f" (+{len(modules) - 3} more)" if len(modules) > 3 else ""
        )
        d.native.append(f"{names} {'builds' if len(modules) == 1 else 'build'} extension modules")
    if any(re.search(r"""['"]cuda['"]""", text) for text in texts.values()):
        d.cuda.append("meson.build enables CUDA")


def _rust(d: Detected, setup_py: str, pyproject: dict[str, Any], cargo: list[Path]) -> None:
    if not cargo:
        return
    tool = table(pyproject, "tool")
    if d.backend == "maturin":
        d.native.append("Cargo.toml (maturin)")
    elif (
        "setuptools-rust" in {norm(r) for r in d.build_requires}
        or "rust_extensions" in setup_py
        or ("setuptools-rust" in tool)
    ):
        d.native.append("Cargo.toml (setuptools-rust)")


def _hooks(d: Detected, pyproject: dict[str, Any]) -> None:
    hatch = table(pyproject, "tool", "hatch", "build")
    hooks = {**table(hatch, "hooks"), **table(hatch, "targets", "wheel", "hooks")}
    compiling = [name for name in hooks if any(word in name.lower() for word in _COMPILING_HOOKS)]
    if compiling:
        d.native.append(f"hatch build hook {', '.join(compiling)}")


def _build_scripts(pyproject: dict[str, Any]) -> list[str]:
    """A pdm or poetry build script: it runs setuptools' build_ext like a setup.py."""
    tool = table(pyproject, "tool")
    pdm = table(tool, "pdm", "build")
    poetry = table(tool, "poetry")
    named = [
        pdm.get("setup-script") or ("build.py" if pdm.get("run-setuptools") else None),
        table(poetry, "build").get("script"),
        poetry.get("build") if isinstance(poetry.get("build"), str) else None,
    ]
    return [s for s in named if isinstance(s, str) and s and ".." not in s]


def _rel(d: Detected, path: Path) -> str:
    return path.relative_to(d.project_dir).as_posix()


def cargo_abi3(project_dir: Path, pyproject: dict[str, Any]) -> str | None:
    """pyo3's `abi3-py38` feature (Cargo.toml or [tool.maturin] features): the wheel is cp38-abi3."""
    features = table(pyproject, "tool", "maturin").get("features")
    text = read(project_dir / "Cargo.toml") + " ".join(map(str, features if isinstance(features, list) else []))
    floors = [int(m) for m in re.findall(r"\babi3-py3(\d+)\b", text)]
    return f"cp3{min(floors)}" if floors else None


_EXTENSION_CALLS = {"Extension", "CUDAExtension", "CppExtension", "Pybind11Extension", "SyclExtension"}


def extension_names(setup_py: str) -> list[str]:
    """The module names of setup.py's `Extension("name", ...)` calls (torch's CUDAExtension and the like):
    where the backend puts each compiled module, top level (`demo_cuda`) or dotted (`demo._C`). Read
    from the AST, never executed; a computed name is left out."""
    try:
        tree = ast.parse(setup_py)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if func not in _EXTENSION_CALLS:
            continue
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value not in names:
            names.append(arg.value)
    return names
