"""init's forbid list fits the package: headers its build installs in the package on purpose are allowed,
everything else (and CUDA kernel sources in a CUDA package) stays forbidden."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release._compat import tomllib
from kestrel_release.flows import init
from kestrel_release.flows.init import detect as init_detect
from kestrel_release.stages.verify.leaks import check_names


def forbid_of(root: Path, files: dict[str, str]) -> tuple[tuple[str, ...], init.Plan]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    pyproject = root / "pyproject.toml"
    d = init_detect.detect(root, tomllib.loads(pyproject.read_text()) if pyproject.exists() else {})
    plan = init.choose(d, ("3.12",))
    return tuple(plan.values["verify"]["forbid"]), plan


def flagged(forbid: tuple[str, ...], *members: str) -> list[str]:
    return [f.member for f in check_names(list(members), forbid, ())]


def test_bitarray_headers_listed_in_package_data_ship(tmp_path):
    """bitarray 3.12.3 ships bitarray.h and pythoncapi_compat.h on purpose (package_data "*.h")."""
    forbid, plan = forbid_of(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools >= 42.0.0"]\nbuild-backend = "setuptools.build_meta"\n',
            "setup.py": """
            from setuptools import setup, Extension
            setup(
                name = "bitarray",
                version = "3.12.3",
                packages = ["bitarray"],
                package_data = {"bitarray": ["*.h", "*.pickle", "py.typed", "*.pyi"]},
                ext_modules = [Extension(name = "bitarray._bitarray", sources = ["bitarray/_bitarray.c"],
                                         depends = ["bitarray/bitarray.hpp"])],
            )
        """,
            "bitarray/__init__.py": "",
            "bitarray/bitarray.h": "",
            "bitarray/_bitarray.c": "",
        },
    )
    assert flagged(forbid, "bitarray/bitarray.h", "bitarray/pythoncapi_compat.h") == []
    # the sources, and header kinds the package does not install, still fail
    assert flagged(forbid, "bitarray/_bitarray.c", "bitarray/x.hpp") == ["bitarray/_bitarray.c", "bitarray/x.hpp"]
    assert "*.h ships on purpose (setup.py package_data)" in plan.comments["verify.forbid"]


def test_cuda_kernel_sources_stay_forbidden_when_a_cuda_package_ships_its_include_dir(tmp_path):
    forbid, _ = forbid_of(
        tmp_path,
        {
            "setup.py": "from torch.utils.cpp_extension import CUDAExtension\nsetup(name='k', version='1.0')\n",
            "k/__init__.py": "",
            "k/include/k.h": "",
            "k/include/k_kernels.cuh": "",
            "k/csrc/k.cu": "",
        },
    )
    assert flagged(forbid, "k/include/k.h") == []
    assert flagged(forbid, "k/include/k_kernels.cuh", "k/csrc/k.cu") == ["k/include/k_kernels.cuh", "k/csrc/k.cu"]


@pytest.mark.parametrize(
    ("files", "shipped", "forbidden"),
    [
        (
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "mesonpy"\n[project]\nname = "m"\nversion = "1.0"\n',
                "meson.build": "project('m', 'c')\nsubdir('m')\n",
                "m/__init__.py": "",
                "m/meson.build": "m_sources = [\n  '__init__.py',\n  'm_api.h',\n]\npy.install_sources(m_sources, subdir: 'm')\n",
            },
            "m/m_api.h",
            "m/other.hpp",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                '[project]\nname = "s"\nversion = "1.0"\n[tool.setuptools.package-data]\ns = ["include/*.hpp"]\n',
                "s/__init__.py": "",
            },
            "s/include/s.hpp",
            "s/s.h",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["scikit-build-core"]\nbuild-backend = "scikit_build_core.build"\n'
                '[project]\nname = "c"\nversion = "1.0"\n',
                "CMakeLists.txt": "project(c LANGUAGES CXX)\nadd_library(c MODULE c.cpp)\n"
                "install(FILES include/c.h DESTINATION ${SKBUILD_PROJECT_NAME}/include)\n",
                "c/__init__.py": "",
            },
            "c/include/c.h",
            "c/c.cpp",
        ),
    ],
)
def test_headers_the_build_installs_in_the_package_ship(tmp_path, files, shipped, forbidden):
    forbid, _ = forbid_of(tmp_path, files)
    assert flagged(forbid, shipped, forbidden) == [forbidden]


def test_headers_only_in_manifest_in_stay_forbidden(tmp_path):
    """MANIFEST.in puts headers in the sdist (to compile from it), not in the wheel."""
    forbid, _ = forbid_of(
        tmp_path,
        {
            "setup.py": "from setuptools import setup, Extension\n"
            "setup(name='mi', version='1.0', ext_modules=[Extension('mi._m', ['mi/_m.c'], depends=['mi/m.h'])])\n",
            "MANIFEST.in": "recursive-include mi *.h\n",
            "mi/__init__.py": "",
            "mi/m.h": "",
        },
    )
    assert flagged(forbid, "mi/m.h") == ["mi/m.h"]


SETUPTOOLS_BUILD = '[build-system]\nrequires = ["setuptools", "cython"]\nbuild-backend = "setuptools.build_meta"\n'


@pytest.mark.parametrize(
    ("files", "why"),
    [
        (
            {"setup.py": 'setup(name="cy", package_data={"cy": ["*.pyx", "*.pxd"]}, ext_modules=ext)\n'},
            "setup.py package_data",
        ),
        (
            {
                "setup.py": "setup(name='cy', include_package_data=True, ext_modules=ext)\n",
                "MANIFEST.in": "recursive-include cy *.pyx *.pxd\nexclude cy/*.c\n",
            },
            "MANIFEST.in with include_package_data",
        ),
        (
            {
                "setup.py": "setup(ext_modules=ext)\n",
                "pyproject.toml": '[tool.setuptools.package-data]\ncy = ["*.pyx"]\n',
            },
            "[tool.setuptools.package-data]",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-cython"]\nbuild-backend = "hatchling.build"\n'
                '[project]\nname = "cy"\nversion = "1"\n[tool.hatch.build.targets.wheel]\ninclude = ["cy/*.pyx", "cy/*.py"]\n'
            },
            "hatch wheel include",
        ),
    ],
)
def test_cython_sources_the_package_ships_on_purpose_are_not_forbidden(tmp_path, files, why):
    files = {"cy/__init__.py": "", "cy/fast.pyx": "", **files}
    if "build-system" not in files.get("pyproject.toml", "[build-system]"):
        files["pyproject.toml"] = SETUPTOOLS_BUILD + files["pyproject.toml"]
    files.setdefault("pyproject.toml", SETUPTOOLS_BUILD)
    forbid, plan = forbid_of(tmp_path, files)
    assert "*.pyx" not in forbid and "*.c" in forbid
    assert flagged(forbid, "cy/fast.pyx", "cy/fast.c") == ["cy/fast.c"]
    assert f"*.pyx ships on purpose ({why})" in plan.comments["verify.forbid"]


def test_cython_sources_only_in_the_sdist_stay_forbidden(tmp_path):
    """MANIFEST.in without include_package_data (and no [project] table) puts them in the sdist only."""
    forbid, _plan = forbid_of(
        tmp_path,
        {
            "pyproject.toml": SETUPTOOLS_BUILD,
            "setup.py": "setup(name='cy', ext_modules=ext)\n",
            "MANIFEST.in": "recursive-include cy *.pyx\n",
            "cy/__init__.py": "",
            "cy/fast.pyx": "",
        },
    )
    assert "*.pyx" in forbid


def test_chamferdist_ships_the_sources_its_package_data_names_and_init_says_so(tmp_path):
    """chamferdist 1.0.3: package_data {"chamferdist": ["*.cu", "*.cuh", "*.h"]}, plus a declared *.cpp."""
    forbid, plan = forbid_of(
        tmp_path,
        {
            "setup.py": "setup(name='chamferdist', ext_modules=[CUDAExtension('chamferdist._C', ['chamferdist/knn.cu'])],"
            " package_data={'chamferdist': ['*.cu', '*.cuh', '*.h', '*.cpp']})\n",
            "chamferdist/__init__.py": "",
            "chamferdist/knn.cu": "",
        },
    )
    assert "*.cpp" not in forbid and "*.h" not in forbid
    assert "*.cu" not in forbid and "*.cuh" not in forbid  # named in package_data: shipped on purpose
    assert "*.c" in forbid and "*.pyx" in forbid
    assert "*.cpp ships on purpose (setup.py package_data)" in plan.comments["verify.forbid"]
    assert any("ships CUDA sources (*.cu, *.cuh" in note for note in plan.notes), plan.notes


def test_extension_sources_inside_the_package_ship_with_include_package_data(tmp_path):
    """torchsort 0.1.10: MANIFEST.in names only `*.cu`, yet its wheel holds torchsort/isotonic_cpu.cpp too
    (setuptools' manifest lists ext_modules' sources; include_package_data installs them): init's forbid list
    must not refuse the unmodified package's wheel (verify failed on `*.cpp` after a 20-minute build)."""
    forbid, plan = forbid_of(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch"]\n',
            "MANIFEST.in": "recursive-include ts *.cu\n",
            "setup.py": "from torch.utils import cpp_extension\nsetup(name='ts', packages=['ts'], "
            "include_package_data=True, ext_modules=[cpp_extension.CppExtension('ts.cpu', "
            "sources=['ts/cpu.cpp']), cpp_extension.CUDAExtension('ts.cuda', sources=['ts/cuda.cu'])])\n",
            "ts/__init__.py": "",
            "ts/cpu.cpp": "",
            "ts/cuda.cu": "",
        },
    )
    assert "*.cpp" not in forbid and "*.cu" not in forbid and "*.c" in forbid
    assert "*.cpp ships on purpose (setup.py's extension sources inside the package" in plan.comments["verify.forbid"]
    assert flagged(forbid, "ts/cpu.cpp", "ts/cuda.cu", "ts/x.c") == ["ts/x.c"]
