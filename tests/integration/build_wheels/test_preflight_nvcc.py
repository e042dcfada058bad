"""A build that will need nvcc stops at preflight (exit 3, before any side effect) when the build would
not find it: `build` and `release --rehearse` with a PATH that lacks nvcc."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.factories import make_project
from tests.helpers import assert_one_line_error, run_cli

PRECOMPILE = 'precompile = ["{python}", "-c", "import os; os.makedirs(\'pre\')"]\nprecompile_outputs = "pre"\n'


def _no_nvcc_env() -> dict[str, str]:
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "nvcc").exists()
    )
    return {"PATH": path, "CUDACXX": "", "CUDA_HOME": "", "CUDA_PATH": ""}


def _project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "kernels", pythons=("3.11",))
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(
        text.replace("[tool.kestrel-release]\n", "[tool.kestrel-release]\n" + PRECOMPILE, 1)
    )
    return root


def _untouched(project: Path, pyproject: bytes) -> None:
    assert not (project / "pre").exists()  # the precompile step never ran
    assert not list(project.glob("dist-all/*.whl"))  # nothing built (release keeps its step state there)
    assert (project / "pyproject.toml").read_bytes() == pyproject  # no bump


def test_build_without_nvcc_on_path_stops_at_preflight(tmp_path):
    project = _project(tmp_path)
    before = (project / "pyproject.toml").read_bytes()
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=_no_nvcc_env())
    assert_one_line_error(result, 3, "nvcc", "precompile step")
    assert "PATH" in result.stderr or "CUDACXX" in result.stderr  # the fix is named
    _untouched(project, before)


def test_release_rehearsal_without_nvcc_on_path_stops_at_preflight(tmp_path):
    project = _project(tmp_path)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "init"],
        cwd=project,
        check=True,
    )
    before = (project / "pyproject.toml").read_bytes()
    result = run_cli(
        [
            "release",
            "--project",
            str(project),
            "--rehearse",
            "--bump",
            "patch",
            "--yes",
            "--no-gpu-check",
            "--allow-dirty",
        ],
        env={**_no_nvcc_env(), "HOME": str(tmp_path)},
    )
    assert_one_line_error(result, 3, "step 'preflight'", "CUDA toolkit (nvcc)", "precompile step")
    _untouched(project, before)
