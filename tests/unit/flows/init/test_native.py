"""`init` finds native code wherever the backend declares it; a pure py3 table only for a pure package."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release._compat import tomllib
from kestrel_release.config_loader import load as config
from kestrel_release.flows import ci, init
from kestrel_release.flows.init import detect as init_detect


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def planned(root: Path) -> tuple[init_detect.Detected, init.Plan]:
    d = init_detect.detect(root, tomllib.loads((root / "pyproject.toml").read_text()))
    return d, init.choose(d, ("3.11", "3.12"))


MESONPY = '[build-system]\nbuild-backend = "mesonpy"\nrequires = ["meson-python"]\n[project]\nname = "{name}"\nversion = "1.3.3"\n'


def test_meson_extension_declared_in_a_subdir_meson_build_is_per_python(tmp_path):
    """contourpy 1.3.3: the top meson.build only has subdir('src'); src/meson.build has the extension."""
    root = make(
        tmp_path,
        {
            "pyproject.toml": MESONPY.format(name="contourpy"),
            "meson.build": "project('contourpy', 'cpp', version: '1.3.3')\npy3 = import('python').find_installation()\n"
            "subdir('lib/contourpy')\nsubdir('src')\n",
            "lib/contourpy/__init__.py": "",
            "lib/contourpy/meson.build": "py3.install_sources(['__init__.py'], subdir: 'contourpy')\n",
            "src/meson.build": "ext = py3.extension_module(\n  '_contourpy',\n  ['wrap.cpp'],\n  install: true,\n)\n",
            "src/wrap.cpp": "",
        },
    )
    d, plan = planned(root)
    assert d.native == ["src/meson.build builds extension modules"]
    assert "abi" not in plan.values  # auto: one wheel per Python, not one py3 wheel
    (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + init.table_text(plan, d))
    cfg = config.load(root, env={})
    assert [job["pythons"] for job in ci.build_jobs(cfg)] == [["3.11", "3.12"]]  # `ci init`'s matrix


def test_pure_meson_python_package_stays_py3(tmp_path):
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": MESONPY.format(name="puremeson"),
                "meson.build": "project('puremeson', version: '1.3.3')\nsubdir('puremeson')\n",
                "puremeson/__init__.py": "",
                "puremeson/meson.build": "py.install_sources(['__init__.py'], subdir: 'puremeson')\n",
                "tests/meson.build": "py.extension_module('_probe', 'probe.c')\n",  # tests are not the package
            },
        )
    )
    assert d.native == [] and plan.values["abi"] == "py3"


SKB = (
    '[build-system]\nrequires = ["scikit-build-core", "nanobind"]\nbuild-backend = "scikit_build_core.build"\n'
    '[project]\nname = "skb"\nversion = "1.0"\n[tool.scikit-build]\ncmake.source-dir = "cpp"\n'
)


@pytest.mark.parametrize(
    "command",
    [
        "add_library(core SHARED a.cpp)",
        "python_add_library(_m MODULE m.cpp WITH_SOABI)",
        "pybind11_add_module(_m m.cpp)",
        "NANOBIND_ADD_MODULE(_m m.cpp)",
    ],
)
def test_cmake_target_in_a_sub_cmakelists_is_native(tmp_path, command):
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": SKB,
                "cpp/CMakeLists.txt": f"cmake_minimum_required(VERSION 3.26)\nproject(skb LANGUAGES CXX CUDA)\n{command}\n",
                "skb/__init__.py": "",
            },
        )
    )
    assert d.native == ["cpp/CMakeLists.txt declares a library or module target"] and d.cmake
    assert "abi" not in plan.values
    assert plan.values["build"]["env"] == {"CUDAARCHS": "90a"}  # the CUDA language is on in cpp/CMakeLists.txt


def test_vendored_cmakelists_that_cmake_never_runs_is_not_cmake(tmp_path):
    """ujson vendors double-conversion with its CMakeLists.txt; setup.py compiles the sources itself."""
    d, _ = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n',
                "setup.py": "from setuptools import setup, Extension\nsetup(name='u', ext_modules=[Extension('u', ['u.c'])])\n",
                "deps/dc/CMakeLists.txt": "add_library(double-conversion a.cc)\n",
            },
        )
    )
    assert d.native == ["setup.py builds extension modules"] and not d.cmake


def test_a_root_cmakelists_beside_a_setup_py_that_never_runs_cmake_gets_no_cmake_variable(tmp_path):
    """torch-spline-conv: its root CMakeLists.txt (CUDA on) installs a C++ library for libtorch users; setup.py
    compiles the wheel with torch's cpp_extension. CUDAARCHS would be a variable the build ignores (doctor
    then warns about init's own table)."""
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch"]\n',
                "setup.py": "import torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                "setup(name='s', ext_modules=[CUDAExtension('s._s', ['csrc/s.cu'])])\n",
                "CMakeLists.txt": "project(s LANGUAGES CXX)\nenable_language(CUDA)\nadd_library(s SHARED csrc/s.cu)\n",
                "csrc/s.cu": "",
            },
        )
    )
    assert not d.cmake and "CMakeLists.txt" not in d.native
    assert "CUDAARCHS" not in plan.values["build"]["env"] and plan.values["build"]["env"]["TORCH_CUDA_ARCH_LIST"]


@pytest.mark.parametrize(
    ("files", "why"),
    [
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools>=74"]\nbuild-backend = "setuptools.build_meta"\n'
                '[project]\nname = "e"\nversion = "1.0"\n'
                '[[tool.setuptools.ext-modules]]\nname = "e._e"\nsources = ["e/_e.c"]\n',
                "e/_e.c": "",
            },
            "pyproject.toml [tool.setuptools] ext-modules",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-cython"]\nbuild-backend = "hatchling.build"\n'
                '[project]\nname = "e"\nversion = "1.0"\n[tool.hatch.build.targets.wheel.hooks.cython]\n',
                "e/__init__.py": "",
                "e/_e.pyx": "",
            },
            "hatch build hook cython",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["maturin>=1.5"]\nbuild-backend = "maturin"\n'
                '[project]\nname = "e"\nversion = "1.0"\n',
                "Cargo.toml": '[package]\nname = "e"\n[dependencies]\npyo3 = { version = "0.22", features = ["abi3-py39"] }\n',
                "src/lib.rs": "",
            },
            "Cargo.toml (maturin)",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools", "setuptools-rust"]\n'
                'build-backend = "setuptools.build_meta"\n[project]\nname = "e"\nversion = "1.0"\n'
                '[[tool.setuptools-rust.ext-modules]]\ntarget = "e._e"\n',
                "Cargo.toml": '[package]\nname = "e"\n',
                "e/__init__.py": "",
            },
            "Cargo.toml (setuptools-rust)",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["poetry-core", "setuptools"]\n'
                'build-backend = "poetry.core.masonry.api"\n[tool.poetry]\nname = "e"\nversion = "1.0"\n'
                '[tool.poetry.build]\nscript = "build.py"\n',
                "build.py": "from setuptools import Extension\next_modules = [Extension('e._e', ['e/_e.c'])]\n",
            },
            "build.py builds extension modules",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["flit_core", "cython"]\nbuild-backend = "flit_core.buildapi"\n'
                '[project]\nname = "e"\nversion = "1.0"\n',
                "e/__init__.py": "",
                "e/_speed.pyx": "",
            },
            "1 C/C++/Cython source files; the build requires cython",
        ),
    ],
)
def test_every_backend_s_declaration_of_native_code_is_read(tmp_path, files, why):
    d, plan = planned(make(tmp_path, files))
    assert why in d.native, d.native
    assert plan.values.get("abi") != "py3"


def test_pyo3_abi3_feature_gives_the_abi3_floor(tmp_path):
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["maturin"]\nbuild-backend = "maturin"\n[project]\nname = "r"\n'
                'version = "0.1.0"\n',
                "Cargo.toml": '[package]\nname = "r"\n[dependencies]\npyo3 = { version = "0.22", features = ["abi3-py39"] }\n',
            },
        )
    )
    assert d.abi3 == "cp39" and plan.values["abi"] == "abi3"


CUDA_EXT_SETUP = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
import torch.utils.cpp_extension as ext

setup(
    name="demo",
    packages=["demo"],
    ext_modules=[
        CUDAExtension("demo_cuda", ["csrc/k.cu"], extra_compile_args={"nvcc": ["-lineinfo"]}),
        ext.CppExtension(name="demo_ops._C", sources=["csrc/ops.cpp"]),
        CUDAExtension("demo._inner", ["csrc/inner.cu"]),
    ],
    cmdclass={"build_ext": BuildExtension},
)
"""


def test_extension_modules_outside_the_package_are_in_the_allow_list(tmp_path):
    root = make(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch"]\n'
            'build-backend = "setuptools.build_meta"\n',
            "setup.py": CUDA_EXT_SETUP,
            "demo/__init__.py": "",
            "csrc/k.cu": "",
        },
    )
    d, plan = planned(root)
    assert d.ext_modules == ["demo_cuda", "demo_ops._C", "demo._inner"]
    allow = plan.values["verify"]["allow"]
    assert "/demo_cuda.*" in allow and "/demo_ops/_C.*" in allow and "demo/**" in allow
    assert not any("_inner" in a for a in allow)  # inside the package: demo/** has it
    # What verify then says of the wheel's top-level module: nothing.
    from kestrel_release.stages.verify.leaks import check_names

    names = [
        "demo/__init__.py",
        "demo_cuda.cpython-312-x86_64-linux-gnu.so",
        "demo_ops/_C.cpython-312-x86_64-linux-gnu.so",
    ]
    assert check_names(names, (), tuple(allow)) == []
