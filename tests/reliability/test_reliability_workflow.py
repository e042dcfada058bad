"""The generated CI workflow passes zizmor (GitHub Actions security linter) with no findings."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CI_TOOL_ENV, KERNELS, run_cli


def _zizmor() -> list[str]:
    exe = shutil.which("zizmor", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("zizmor is not installed (it is in the dev dependency group: uv sync)")
    return [exe]


@pytest.mark.parametrize("project", [KERNELS, None], ids=["kernels", "mini"])
def test_generated_workflow_has_no_zizmor_findings(tmp_path: Path, project: Path | None) -> None:
    if project is None:
        from tests import factories

        project = factories.make_c_ext_project(tmp_path / "p")
    workflow = tmp_path / "kernels-release.yml"
    result = run_cli(["ci", "init", "--project", str(project), "--output", str(workflow)], env=CI_TOOL_ENV)
    assert result.code == 0, result.output
    assert workflow.read_text().strip()
    lint = subprocess.run(
        [*_zizmor(), "--offline", "--no-progress", str(workflow)], capture_output=True, text=True, timeout=120
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "No findings" in lint.stdout + lint.stderr, lint.stdout + lint.stderr


def test_zizmor_does_flag_an_unsafe_workflow(tmp_path: Path) -> None:
    """Control: the check above can fail (zizmor really lints, offline)."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request_target\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    lint = subprocess.run(
        [*_zizmor(), "--offline", "--no-progress", str(bad)], capture_output=True, text=True, timeout=120
    )
    assert lint.returncode != 0, lint.stdout + lint.stderr
