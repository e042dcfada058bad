"""`init` finds every place a package writes its version, and `version bump` then rewrites them all.

Each project is a minimal copy of a real sdist's shape (PyYAML 6.0.3, msgpack 1.1.2, contourpy 1.3.3,
PyWavelets 1.9.0, bitarray 3.12.3): the files that matter, with their real contents' lines.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from kestrel_release._compat import tomllib
from kestrel_release.config_loader import load as config
from kestrel_release.flows import init
from kestrel_release.flows.init import detect as init_detect
from kestrel_release.stages import version


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def planned(root: Path) -> tuple[init_detect.Detected, init.Plan]:
    pyproject = root / "pyproject.toml"
    d = init_detect.detect(root, tomllib.loads(pyproject.read_text()) if pyproject.exists() else {})
    return d, init.choose(d, ("3.11", "3.12"))


def places(plan: init.Plan) -> list[tuple[str, str]]:
    return [(e["path"], e["pattern"]) for e in plan.values.get("version_files", [])]


def written(root: Path, d: init_detect.Detected, plan: init.Plan):
    """The project as init leaves it: its table appended to pyproject.toml, loaded as every command loads it."""
    pyproject = root / "pyproject.toml"
    before = pyproject.read_text() if pyproject.exists() else ""
    pyproject.write_text(before + ("\n" if before else "") + init.table_text(plan, d))
    return config.load(root, env={})


PYYAML = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools", "Cython"]
        backend-path = ["packaging"]
        build-backend = "_pyyaml_pep517"
    """,
    "packaging/_pyyaml_pep517.py": "from setuptools import build_meta as _bm\n",
    "setup.py": """
        NAME = 'PyYAML'
        VERSION = '6.0.3'
        from setuptools import setup, Extension
        if __name__ == '__main__':
            setup(
                name=NAME,
                version=VERSION,
                package_dir={'': 'lib'},
                packages=['yaml', '_yaml'],
                ext_modules=[Extension('yaml._yaml', ['yaml/_yaml.pyx'])],
            )
    """,
    "lib/yaml/__init__.py": "from .error import *\n\n__version__ = '6.0.3'\ntry:\n    from .cyaml import *\nexcept ImportError:\n    pass\n",
    "lib/_yaml/__init__.py": "import yaml\n",
    "yaml/_yaml.pyx": "# cython\n",
}


def test_pyyaml_lib_layout_version_in_setup_py_and_the_package(tmp_path):
    d, plan = planned(make(tmp_path, PYYAML))
    assert d.packages == {"_yaml": "lib/_yaml", "yaml": "lib/yaml"}
    assert places(plan) == [
        ("setup.py", "VERSION = '{version}'"),
        ("lib/yaml/__init__.py", "__version__ = '{version}'"),
    ]
    assert sorted(plan.values["verify"]["allow"]) == ["_yaml/**", "pyyaml.libs/*", "yaml/**"]
    cfg = written(tmp_path, d, plan)
    result = version.change(cfg, "bump", "patch")
    assert (result.new, result.files) == ("6.0.4", ["setup.py", "lib/yaml/__init__.py"])
    assert "__version__ = '6.0.4'\n" in (tmp_path / "lib/yaml/__init__.py").read_text()  # the wheel's yaml.__version__


MSGPACK = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools >= 80.9.0"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "msgpack"
        dynamic = ["version"]
        [tool.setuptools.dynamic]
        version = {attr = "msgpack.__version__"}
    """,
    "setup.py": "from setuptools import Extension, setup\nsetup(ext_modules=[Extension('msgpack._cmsgpack', ['msgpack/_cmsgpack.c'])])\n",
    "msgpack/__init__.py": 'from .ext import ExtType\n\nversion = (1, 1, 2)\n__version__ = "1.1.2"\n',
    "msgpack/fallback.py": "# the pure-Python fallback\n",
}


def test_msgpack_version_tuple_beside_the_string_is_rewritten_as_a_tuple(tmp_path):
    d, plan = planned(make(tmp_path, MSGPACK))
    assert places(plan) == [
        ("msgpack/__init__.py", '__version__ = "{version}"'),
        ("msgpack/__init__.py", "version = ({version_tuple})"),
    ]
    cfg = written(tmp_path, d, plan)
    assert version.change(cfg, "bump", "minor").files == ["msgpack/__init__.py"]
    assert 'version = (1, 2, 0)\n__version__ = "1.2.0"\n' in (tmp_path / "msgpack/__init__.py").read_text()


CONTOURPY = {
    "pyproject.toml": """
        [build-system]
        build-backend = "mesonpy"
        requires = ["meson >= 1.2.0", "meson-python >= 0.13.1", "pybind11 >= 2.13.2, != 2.13.3"]
        [project]
        name = "contourpy"
        dynamic = ["version"]
        requires-python = ">= 3.11"
    """,
    "meson.build": """
        project(
          'contourpy',
          'cpp',
          license: 'BSD-3-Clause',
          meson_version: '>= 1.2.0',
          version: '1.3.3',
        )
        pybind11_dep = dependency('pybind11', version: '>=2.13.2')
        subdir('lib/contourpy')
        subdir('src')
    """,
    "lib/contourpy/__init__.py": "from contourpy._version import __version__\n",
    "lib/contourpy/_version.py": '__version__ = "1.3.3"\n',
    "lib/contourpy/meson.build": "py3.install_sources(['__init__.py', '_version.py'], subdir: 'contourpy')\n",
    "src/meson.build": "ext = py3.extension_module(\n  '_contourpy',\n  ['wrap.cpp'],\n  install: true,\n)\n",
    "src/wrap.cpp": "// pybind11\n",
}


def test_contourpy_meson_project_version_and_the_lib_version_module(tmp_path):
    d, plan = planned(make(tmp_path, CONTOURPY))
    assert d.packages == {"contourpy": "lib/contourpy"}
    assert places(plan) == [
        ("meson.build", "version: '{version}'"),
        ("lib/contourpy/_version.py", '__version__ = "{version}"'),
    ]
    cfg = written(tmp_path, d, plan)
    assert version.change(cfg, "bump", "patch").files == ["meson.build", "lib/contourpy/_version.py"]
    assert (tmp_path / "lib/contourpy/_version.py").read_text() == '__version__ = "1.3.4"\n'
    assert "  version: '1.3.4',\n" in (tmp_path / "meson.build").read_text()


PYWAVELETS = {
    "pyproject.toml": """
        [build-system]
        build-backend = "mesonpy"
        requires = ["meson-python>=0.18.0", "Cython>=3.0.4", "numpy>=2.0.0"]
        [project]
        name = "PyWavelets"
        version = "1.9.0"
        requires-python = ">=3.11"
    """,
    "meson.build": "project(\n  'PyWavelets',\n  'c', 'cython',\n  version: '1.9.0',\n  license: 'MIT',\n)\nsubdir('pywt')\n",
    "util/version_utils.py": "import os\n\nMAJOR = 1\nMINOR = 8\nMICRO = 0\nISRELEASED = True\n"
    "VERSION = '%d.%d.%d' % (MAJOR, MINOR, MICRO)\n",
    "pywt/__init__.py": "from pywt.version import version as __version__\n",
    "pywt/meson.build": "subdir('_extensions')\n",
    "pywt/_extensions/meson.build": "foreach pyx_file : pyx_files\n  py.extension_module(pyx_file[0],\n"
    "    pyx_file[1], install: true)\nendforeach\n",
    "pywt/_extensions/_pywt.pyx": "# cython\n",
}


def test_pywavelets_meson_build_and_a_stale_major_minor_micro_file(tmp_path):
    """util/version_utils.py writes pywt.__version__ at build time; upstream 1.9.0 left it at 1.8.0."""
    d, plan = planned(make(tmp_path, PYWAVELETS))
    assert places(plan) == [
        ("meson.build", "version: '{version}'"),
        ("util/version_utils.py", "MAJOR = {major}\nMINOR = {minor}\nMICRO = {micro}"),
    ]
    assert any(n.startswith("util/version_utils.py states 1.8.0, not 1.9.0") for n in plan.notes)
    cfg = written(tmp_path, d, plan)
    assert version.show(cfg).warnings == [
        "versions disagree: util/version_utils.py has 1.8.0, pyproject.toml has 1.9.0"
    ]
    version.change(cfg, "set", "1.9.0", force=True)  # what the note says to run
    assert version.change(config.load(tmp_path, env={}), "bump", "minor").new == "1.10.0"
    assert "MAJOR = 1\nMINOR = 10\nMICRO = 0\n" in (tmp_path / "util/version_utils.py").read_text()


BITARRAY = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools >= 42.0.0"]\nbuild-backend = "setuptools.build_meta"\n',
    "setup.py": """
        import re
        from setuptools import setup, Extension
        kwds = {}
        # Read version from bitarray/bitarray.h
        pat = re.compile(r'#define\\s+BITARRAY_VERSION\\s+"(\\S+)"', re.M)
        data = open('bitarray/bitarray.h').read()
        kwds['version'] = pat.search(data).group(1)
        setup(
            name = "bitarray",
            packages = ["bitarray"],
            package_data = {"bitarray": ["*.h", "*.pickle", "py.typed", "*.pyi"]},
            ext_modules = [Extension(name = "bitarray._bitarray", sources = ["bitarray/_bitarray.c"])],
            **kwds
        )
    """,
    "bitarray/__init__.py": "from bitarray._bitarray import BITARRAY_VERSION as __version__\n",
    "bitarray/bitarray.h": '/* Copyright */\n#define BITARRAY_VERSION  "3.12.3"\n',
    "bitarray/pythoncapi_compat.h": '#define PYTHONCAPI_COMPAT_VERSION "0x030D0000"\n',
    "bitarray/_bitarray.c": '#include "bitarray.h"\n',
}


def test_bitarray_version_only_in_a_c_header(tmp_path):
    d, plan = planned(make(tmp_path, BITARRAY))
    assert (d.version, d.version_source) == ("3.12.3", "bitarray/bitarray.h")
    assert places(plan) == [("bitarray/bitarray.h", '#define BITARRAY_VERSION  "{version}"')]
    cfg = written(tmp_path, d, plan)
    assert version.change(cfg, "bump", "patch").new == "3.12.4"
    assert '#define BITARRAY_VERSION  "3.12.4"\n' in (tmp_path / "bitarray/bitarray.h").read_text()


def test_other_libraries_versions_are_not_taken_for_the_package(tmp_path):
    """A vendored module's __version__, a dependency's header, an ABI define and tests are someone else's."""
    _d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[project]\nname = "kern"\nversion = "2.0.0"\n',
                "kern/__init__.py": '__version__ = "2.0.0"\n',
                "kern/_vendor/six.py": '__version__ = "1.16.0"\n',
                "kern/backports.py": '__version__ = "0.3"\n',  # a bundled module: not our version
                "kern/contrib/plot/__init__.py": '__version__ = "0.9"\n',  # a bundled subpackage
                "VERSION": "2.0.0\n",
                "kern/include/zlib.h": '#define ZLIB_VERSION "1.3.1"\n',
                "kern/include/kern.h": '#define KERN_VERSION "2.0.0"\n#define KERN_ABI_VERSION "2.0.0"\n',
                "kern/tests/test_v.py": '__version__ = "2.0.0"\n',
                "third_party/dep/version.py": '__version__ = "2.0.0"\n',
                "CMakeLists.txt": "cmake_minimum_required(VERSION 3.15)\nproject(kern VERSION 2.0.0 LANGUAGES CXX)\n",
            },
        )
    )
    assert places(plan) == [
        ("kern/__init__.py", '__version__ = "{version}"'),
        ("kern/include/kern.h", '#define KERN_VERSION "{version}"'),
        ("CMakeLists.txt", "project(kern VERSION {release}"),
        ("VERSION", "{version}"),
    ]
    assert plan.notes == [n for n in plan.notes if "states" not in n]  # nothing disagrees


def test_a_stale_package_version_is_kept_and_named(tmp_path):
    """PyYAML after a bump of setup.py alone: lib/yaml/__init__.py is stale; init lists it and says so."""
    files = dict(PYYAML)
    files["lib/yaml/__init__.py"] = "__version__ = '6.0.2'\n"
    _d, plan = planned(make(tmp_path, files))
    assert ("lib/yaml/__init__.py", "__version__ = '{version}'") in places(plan)
    assert any(n.startswith("lib/yaml/__init__.py states 6.0.2, not 6.0.3") for n in plan.notes)


def test_a_vendored_header_is_never_taken_for_the_version(tmp_path):
    """orjson (maturin, version in Cargo.toml) vendors include/yyjson/yyjson.h with YYJSON_VERSION_STRING "0.7.0"."""
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["maturin>=1,<2"]\nbuild-backend = "maturin"\n'
                '[project]\nname = "orjson"\ndynamic = ["version"]\n',
                "Cargo.toml": '[package]\nname = "orjson"\nversion = "3.9.9"\n',
                "include/yyjson/yyjson.h": '#define YYJSON_VERSION_STRING "0.7.0"\n',
            },
        )
    )
    assert d.version is None and "version_files" not in plan.values


def test_cffi_version_in_a_tuple_and_a_define_in_a_c_source(tmp_path):
    """cffi 2.1.1: [project].version, src/cffi/__init__.py (string and __version_info__), src/c/_cffi_backend.c;
    testing/ is not the package (its meson.build files build test modules)."""
    d, plan = planned(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                '[project]\nname = "cffi"\nversion = "2.1.1"\n',
                "setup.py": "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('_cffi_backend', ['src/c/_cffi_backend.c'])])\n",
                "src/cffi/__init__.py": '__version__ = "2.1.1"\n__version_info__ = (2, 1, 1)\n',
                "src/c/_cffi_backend.c": '#include <Python.h>\n#define CFFI_VERSION  "2.1.1"\n',
                "testing/__init__.py": "",
                "testing/cffi1/example/meson.build": "py.extension_module('_ex', 'ex.c')\n",
            },
        )
    )
    assert places(plan) == [
        ("src/cffi/__init__.py", '__version__ = "{version}"'),
        ("src/cffi/__init__.py", "__version_info__ = ({version_tuple})"),
        ("src/c/_cffi_backend.c", '#define CFFI_VERSION  "{version}"'),
    ]
    assert d.native == ["setup.py builds extension modules"] and "testing" not in d.packages
    cfg = written(tmp_path, d, plan)
    assert version.change(cfg, "bump", "minor").files == [
        "pyproject.toml",
        "src/cffi/__init__.py",
        "src/c/_cffi_backend.c",
    ]
    assert (tmp_path / "src/cffi/__init__.py").read_text() == '__version__ = "2.2.0"\n__version_info__ = (2, 2, 0)\n'
    assert '#define CFFI_VERSION  "2.2.0"\n' in (tmp_path / "src/c/_cffi_backend.c").read_text()


DEMO_SETUP = """
from setuptools import setup

setup(name="demo", packages=["demo"])
"""
DEMO_HEADER = """
#pragma once
#define DEMO_VERSION_MAJOR 0
#define DEMO_VERSION_MINOR 1
// the patch level moves with every release
#define DEMO_VERSION_PATCH 10
"""


def test_a_version_in_three_defines_is_found_and_bumped_as_one(tmp_path):
    root = make(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
            "setup.py": DEMO_SETUP,
            "demo/__init__.py": "",
            "csrc/demo_version.h": DEMO_HEADER,
        },
    )
    d, plan = planned(root)
    assert d.version == "0.1.10"
    assert places(plan) == [
        ("csrc/demo_version.h", "#define DEMO_VERSION_MAJOR {major}"),
        ("csrc/demo_version.h", "#define DEMO_VERSION_MINOR {minor}"),
        ("csrc/demo_version.h", "#define DEMO_VERSION_PATCH {micro}"),
    ]
    assert any("move together" in note for note in plan.notes)
    cfg = written(root, d, plan)
    version.change(cfg, "bump", "patch")
    assert "#define DEMO_VERSION_PATCH 11\n" in (root / "csrc/demo_version.h").read_text()


def test_a_computed_setup_py_version_is_found_by_its_literal(tmp_path):
    root = make(
        tmp_path,
        {
            "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
            "setup.py": "import os\nfrom setuptools import setup\n\n"
            'setup(name="demo", version="0.1.10" + os.getenv("DEMO_VERSION_SUFFIX", ""), packages=["demo"])\n',
            "demo/__init__.py": "",
        },
    )
    d, plan = planned(root)
    assert (d.version, d.version_source) == ("0.1.10", "setup.py")
    assert places(plan) == [("setup.py", 'version="{version}"')]
    cfg = written(root, d, plan)
    version.change(cfg, "bump", "minor")
    assert 'version="0.2.0" + os.getenv' in (root / "setup.py").read_text()
