"""The GPU check is for packages that build CUDA code: a plain C extension (psutil-like: required_sass = [],
no precompile, no .cu sources) gets no "no sm_90a GPU ... cross-compiled" warning from build or doctor;
the same project that asks for SASS, or demands a GPU, still gets the check."""

from __future__ import annotations

import json

import pytest

from kestrel_release.adapters import gpu
from tests.factories import make_c_ext_project
from tests.helpers import assert_one_line_error, python_version, run_cli

no_gpu_only = pytest.mark.skipif(gpu.has_arch(gpu.detect()[0], "90a"), reason="this machine has an sm_90 GPU")
ONE_PY = {"KESTREL_RELEASE_PYTHON": python_version()}  # the one make_c_ext_project builds for


def _gpu_row(result) -> dict:
    return next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "GPU")


@no_gpu_only
def test_doctor_gpu_row_for_a_package_without_cuda(tmp_path):
    project = make_c_ext_project(tmp_path / "p")
    row = _gpu_row(run_cli(["doctor", "--project", str(project), "--json"], env=ONE_PY))
    assert row["status"] == "ok" and "not needed" in row["detail"]
    row = _gpu_row(
        run_cli(
            ["doctor", "--project", str(project), "--json"],
            env={**ONE_PY, "KESTREL_RELEASE_VERIFY_REQUIRED_SASS": "sm_90a"},
        )
    )
    assert row["status"] == "warn" and "cross-compiled" in row["detail"]
    (project / "src" / "k.cu").write_text("__global__ void k() {}\n")
    row = _gpu_row(run_cli(["doctor", "--project", str(project), "--json"], env=ONE_PY))
    assert row["status"] != "ok" and "no sm_90a GPU" in row["detail"]


@no_gpu_only
def test_build_refuses_only_when_the_config_demands_a_gpu(tmp_path):
    project = make_c_ext_project(tmp_path / "p")
    result = run_cli(["build", "--project", str(project)], env={"KESTREL_RELEASE_REQUIRES_GPU": "true"})
    assert_one_line_error(result, 3, "needs an sm_90a GPU", "--no-gpu-check")
    assert not (project / "dist-all").exists()


@pytest.mark.slow
@no_gpu_only
def test_build_of_a_package_without_cuda_prints_no_gpu_warning(tmp_path):
    project = make_c_ext_project(tmp_path / "p")
    result = run_cli(["build", "--project", str(project)])
    assert result.code == 0, result.output
    assert "GPU" not in result.stderr and "cross-compiled" not in result.stderr
    assert len(list((project / "dist-all").glob(f"mini_ext-0.1.0-cp{python_version().replace('.', '')}-*.whl"))) == 1
