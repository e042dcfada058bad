"""release --from stops in preflight (exit 3, nothing uploaded) when its wheels do not fit the targets' limits,
with the numbers: what is over by how much, and what each lever would give."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from kestrel_release.ui import sizes
from tests.factories import make_c_ext_project, make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli


def _env(tmp_path: Path, box: PypiSandbox, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "TWINE_REPOSITORY_URL": box.upload_url,
        "TWINE_USERNAME": box.username,
        "TWINE_PASSWORD": box.password,
        "GH_TOKEN": "",
        "GITHUB_TOKEN": "",
        **extra,
    }


def test_a_release_over_the_project_limit_stops_in_preflight_with_the_levers(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    wheels = make_dist(project / "dist-all", pythons=("3.12", "3.13"), payload_size=256 * 1024)
    total = sum(w.stat().st_size for w in wheels)
    args = ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "testpypi"]
    with PypiSandbox(directory=tmp_path / "index") as box:
        budget = {"KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET": str(total - 1)}
        result = run_cli([*args, "--yes"], env=_env(tmp_path, box, **budget))
        uploaded = box.files()
    assert_one_line_error(
        result,
        3,
        "release stopped at step 'preflight'",
        f"the release is {sizes.size(total)} in 2 files, over the {sizes.size(total - 1)} project limit "
        "(verify.project_size_budget)",
        "merge identical payload: saves",
        "[measured]",
        "; fits",
    )
    assert uploaded == []


def test_a_release_within_its_limits_passes_the_size_gate(tmp_path):
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    (wheel,) = make_dist(project / "dist-all", pythons=("3.12",))
    args = ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "testpypi"]
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = run_cli([*args, "--yes"], env=_env(tmp_path, box))
        uploaded = box.files()
    assert result.code == 0, result.output
    assert uploaded == [wheel.name]
    # The plan is shown in preflight: the limits of an index target, not GitHub's (no GitHub target here).
    assert (
        "size plan: 1 wheel(s)" in result.stderr and "per-file limit (verify.max_file_size) 100.0 MiB" in result.stderr
    )
    assert "GitHub release asset limit" not in result.stderr


@pytest.mark.slow
def test_a_release_that_builds_stops_after_the_build_when_a_wheel_is_over_the_file_limit(tmp_path):
    project = make_c_ext_project(tmp_path / "mini")
    args = ["release", "--project", str(project), "--targets", "testpypi", "--yes", "--no-gpu-check", "--allow-dirty"]
    with PypiSandbox(directory=tmp_path / "index") as box:
        result = run_cli(args, env=_env(tmp_path, box, KESTREL_RELEASE_VERIFY_MAX_FILE_SIZE="1024"))
        uploaded = box.files()
    (wheel,) = (project / "dist-all").glob("*.whl")
    assert_one_line_error(
        result,
        3,
        "release stopped at step 'build': the release does not fit",
        f"{wheel.name} is {sizes.size(wheel.stat().st_size)}, over the 1.0 KiB per-file limit (verify.max_file_size)",
        "nothing was uploaded",
    )
    assert uploaded == []
    # A release that builds shows the plan it weighed after its build step, with the lever it measured.
    assert (
        "size plan: 1 wheel(s)" in result.stderr
        and "per-file limit (verify.max_file_size) 1.0 KiB: largest wheel" in result.stderr
        and "OVER" in result.stderr
    )
