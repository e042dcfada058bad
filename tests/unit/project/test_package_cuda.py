"""package_cuda reads what a package's own build files make nvcc compile (setup.py as an AST, never run)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release.project import package_cuda

# causal-conv1d 1.7.0's shape: "-gencode" and its value as separate list items, archs added under
# nvcc-version tests, the whole CUDA build under `if not SKIP_CUDA_BUILD`, -lineinfo in the nvcc flags.
CAUSAL_CONV1D = """
    import os
    from torch.utils.cpp_extension import CUDAExtension, CUDA_HOME
    cc_flag = []
    if not SKIP_CUDA_BUILD:
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_75,code=sm_75")
        cc_flag.append("-gencode")
        cc_flag.append("arch=compute_80,code=sm_80")
        if bare_metal_version >= Version("12.8"):
            cc_flag.append("-gencode")
            cc_flag.append("arch=compute_120,code=sm_120")
        ext = CUDAExtension("x_cuda", ["a.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-lineinfo"] + cc_flag})
"""


def read(tmp_path: Path, files: dict[str, str], env: dict[str, str] | None = None) -> package_cuda.Compiled:
    for rel, text in files.items():
        (tmp_path / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    return package_cuda.read(tmp_path, env or {})


def test_split_gencode_items_version_gates_and_lineinfo(tmp_path):
    got = read(tmp_path, {"setup.py": CAUSAL_CONV1D}, {"TORCH_CUDA_ARCH_LIST": "9.0a"})
    assert got.names() == ["75", "80", "120"]
    assert got.names(conditional=False) == ["75", "80"]
    assert (got.source, str(got.at)) == ("-gencode", "setup.py:6")
    assert [(flag, str(place)) for flag, place in got.debug] == [("-lineinfo", "setup.py:13")]
    assert got.ignored == ["build.env TORCH_CUDA_ARCH_LIST is ignored: setup.py:6 passes its own -gencode list"]


@pytest.mark.parametrize(
    ("flags", "sass", "ptx"),
    [
        ('"-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"', ["90a"], ["90a"]),
        ('"--generate-code=arch=compute_100a,code=sm_100a"', ["100a"], []),
        ('"-gencode", "arch=compute_80,code=\\"sm_80,compute_80\\""', ["80"], ["80"]),
        ('"-arch=sm_86"', ["86"], ["86"]),
        ('"-arch", "sm_89"', ["89"], ["89"]),
        ('"--gpu-architecture=compute_90"', [], ["90"]),
    ],
)
def test_every_spelling_of_an_arch_flag(tmp_path, flags, sass, ptx):
    got = read(tmp_path, {"setup.py": f'nvcc = [{flags}, "-O3"]\n'})
    assert (got.names(), sorted(a.name for a in got.ptx)) == (sass, ptx)


def test_arch_list_and_cuda_home_set_in_setup_py_win_over_build_env(tmp_path):
    setup = 'import os\nos.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0a+PTX"\nos.environ.setdefault("CUDA_HOME", "/opt/cuda-12.8")\n'
    got = read(tmp_path, {"setup.py": setup}, {"TORCH_CUDA_ARCH_LIST": "10.0"})
    assert (got.names(), [a.name for a in got.ptx], str(got.at)) == (["80", "90a"], ["90a"], "setup.py:2")
    assert (got.cuda_home[0], str(got.cuda_home[1])) == ("/opt/cuda-12.8", "setup.py:3")  # type: ignore[index]
    assert got.ignored and not got.hard_coded


def test_cmake_generator_is_not_device_debug_and_cmake_archs_are_read(tmp_path):
    got = read(
        tmp_path,
        {
            "setup.py": 'args = ["cmake", "-G", "Ninja", "."]\n',
            "CMakeLists.txt": "project(a LANGUAGES CUDA)\n\nset(CMAKE_CUDA_ARCHITECTURES 80-real 90a)\n",
        },
    )
    assert got.debug == []
    assert (got.names(), [a.name for a in got.ptx], str(got.at)) == (["80", "90a"], ["90a"], "CMakeLists.txt:3")


def test_build_env_alone_is_the_list_and_nothing_is_a_no_list(tmp_path):
    assert read(tmp_path, {"setup.py": "x = 1\n"}, {"TORCH_CUDA_ARCH_LIST": "8.0 9.0"}).names() == ["80", "90"]
    got = read(tmp_path, {"setup.py": "x = 1\n"})
    assert got.archs == [] and package_cuda.reconcile(("90a",), (), got) is None


def test_reconcile_names_the_list_and_the_one_edit(tmp_path):
    got = read(tmp_path, {"setup.py": CAUSAL_CONV1D})
    status, detail, fix = package_cuda.reconcile(("90a",), (), got)  # type: ignore[misc]
    assert status == "fail"
    assert detail == "cuda_arch asks for sm_90a, but setup.py:6 (-gencode) compiles only sm_75, sm_80, sm_120"
    assert fix == 'set cuda_arch = ["75", "80", "120"] in pyproject.toml (the list at setup.py:6)'
    assert package_cuda.reconcile(("75", "80"), (), got) is None
    sm70 = read(tmp_path, {"setup.py": '"-arch=sm_70"'})
    assert package_cuda.reconcile(("70",), ("13.0",), sm70) == (
        "fail",
        "CUDA 13.0 (cuda) cannot compile sm_70, which setup.py:1 (-gencode) asks for",
        "drop sm_70 from the list at setup.py:1 (-gencode), or set cuda to a toolkit that compiles them",
    )
