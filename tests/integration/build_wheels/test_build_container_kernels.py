"""The bundled kernels/ built inside an older image: a wheel with that image's glibc floor that runs there.

Before: only a C extension for bullseye's Python 3.9 was tried in the image (kernels/ needs 3.10+, which
bullseye lacks), so nothing showed that a scikit-build-core + CMake project with host-precompiled kernels
comes out of an image portable. The image is the bullseye root plus a CPython 3.11 built inside it at
/opt/python/cp311-cp311 (manylinux's layout) and CMake >= 3.21 on PATH (bullseye's 3.18 is too old for
kernels/; manylinux images carry one: scikit-build-core's dynamic cmake requirement is the image's), made once by `.ci/container-root --py311` into a cache outside
the clone and imported into podman; the precompile step runs on the host (one (toolkit, arch) pair, as in
test_build_real.py, to keep it short).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.conftest import copy_kernels
from tests.helpers import ROOT, run_cli
from tests.integration.build_wheels.test_build_container import CACHE, CHROOT, _missing

pytestmark = pytest.mark.slow
IMAGE = "localhost/kestrel-release-ci/bullseye-py311:1"  # made by .ci/container-root --py311
PY311_ROOT = CACHE / "bullseye-py311-root"
PYTHON = "/opt/python/cp311-cp311/bin/python3.11"


@pytest.fixture(scope="module")
def py311_image() -> str:
    if not (PY311_ROOT / ".complete").exists():
        _missing(f"no bullseye root with Python 3.11 at {PY311_ROOT} (run .ci/container-root --py311 as root)")
    if os.geteuid() != 0:
        _missing("the test image and its root need root")
    if shutil.which("podman") is None:
        _missing("podman is not installed")
    if subprocess.run(["podman", "image", "exists", IMAGE]).returncode != 0:
        _missing(f"podman has no image {IMAGE} (run .ci/container-root --py311)")
    return IMAGE


def _in_root(argv: list[str], inside: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "UV_CACHE_DIR": f"{inside}/cache"}
    return subprocess.run([CHROOT, str(PY311_ROOT), *argv], env=env, capture_output=True, text=True, timeout=600)


def _check_runs_in_root(wheel: Path) -> None:
    """The wheel installs for the root's Python 3.11 (uv checks its tags against glibc 2.31), imports
    without a GPU, and its extension reaches the driver loader (a clear error: no libcuda here)."""
    work = PY311_ROOT / "tmp" / f"kestrel-release-test-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        shutil.copy2(ROOT / ".venv" / "bin" / "uv", work / "uv")
        shutil.copy2(wheel, work / wheel.name)
        inside = "/" + work.relative_to(PY311_ROOT).as_posix()
        install = _in_root([f"{inside}/uv", "pip", "install", "--offline", "--no-deps", "--python", PYTHON,
                            "--target", f"{inside}/site", f"{inside}/{wheel.name}"], inside)  # fmt: skip
        assert install.returncode == 0, install.stderr
        code = (
            f"import sys; sys.path.insert(0, '{inside}/site'); import os\n"
            "os.environ['KESTREL_KERNELS_LIBCUDA'] = '/nonexistent/libcuda.so.1'\n"
            "import kestrel_kernels as kk, kestrel_kernels._C\n"
            "print(kk.__version__, sys.version_info[:2] == (3, 11))\n"
            "class Dev:  # anything speaking __cuda_array_interface__\n"
            "    __cuda_array_interface__ = {'shape': (4, 8), 'typestr': '<f2', 'data': (0x7F0000000000, False),"
            " 'version': 3, 'strides': None}\n"
            "try:\n    kk.silu_and_mul(Dev())\nexcept kk.KestrelKernelsError as exc:\n    print(exc)\n"
        )
        run = _in_root([PYTHON, "-c", code], inside)
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        assert lines[0] == "0.1.0 True", run.stdout
        # _C dlopen()ed the driver (GLIBC_2.34's dlopen had it been linked on this host) and said why it failed.
        assert lines[1].startswith("no CUDA driver: could not load /nonexistent/libcuda.so.1"), run.stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_kernels_built_in_the_image_install_and_import_on_bullseye(tmp_path: Path, py311_image: str):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        _missing("nvcc is not installed (the precompile step runs on the host)")
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    toolkit = version.split("release ", 1)[1].split(",", 1)[0]
    project = copy_kernels(tmp_path / "kernels")
    env = {
        "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podman",
        "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "host",
        "KESTREL_RELEASE_BUILD_PLAT": "auto",  # kernels/ pins manylinux_2_34: the host's floor, not the image's
        "KESTREL_RELEASE_CUDA": toolkit,
        "KESTREL_RELEASE_CUDA_ARCH": "90a",
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
    }
    argv = ["build", "--project", str(project), "--python", "3.11", "--container", py311_image, "--no-gpu-check"]
    result = run_cli([*argv, "--json"], env=env, timeout=1800)
    assert result.code == 0, result.output[-4000:]
    doc = json.loads(result.stdout)
    assert doc["precompile"]["ran_in"] == "host"
    (row,) = doc["wheels"]
    assert "-cp311-cp311-manylinux" in row["filename"], row
    assert tuple(int(p) for p in row["glibc_floor"].split(".")) <= (2, 31), row
    wheel = project / "dist-all" / row["filename"]
    with zipfile.ZipFile(wheel) as zf:
        (so,) = [n for n in zf.namelist() if n.endswith(".so")]
        assert b"GLIBC_2.34" not in zf.read(so)  # a host build's dlopen would need it
        assert any(n.endswith(".fatbin") for n in zf.namelist())  # the host-precompiled kernels went in
    _check_runs_in_root(wheel)
    verified = run_cli(["verify", "--json", "--project", str(project), "--python", "3.11"], env=env)
    assert verified.code == 0, verified.output[-4000:]
