"""Under GitHub Actions (GITHUB_ACTIONS=true) the CLI folds build logs into groups, repeats its one error line
as an annotation and appends the verify table to $GITHUB_STEP_SUMMARY; anywhere else none of that appears."""

from __future__ import annotations

import json
import re

import pytest

from tests.factories import make_c_ext_project, make_dist, make_project, make_verify_project, make_wheel
from tests.helpers import assert_one_line_error, run_cli

PKG = "kestrel_kernels"


def _actions(summary) -> dict[str, str]:
    return {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}


@pytest.mark.slow
def test_build_and_verify_write_groups_and_a_job_summary(tmp_path):
    project = make_c_ext_project(tmp_path / "mini")
    summary = tmp_path / "summary.md"
    summary.write_text("### an earlier step\n")

    built = run_cli(["build", "--no-cache", "--project", str(project)], env=_actions(summary))  # a real build log
    assert built.code == 0, built.output
    # One folded group per step, its log inside: the build log's compiler output sits between the markers.
    groups = re.findall(r"^::group::(.*)$", built.stderr, flags=re.M)
    assert groups[0].startswith("✓ precompile: ") and groups[1].startswith("✓ python ")
    assert built.stderr.count("::endgroup::") == len(groups) == 2
    python_group = built.stderr.split("::group::✓ python ", 1)[1].split("::endgroup::", 1)[0]
    assert "build-" in python_group and "Successfully built" in python_group
    # The size plan: in the report, and in the job summary beside the verify table.
    assert "size plan: 1 wheel(s)" in built.stderr and "GitHub release asset limit 2.0 GiB" in built.stderr
    assert "### kestrel-release size plan: fits" in summary.read_text()
    doc = json.loads(run_cli(["build", "--project", str(project), "--json"]).stdout)  # a cache hit: seconds
    plan = doc["size_plan"]
    assert plan["fits"] is True and plan["over"] == [] and plan["total"] == plan["wheels"][0]["size"]
    assert [lim["name"] for lim in plan["limits"]] == [
        "per-file limit (verify.max_file_size)",
        "project limit (verify.project_size_budget)",
        "GitHub release asset limit",
    ]

    verified = run_cli(["verify", "--project", str(project)], env=_actions(summary))
    assert verified.code == 0, verified.output
    text = summary.read_text()
    assert text.startswith("### an earlier step\n")  # appended, never rewritten
    assert "### kestrel-release verify: 1 wheel(s) for pypi: pass" in text
    assert re.search(r"^\| mini_ext-0\.1\.0-cp3\d+-cp3\d+-manylinux.*\.whl \| [\d.]+ KiB \| ok \| 0 \|", text, re.M)
    assert "::error" not in verified.stderr


def test_a_failing_verify_is_an_error_annotation_and_a_summary_row(tmp_path):
    project = make_verify_project(tmp_path / "proj")
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/csrc/a.cu": b"//"})
    summary = tmp_path / "summary.md"
    result = run_cli(["verify", str(wheel), "--project", str(project)], env=_actions(summary))
    assert_one_line_error(result, 5, "verify found 1 error(s) in 1 of 1 wheel(s) for pypi")
    error_line = next(ln for ln in result.stderr.splitlines() if ln.startswith("error: "))
    annotation = [ln for ln in result.stderr.splitlines() if ln.startswith("::error")]
    assert annotation == [f"::error title=kestrel-release::{error_line.removeprefix('error: ')}"]
    text = summary.read_text()
    assert "### kestrel-release verify: 1 wheel(s) for pypi: FAIL (1 error(s))" in text
    assert f"| error | source-leak | {wheel.name} | {PKG}/csrc/a.cu |" in text


def test_an_unwritable_summary_is_a_warning_not_a_failure(tmp_path):
    project = make_verify_project(tmp_path / "proj")
    wheel = make_wheel(tmp_path)
    result = run_cli(["verify", str(wheel), "--project", str(project)], env=_actions(tmp_path / "no" / "summary.md"))
    assert result.code == 0, result.output
    assert result.stderr.count("warning: could not write the job summary") == 1
    assert "::warning::could not write the job summary" in result.stderr


def test_outside_actions_nothing_of_it_appears(tmp_path):
    project = make_verify_project(tmp_path / "proj")
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/csrc/a.cu": b"//"})
    summary = tmp_path / "summary.md"
    result = run_cli(
        ["verify", str(wheel), "--project", str(project)],
        env={"GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert_one_line_error(result, 5, "verify found 1 error(s)")
    assert "::" not in result.stderr and not summary.exists()


def test_publish_appends_its_table_to_the_job_summary(tmp_path):
    project = make_project(tmp_path / "kernels")
    with open(project / "pyproject.toml", "a") as fh:
        fh.write('\n[tool.kestrel-release.targets.wheels]\nkind = "static-index"\ndir = "site/whl"\n')
    wheels = make_dist(project / "dist-all")
    summary = tmp_path / "summary.md"
    result = run_cli(["publish", "--project", str(project), "--target", "wheels"], env=_actions(summary))
    assert result.code == 0, result.output
    text = summary.read_text()
    assert "### kestrel-release publish to wheels" in text
    for wheel in wheels:
        assert f"| {wheel.name} | uploaded |" in text


def _committed_c_ext(tmp_path, source: str | None = None):
    import subprocess

    project = make_c_ext_project(tmp_path / "mini")
    if source is not None:
        (project / "src" / "c.c").write_text(source)
    (project / ".gitignore").write_text("/dist-all/\n/dist-all.rehearsal/\n*.egg-info/\nbuild/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    return project


@pytest.mark.slow
def test_a_rehearsal_in_actions_writes_groups_and_every_table_to_the_job_summary(tmp_path):
    """The whole release, rehearsed as a workflow step would run it: a group per step and per Python, and the
    size plan, verify and publish tables in the job summary file."""
    project = _committed_c_ext(tmp_path)
    summary = tmp_path / "summary.md"
    args = ["release", "--rehearse", "--targets", "testpypi", "--yes", "--no-gpu-check"]
    result = run_cli(args, cwd=project, env=_actions(summary), timeout=600)
    assert result.code == 0, result.output
    groups = re.findall(r"^::group::(.*)$", result.stderr, flags=re.M)
    assert any(g.startswith("✓ python ") for g in groups), groups  # each Python's build log folded
    assert result.stderr.count("::group::") == result.stderr.count("::endgroup::")
    text = summary.read_text()
    for heading in ("size plan", "verify", "publish to testpypi"):
        assert heading in text.lower(), (heading, text)
    assert "| limit |" in text and "| file | action | size |" in text


@pytest.mark.slow
def test_a_compile_error_in_actions_is_an_annotation_at_its_file_and_line(tmp_path):
    project = _committed_c_ext(tmp_path, "#include <Python.h>\nint broken( {\n")
    summary = tmp_path / "summary.md"
    result = run_cli(["build", "--project", str(project)], env=_actions(summary), timeout=600)
    assert result.code == 4, result.output
    (annotation,) = [ln for ln in result.stderr.splitlines() if ln.startswith("::error")]
    props = dict(p.split("=", 1) for p in annotation.split("::")[1].removeprefix("error ").split(","))
    assert props["file"].endswith("c.c") and props["line"] == "2", annotation
