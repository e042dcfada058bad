"""`init`'s detection and choices on small synthetic projects (files only, no processes)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release._compat import tomllib
from kestrel_release.config_loader import load as config
from kestrel_release.config_loader import parse as config_parse
from kestrel_release.flows import init
from kestrel_release.flows.init import detect as init_detect
from kestrel_release.stages.verify.leaks import check_names
from kestrel_release.stages.version import files as version_files


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def detect(root: Path) -> init_detect.Detected:
    pyproject = root / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text()) if pyproject.exists() else {}
    d = init_detect.detect(root, data)
    if d.version_file:  # every pattern init writes must find exactly the detected version
        path, pattern = d.version_file
        assert version_files._regex(pattern).findall((root / path).read_text()) == [d.version]
    return d


SETUPTOOLS = '[build-system]\nrequires = ["setuptools", "torch"]\nbuild-backend = "setuptools.build_meta"\n'


def test_extension_cpp_shape_no_project_table(tmp_path):
    """PyTorch's extension template: conditional py_limited_api, options cp39, CUDAExtension, literal version."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": SETUPTOOLS,
                "setup.py": """
            import torch
            from torch.utils.cpp_extension import CUDAExtension, BuildExtension
            library_name = "extension_cpp"
            if torch.__version__ >= "2.6.0":
                py_limited_api = True
            else:
                py_limited_api = False
            setup(
                name=library_name,
                version="0.0.1",
                ext_modules=[CUDAExtension("extension_cpp._C", ["a.cpp"], py_limited_api=py_limited_api,
                             extra_compile_args={"cxx": ["-DPy_LIMITED_API=0x03090000"]})],
                options={"bdist_wheel": {"py_limited_api": "cp39"}} if py_limited_api else {},
            )
        """,
                "extension_cpp/__init__.py": "from . import _C\n",
                "extension_cpp/csrc/cuda/muladd.cu": "// kernel\n",
            },
        )
    )
    assert (d.backend, d.name, d.name_source) == ("setuptools", "extension_cpp", "setup.py")
    assert d.version == "0.0.1" and d.version_file == ("setup.py", 'version="{version}"')
    assert d.abi3 == "cp39" and d.torch and d.cuda and d.native
    plan = init.choose(d, ("3.10", "3.12"))
    assert plan.values["abi"] == "abi3"
    assert plan.values["build"]["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0a"}
    assert plan.values["verify"]["required_sass"] == ["sm_90a"]


@pytest.mark.parametrize(
    ("mentioned", "expected"), [("version.py", "pkg/version.py"), ("__init__.py", "pkg/__init__.py")]
)
def test_version_file_is_the_one_setup_py_reads(tmp_path, mentioned, expected):
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": SETUPTOOLS,
                "setup.py": f'import re\nv = re.search("x", open("pkg/{mentioned}").read())\nsetup(name="pkg", version=v)\n',
                "pkg/__init__.py": '__version__ = "1.2.3"\n',
                "pkg/version.py": "__version__ = '1.2.3'\n",
            },
        )
    )
    assert d.version == "1.2.3" and d.version_file is not None and d.version_file[0] == expected
    quote = "'" if expected.endswith("version.py") else '"'
    assert d.version_file[1] == f"__version__ = {quote}{{version}}{quote}"


def test_setup_cfg_attr_version_and_bdist_wheel_abi3(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "setup.py": "from setuptools import setup, Extension\nsetup(ext_modules=[Extension('src.m', ['m.c'])])\n",
                "setup.cfg": "[metadata]\nname = cfgpkg\nversion = attr: cfgpkg.about.__version__\n"
                "[options]\npython_requires = >=3.11\n[bdist_wheel]\npy_limited_api = cp311\n",
                "src/cfgpkg/__init__.py": "",
                "src/cfgpkg/about.py": '__version__ = "0.3.0"\n',
            },
        )
    )
    assert d.backend_spec == "setuptools.build_meta:__legacy__"  # no pyproject: PEP 517's fallback
    assert (d.name, d.name_source) == ("cfgpkg", "setup.cfg [metadata]")
    assert d.version_file == ("src/cfgpkg/about.py", '__version__ = "{version}"') and d.version == "0.3.0"
    assert d.abi3 == "cp311" and d.requires_python == ">=3.11" and d.packages == {"cfgpkg": "src/cfgpkg"}


@pytest.mark.parametrize(
    ("files", "vcs"),
    [
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools>=64", "setuptools_scm>=8"]\n'
                'build-backend = "setuptools.build_meta"\n[project]\nname = "p"\ndynamic = ["version"]\n'
            },
            "setuptools-scm",
        ),
        (
            {
                "pyproject.toml": '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
                '[project]\nname = "p"\ndynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'
            },
            "hatch-vcs",
        ),
        (
            {
                "setup.py": "import versioneer\nsetup(name='p', version=versioneer.get_version())\n",
                "versioneer.py": "# vendored\n",
            },
            "versioneer",
        ),
    ],
)
def test_version_from_vcs_is_recognised_and_no_version_file_is_written(tmp_path, files, vcs):
    d = detect(make(tmp_path, {**files, "p/__init__.py": '__version__ = "0.0.0"\n'}))
    assert d.vcs == vcs and d.version_file is None
    plan = init.choose(d, ("3.12",))
    assert "version_files" not in plan.values
    assert any("git tag -a" in note for note in plan.notes)


def test_scikit_build_core_cmake_cuda_with_py_api(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["scikit-build-core"]\nbuild-backend = "scikit_build_core.build"\n'
                '[project]\nname = "skb"\nversion = "2.0.0"\nrequires-python = ">=3.10"\n'
                '[tool.scikit-build]\nwheel.py-api = "cp310"\n',
                "CMakeLists.txt": "cmake_minimum_required(VERSION 3.24)\nproject(skb LANGUAGES CXX CUDA)\n",
                "src/skb/__init__.py": '__version__ = "2.0.0"\n',
                "src/kernel.cu": "",
            },
        )
    )
    assert (d.backend, d.abi3, d.version_source) == ("scikit-build-core", "cp310", "pyproject.toml [project]")
    assert d.version_file == ("src/skb/__init__.py", '__version__ = "{version}"')  # kept in step with [project]
    plan = init.choose(d, ("3.11",))
    assert plan.values["build"]["env"] == {"CUDAARCHS": "90a"}  # CMake's default for CMAKE_CUDA_ARCHITECTURES


def test_cmake_that_sets_its_own_architectures_gets_no_env(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "scikit_build_core.build"\n[project]\nname = "a"\nversion = "1"\n',
                "CMakeLists.txt": "project(a LANGUAGES CUDA)\nset(CMAKE_CUDA_ARCHITECTURES 90a)\n",
            },
        )
    )
    assert d.cuda and "build" not in init.choose(d, ("3.12",)).values


def test_meson_limited_api_floor_from_requires_python(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "mesonpy"\n[project]\nname = "m"\nversion = "1.0"\n'
                'requires-python = ">=3.11"\n[tool.meson-python]\nlimited-api = true\n',
                "meson.build": "project('m', 'c')\npy.extension_module('_m', 'm.c', limited_api: '3.11')\n",
            },
        )
    )
    assert (d.backend, d.abi3, d.native) == ("meson-python", "cp311", ["meson.build builds extension modules"])


def test_pure_hatchling_project_is_py3(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
                '[project]\nname = "pure"\nversion = "0.1.0"\n',
                "pure/__init__.py": "",
                "tests/test_pure.py": "",
            },
        )
    )
    plan = init.choose(d, ("3.12", "3.13"))
    assert not d.native and not d.cuda and plan.values["abi"] == "py3"
    assert plan.values["verify"]["required_sass"] == [] and "/tests/**" in plan.values["verify"]["forbid"]
    assert plan.values["verify"]["allow"] == ["pure/**"]  # no native code: no .libs/ for grafted libraries


def test_unknown_backend_is_generic(tmp_path):
    d = detect(make(tmp_path, {"pyproject.toml": '[build-system]\nbuild-backend = "mybackend.api"\n'}))
    assert (d.backend, d.backend_spec) == ("generic", "mybackend.api")


def test_tests_shipped_inside_the_package_are_not_forbidden(tmp_path):
    d = detect(
        make(
            tmp_path,
            {
                "setup.py": "setup(name='shipper', version='1.0')\n",
                "shipper/__init__.py": "",
                "shipper/tests/test_a.py": "",
                "tests/test_b.py": "",
                "shipper/include/shipper.h": "",
                "csrc/a.cpp": "",
            },
        )
    )
    forbid = tuple(init.choose(d, ("3.12",)).values["verify"]["forbid"])
    assert d.shipped_tests == ["shipper/tests"] and d.ships_headers

    def flagged(member: str) -> bool:
        return bool(check_names([member], forbid, ()))

    # The package's own tests and headers ship; a top-level tests/ package and sources do not.
    assert not flagged("shipper/tests/test_a.py") and not flagged("shipper/include/shipper.h")
    assert flagged("tests/test_b.py") and flagged("shipper/csrc/a.cpp") and flagged("shipper/_ext.pyx")


def test_suggested_forbid_covers_every_source_suffix_of_the_defaults(tmp_path):
    # One list to keep current: a suffix added to config.DEFAULT_FORBID is suggested by init too.
    d = detect(make(tmp_path, {"setup.py": "setup(name='plain', version='1.0')\n", "plain/__init__.py": ""}))
    forbid = tuple(init.choose(d, ("3.12",)).values["verify"]["forbid"])
    suffixes = [p[1:] for p in config.DEFAULT_FORBID if p.startswith("*.")]
    assert {".pyx", ".pxi", ".c", ".cu", ".cuh", ".h"} <= set(suffixes)
    assert [f"plain/_impl{s}" for s in suffixes if not check_names([f"plain/_impl{s}"], forbid, ())] == []
    assert not check_names(["plain/_impl.pxd", "plain/flash_attn.py"], forbid, ())  # cimport interface, public code


@pytest.mark.parametrize(
    "out_dir, lines",
    [
        ("dist-all", ["/dist-all/", "/dist-all.rehearsal/", "/.kestrel-staging-*/", "/.kestrel-version.json"]),
        (
            "build/wheels",
            ["/build/wheels/", "/build/wheels.rehearsal/", "/build/.kestrel-staging-*/", "/.kestrel-version.json"],
        ),
        ("/srv/wheelhouse", ["/.kestrel-version.json"]),  # outside the project: no line can name it
        ("../wheelhouse", ["/.kestrel-version.json"]),
    ],
)
def test_ignore_lines_follow_where_the_tool_writes(out_dir, lines):
    assert init.working_files(out_dir) == lines


def test_pythons_respect_requires_python_and_the_abi3_floor():
    d = init_detect.Detected(project_dir=Path("."), requires_python=">=3.11,!=3.12.*")
    allowed = [v for v in init.CANDIDATE_PYTHONS if init.python_allowed(v, d)]
    assert allowed == ["3.11", "3.13", "3.14", "3.14t", "3.15", "3.15t"]
    d = init_detect.Detected(project_dir=Path("."), abi3="cp312")
    allowed = [v for v in init.CANDIDATE_PYTHONS if init.python_allowed(v, d)]
    assert allowed == ["3.12", "3.13", "3.14", "3.14t", "3.15", "3.15t"]


def test_free_threaded_pythons_found_on_the_machine_are_listed():
    d = init_detect.Detected(project_dir=Path("."), requires_python=">=3.12")
    plan = init.choose(d, ("3.12", "3.14", "3.14t"))
    assert plan.values["python"] == ["3.12", "3.14", "3.14t"]


def test_no_python_found_lists_the_defaults_and_says_so():
    d = init_detect.Detected(project_dir=Path("."), requires_python=">=3.12")
    plan = init.choose(d, ())
    assert plan.values["python"] == [p for p in config.DEFAULT_PYTHONS if p >= "3.12"]
    assert any("no supported CPython found" in note for note in plan.notes)


@pytest.mark.parametrize("example", ["torch-cuda-ext", "c-ext-stub"])
def test_written_table_reads_back_and_loads_through_config(tmp_path, example):
    """table_text is TOML whose table equals the plan, and config.py accepts every key in it."""
    root = Path(__file__).resolve().parents[4] / "examples" / example
    d = init_detect.detect(root, {"build-system": tomllib.loads((root / "pyproject.toml").read_text())["build-system"]})
    plan = init.choose(d, ("3.10", "3.11"))
    parsed = tomllib.loads(init.table_text(plan, d))["tool"]["kestrel-release"]
    assert parsed == plan.values
    errors: list[str] = []
    cfg = config_parse.build(tmp_path, "x", "1.0", parsed, {}, errors)
    assert errors == [] and cfg.python == ("3.10", "3.11") and cfg.abi == "abi3"
    assert cfg.verify.allow[0].endswith("/**")


@pytest.mark.parametrize(
    ("url", "repo"),
    [
        ("https://github.com/acme/widgets.git", "acme/widgets"),
        ("https://x-access-token:abc@github.com/acme/widgets", "acme/widgets"),
        ("git@github.com:acme/wid.gets.git", "acme/wid.gets"),
        ("ssh://git@github.com/acme/widgets/", "acme/widgets"),
        ("https://gitlab.com/acme/widgets.git", None),
        ("https://github.com/acme", None),
        ("", None),
    ],
)
def test_github_repo_from_the_remote_url(url, repo):
    assert init.github_repo(url) == repo


def test_psutil_shape_kwargs_dict_and_computed_limited_api(tmp_path):
    """setup(**kwargs) with kwargs = dict(name=...), py_limited_api from a dict, the floor computed."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
                "setup.py": """
            MIN_PY_VERSION = (3, 8)
            _abi3_tag = "cp{}{}".format(*MIN_PY_VERSION)
            py_limited_api = {"py_limited_api": True}
            options = {"bdist_wheel": {"py_limited_api": _abi3_tag}}
            ext = Extension("psutil._psutil_linux", sources=["psutil/_psutil_linux.c"], **py_limited_api)
            def main():
                kwargs = dict(name='psutil', version=VERSION, ext_modules=[ext])
                setup(**kwargs)
        """,
                "psutil/__init__.py": '__version__ = "8.0.0"\n',
            },
        )
    )
    assert (d.name, d.version, d.abi3) == ("psutil", "8.0.0", "abi3")
    plan = init.choose(d, ("3.12",))
    assert plan.values["abi"] == "abi3" and plan.comments["abi"].startswith("abi3:")


def test_flit_dynamic_version_in_a_package_named_build(tmp_path):
    """pypa/build's shape: flit, dynamic version read from src/build/__init__.py."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["flit-core"]\nbuild-backend = "flit_core.buildapi"\n'
                '[project]\nname = "build"\ndynamic = ["version"]\n',
                "src/build/__init__.py": "__version__ = '1.5.0'\n",
            },
        )
    )
    assert (d.backend, d.packages) == ("flit", {"build": "src/build"})
    assert (d.version, d.version_file) == ("1.5.0", ("src/build/__init__.py", "__version__ = '{version}'"))


def test_odd_value_types_do_not_crash_detection(tmp_path):
    """Valid TOML with unexpected types: detection degrades to "not found", never a traceback."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": "[build-system]\nrequires = 5\nbuild-backend = 7\n[project]\nname = 1\nversion = 2\n"
                'dynamic = "version"\nrequires-python = 3\n'
                '[tool]\nhatch = 1\nsetuptools = { dynamic = "x" }\nscikit-build = { metadata = [1] }\n'
                'distutils = { bdist_wheel = 3 }\nmeson-python = "yes"\n',
            },
        )
    )
    assert (d.backend, d.name, d.version, d.requires_python, d.abi3) == ("generic", None, None, None, None)
    assert init.choose(d, ("3.12",)).values["python"] == ["3.12"]


# DT_NEEDED of a torch CUDAExtension (extension-cpp on torch 2.11+cu130, docs/real-packages.md section 3)
# and of examples/c-ext-stub: all come from the user's torch install, none may be grafted.
TORCH_EXTENSION_NEEDED = [
    "libc10.so",
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_python.so",
    "libc10_cuda.so",
    "libtorch_cuda.so",
    "libcudart.so.13",
    "libcudart.so.12",
]


@pytest.mark.parametrize("soname", TORCH_EXTENSION_NEEDED)
def test_default_excludes_cover_what_the_examples_link(soname):
    import fnmatch

    assert any(fnmatch.fnmatchcase(soname, pattern) for pattern in config.DEFAULT_EXCLUDES)
    # init writes no exclude list of its own, so these defaults are what its table gets
    d = detect_example("torch-cuda-ext")
    assert "exclude" not in init.choose(d, ("3.12",)).values.get("build", {})


def detect_example(name: str) -> init_detect.Detected:
    root = Path(__file__).resolve().parents[4] / "examples" / name
    return init_detect.detect(
        root, {"build-system": tomllib.loads((root / "pyproject.toml").read_text())["build-system"]}
    )


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "setuptools.build_meta"\n[project]\nname = "v"\n'
                'dynamic = ["version"]\n[tool.setuptools.dynamic]\nversion = { file = "VERSION" }\n',
                "VERSION": "3.1.4\n",
            },
            (("VERSION", "{version}"), "3.1.4"),
        ),
        (
            {"setup.py": "setup(name='v', version=open('version.txt').read().strip())\n", "version.txt": "0.9\n"},
            (("version.txt", "{version}"), "0.9"),
        ),
        (
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "mesonpy"\n[project]\nname = "v"\ndynamic = ["version"]\n',
                "meson.build": "project('v', 'c', version : '1.2.0', license: 'MIT')\n",
            },
            (("meson.build", "version : '{version}'"), "1.2.0"),
        ),
        (
            {
                "pyproject.toml": '[build-system]\nbuild-backend = "pdm.backend"\n[project]\nname = "v"\ndynamic = ["version"]\n'
                '[tool.pdm.version]\nsource = "file"\npath = "v/__about__.py"\n',
                "v/__about__.py": "__version__: str = '5.0'\n",
            },
            (("v/__about__.py", "__version__: str = '{version}'"), "5.0"),
        ),
    ],
)
def test_version_files_named_by_the_backend(tmp_path, files, expected):
    d = detect(make(tmp_path, files))
    assert (d.version_file, d.version) == expected and d.version_source == expected[0][0]
    # `version bump` finds exactly this version through the pattern
    assert version_files._regex(expected[0][1]).findall((tmp_path / expected[0][0]).read_text()) == [expected[1]]


@pytest.mark.parametrize(
    ("requires", "with_torch", "isolation", "extra"),
    [
        ('["setuptools"]', ("3.12",), False, None),  # every Python has its own torch (an offline GPU host)
        ('["setuptools"]', (), None, ["torch"]),  # not every Python has torch: each build env installs it
        ('["setuptools", "torch>=2.6"]', (), None, None),
    ],
)
def test_setup_py_importing_torch_without_listing_it(tmp_path, requires, with_torch, isolation, extra):
    """A Python without torch cannot build without isolation (setup.py fails at `import torch`): then the
    build env gets torch through build.requires, the project's own files unchanged."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": f'[build-system]\nrequires = {requires}\nbuild-backend = "setuptools.build_meta"\n',
                "setup.py": "import torch\nfrom torch.utils.cpp_extension import CUDAExtension\nsetup(name='t', version='1.0')\n",
            },
        )
    )
    d.pythons_with_torch = with_torch
    plan = init.choose(d, ("3.12",))
    assert plan.values["build"].get("isolation") is isolation
    assert plan.values["build"].get("requires") == extra
    assert any("torch" in note for note in plan.notes)  # which torch the wheel is built against is said


def test_every_value_type_renders_with_its_comment(tmp_path):
    """Booleans, strings, lists, inline tables and arrays of tables all carry their comment."""
    d = init_detect.Detected(project_dir=tmp_path)
    plan = init.Plan(
        values={
            "python": ["3.12"],
            "abi": "abi3",
            "requires_gpu": False,
            "version_files": [{"path": "p/__init__.py", "pattern": '__version__ = "{version}"'}],
            "build": {"isolation": False, "env": {"A": "b"}},
        },
        comments={
            "python": "c-python",
            "abi": "c-abi",
            "requires_gpu": "c-gpu",
            "version_files": "c-vf",
            "build.isolation": "c-iso",
            "build.env": "c-env",
        },
    )
    text = init.table_text(plan, d)
    assert tomllib.loads(text)["tool"]["kestrel-release"] == plan.values
    for comment in plan.comments.values():
        assert f"# {comment}" in text


def test_a_version_line_that_is_not_unique_is_not_written(tmp_path):
    """setup.py holding two different versions: `version bump` would refuse the pattern, so init leaves it out."""
    d = detect(
        make(
            tmp_path,
            {
                "setup.py": "setup(name='two', version='1.0')\nif False:\n    setup(name='two', version='2.0')\n",
            },
        )
    )
    assert d.version_file is None and "add version_files by hand" in d.version_source
    assert "version_files" not in init.choose(d, ("3.12",)).values


def test_setup_py_with_its_own_gencode_list_gets_that_list_and_no_ignored_env(tmp_path):
    """causal-conv1d's shape: the written table promises what setup.py compiles, not sm_90a via an
    env variable torch ignores; -lineinfo is allowed on purpose."""
    root = make(
        tmp_path,
        {
            "pyproject.toml": SETUPTOOLS,
            "setup.py": """
            from torch.utils.cpp_extension import CUDAExtension
            cc_flag = ["-gencode", "arch=compute_80,code=sm_80"]
            if bare_metal_version >= Version("12.8"):
                cc_flag += ["-gencode", "arch=compute_120,code=sm_120"]
            setup(name="cc1d", version="1.0", ext_modules=[CUDAExtension("cc1d_cuda", ["a.cu"],
                  extra_compile_args={"nvcc": ["-O3", "-lineinfo"] + cc_flag})])
            """,
            "a.cu": "",
        },
    )
    d = detect(root)
    plan = init.choose(d, ("3.12",))
    text = init.table_text(plan, d)
    table = tomllib.loads(text)["tool"]["kestrel-release"]
    assert table["cuda_arch"] == ["80", "120"]
    assert "build" not in table  # no TORCH_CUDA_ARCH_LIST: setup.py's -gencode wins
    assert table["verify"]["required_sass"] == ["sm_80"]  # sm_120 only with CUDA >= 12.8
    assert table["verify"]["allow_debug"] is True
    assert "compiles sm_80, sm_120 (the -gencode list at setup.py:2)" in text
    assert "# setup.py:6 passes -lineinfo (line tables for profilers)" in text
    assert any(n.startswith("setup.py:2 adds sm_120 only with newer toolkits") for n in plan.notes)
    errors: list[str] = []
    config_parse.build(tmp_path, "x", "1.0", table, {}, errors)
    assert errors == []


def test_a_cuda_build_gated_on_a_visible_gpu_is_forced_by_its_own_variable(tmp_path):
    """chamferdist and torch-spline-conv compile CUDAExtension only under torch.cuda.is_available() (or their
    FORCE_CUDA): on a GPU-less build host the wheel would carry no CUDA code; init sets the variable."""
    d = detect(
        make(
            tmp_path,
            {
                "pyproject.toml": '[build-system]\nrequires = ["setuptools", "torch"]\n',
                "setup.py": "import os, torch\nfrom torch.utils.cpp_extension import CUDAExtension\n"
                "if torch.cuda.is_available() or os.getenv('FORCE_CUDA', '0') == '1':\n    ext = CUDAExtension\n",
            },
        )
    )
    plan = init.choose(d, ("3.12",))
    assert plan.values["build"]["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0a", "FORCE_CUDA": "1"}
    assert "FORCE_CUDA: setup.py:3 compiles CUDA only where torch sees a GPU" in plan.comments["build.env"]
