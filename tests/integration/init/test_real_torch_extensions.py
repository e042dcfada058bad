"""`init --yes` on real third-party torch extension sdists from PyPI (sha256-pinned by
tools/fetch-real-extensions, in the cache .ci/run fills), each made a fresh git repository as a new user
would: the table it writes is the one that builds them on this kind of machine (no GPU, Pythons without
torch). Their full rehearsals (tens of minutes of nvcc on 2 cores) are recorded in
docs/evidence/tested-on.md, not run here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kestrel_release.adapters import pythons, torch_probe
from kestrel_release.errors import KestrelError
from tests.helpers import ROOT, need, python_version, run_cli
from tests.integration.init.test_init_cli import table

FETCH = ROOT / "tools" / "fetch-real-extensions"


@pytest.fixture(scope="module")
def sdists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("real-ext")
    got = subprocess.run(["bash", str(FETCH), "--unpack", str(out)], capture_output=True, text=True)
    if got.returncode != 0:  # offline with an empty cache; .ci/run fills it first
        need("the pinned sdists of tools/fetch-real-extensions", f"run {FETCH} once online ({got.stderr.strip()})")
    return out


def _init(sdists: Path, top: str) -> dict:
    project = sdists / top
    for argv in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sdist"],
    ):
        subprocess.run(["git", *argv], cwd=project, check=True)
    result = run_cli(["init", "--yes", "--python", python_version()], cwd=project)
    assert result.code == 0, result.output
    return table(project)


def _has_torch() -> bool:
    try:
        return torch_probe.installed(pythons.find_interpreter(python_version()))
    except KestrelError:
        return False


def test_chamferdist_gets_torch_in_its_build_env_and_its_cuda_forced(sdists: Path) -> None:
    """setup.py imports torch without declaring it, and compiles CUDA only where torch sees a GPU."""
    got = _init(sdists, "chamferdist-1.0.3")
    build = got["build"]
    assert build["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0a", "FORCE_CUDA": "1"}
    if _has_torch():  # a host whose Python has its own torch builds with it
        assert build["isolation"] is False and "requires" not in build
    else:
        assert build["requires"] == ["torch"] and "isolation" not in build
    assert got["version_files"] == [{"path": "chamferdist/version.py", "pattern": '__version__ = "{version}"'}]


def test_torch_spline_conv_gets_no_variable_for_the_cmake_file_setup_py_never_runs(sdists: Path) -> None:
    got = _init(sdists, "torch_spline_conv-1.2.2")
    assert got["build"]["env"] == {"TORCH_CUDA_ARCH_LIST": "9.0a", "FORCE_CUDA": "1"}  # no CUDAARCHS
    assert [v["path"] for v in got["version_files"]] == ["setup.py", "torch_spline_conv/__init__.py"]


def test_torchsort_declares_torch_and_gates_cuda_on_nvcc_not_on_a_gpu(sdists: Path) -> None:
    got = _init(sdists, "torchsort-0.1.10")
    assert got["build"] == {"env": {"TORCH_CUDA_ARCH_LIST": "9.0a"}}
    assert got["version_files"] == [{"path": "setup.py", "pattern": 'version="{version}"'}]
    # include_package_data ships its extension sources inside the package: isotonic_cpu.cpp and isotonic_cuda.cu
    assert "*.cpp" not in got["verify"]["forbid"] and "*.cu" not in got["verify"]["forbid"]
