"""The bundled kernels/ built, verified and smoke-tested for CPython 3.14 and 3.15 (a cp314 and a cp315 wheel).

This machine's Debian 12 has neither Python and the distribution's source packages are not reachable; Debian
unstable's binary packages are, and need its glibc. So `.ci/container-root-sid` makes, once, a sid root by
`debootstrap --variant=minbase` holding python3.14 and python3.15 (with headers and venv), gcc, CMake and
Ninja, into a cache outside the clone, and the build runs there by the chroot engine (as a user's plain root,
test_build_container_plain.py); the precompile step runs on the host (one (toolkit, arch) pair, as
test_build_container_kernels.py does, to keep it short). The smoke test is a user's: uv installs each wheel
for that root's interpreter (tags checked against its glibc) and imports it; the extension reaches the driver
loader and says why it stops (no libcuda here). Under CI this test never skips.
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
from tests.helpers import ROOT, need, run_cli
from tests.integration.build_wheels.test_build_container import CACHE, CHROOT

pytestmark = pytest.mark.slow
SID = CACHE / "sid-py314-py315"  # made by .ci/container-root-sid
PYTHONS = ("3.14", "3.15")


@pytest.fixture(scope="module")
def sid_root() -> Path:
    if not (SID / ".complete").exists():
        need(f"a Debian sid root with Python 3.14 and 3.15 at {SID}", "run .ci/container-root-sid as root")
    if os.geteuid() != 0:
        need("root (the chroot engine runs as root)", "run the tests as root")
    return SID


def _in_root(root: Path, argv: list[str], inside: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "UV_CACHE_DIR": f"{inside}/cache"}
    return subprocess.run([CHROOT, str(root), *argv], env=env, capture_output=True, text=True, timeout=600)


SMOKE = (
    "import sys; sys.path.insert(0, sys.argv[1]); import os\n"
    "os.environ['KESTREL_KERNELS_LIBCUDA'] = '/nonexistent/libcuda.so.1'\n"
    "import kestrel_kernels as kk, kestrel_kernels._C\n"
    "print(kk.__version__, '%d.%d' % sys.version_info[:2])\n"
    "class Dev:  # anything speaking __cuda_array_interface__\n"
    "    __cuda_array_interface__ = {'shape': (4, 8), 'typestr': '<f2', 'data': (0x7F0000000000, False),"
    " 'version': 3, 'strides': None}\n"
    "try:\n    kk.silu_and_mul(Dev())\nexcept kk.KestrelKernelsError as exc:\n    print(exc)\n"
)


def _smoke_in_root(root: Path, wheel: Path, python: str) -> list[str]:
    """Install `wheel` for the root's python`python` with uv (offline, its tags checked against the root) and
    import it; the lines the import printed."""
    work = root / "tmp" / f"kestrel-release-test-{os.getpid()}-{python}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        shutil.copy2(ROOT / ".venv" / "bin" / "uv", work / "uv")
        shutil.copy2(wheel, work / wheel.name)
        inside = "/" + work.relative_to(root).as_posix()
        install = _in_root(root, [f"{inside}/uv", "pip", "install", "--offline", "--no-deps", "--python",
                                  f"/usr/bin/python{python}", "--target", f"{inside}/site",
                                  f"{inside}/{wheel.name}"], inside)  # fmt: skip
        assert install.returncode == 0, install.stderr
        run = _in_root(root, [f"/usr/bin/python{python}", "-c", SMOKE, f"{inside}/site"], inside)
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout.splitlines()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_kernels_get_a_cp314_and_a_cp315_wheel_that_verify_and_import(tmp_path: Path, sid_root: Path):
    project = copy_kernels(tmp_path / "kernels")
    env = {
        "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "chroot",
        "KESTREL_RELEASE_BUILD_PRECOMPILE_IN": "host",
        "KESTREL_RELEASE_BUILD_PLAT": "auto",  # the root's glibc decides the floor
        "KESTREL_RELEASE_CUDA": "13.0",
        "KESTREL_RELEASE_CUDA_ARCH": "90a",
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
    }
    python = ",".join(PYTHONS)
    argv = ["build", "--project", str(project), "--python", python, "--container", str(sid_root), "--no-gpu-check"]
    result = run_cli([*argv, "--json"], env=env, timeout=1800)
    assert result.code == 0, result.output[-4000:]
    wheels = {
        row["filename"].split("-")[2]: project / "dist-all" / row["filename"]
        for row in json.loads(result.stdout)["wheels"]
    }
    assert sorted(wheels) == ["cp314", "cp315"], wheels
    # sid's glibc is 2.43, but the floor is what the binaries use (dlopen: GLIBC_2.34), as kernels/ pins
    floors = {row["glibc_floor"] for row in json.loads(result.stdout)["wheels"]}
    assert floors == {"2.34"}, floors
    for tag, wheel in wheels.items():
        assert f"-{tag}-{tag}-manylinux_2_" in wheel.name, wheel.name
        with zipfile.ZipFile(wheel) as zf:
            (so,) = [n for n in zf.namelist() if n.endswith(".so")]
            assert so == f"kestrel_kernels/_C.cpython-{tag[2:]}-x86_64-linux-gnu.so", so
            assert any(n.endswith(".fatbin") for n in zf.namelist())  # the host-precompiled kernels went in

    verified = run_cli(["verify", "--json", "--project", str(project), "--python", python], env=env)
    assert verified.code == 0, verified.output[-4000:]
    assert sorted(w["filename"] for w in json.loads(verified.stdout)["wheels"]) == sorted(
        w.name for w in wheels.values()
    )

    for version, tag in zip(PYTHONS, ("cp314", "cp315"), strict=True):
        lines = _smoke_in_root(sid_root, wheels[tag], version)
        assert lines[0] == f"0.1.0 {version}", lines
        assert lines[1].startswith("no CUDA driver: could not load /nonexistent/libcuda.so.1"), lines


def test_a_free_threaded_python_the_root_lacks_is_one_preflight_line(tmp_path: Path, sid_root: Path):
    """Debian ships no free-threaded build: asked for 3.14t, the build says where it looked (manylinux's layout)."""
    project = copy_kernels(tmp_path / "kernels")
    env = {"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "chroot", "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["build", "--project", str(project), "--python", "3.14t", "--container", str(sid_root), "--no-gpu-check"]
    result = run_cli(argv, env=env, timeout=600)
    assert result.code == 3, result.output[-3000:]
    assert (
        f"the image {sid_root} has no Python 3.14t (looked for /opt/python/cp314-cp314t/bin/python and python3.14t)"
        in result.stderr
    ), result.stderr
