"""`release`: the whole pipeline, rehearsed against local stand-ins on a copy of kernels/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import KERNELS, assert_one_line_error, need_pythons, python_version, run_cli
from tests.schemas import fits

pytestmark = pytest.mark.slow
PY = python_version()  # kernels/ is configured for 3.10-3.13: one of them runs the tests

IGNORE = shutil.ignore_patterns(
    "dist", "dist-all*", "build", "_skbuild", "*.egg-info", "__pycache__", ".kestrel-release.lock", ".pytest_cache"
)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A private copy of kernels/ (precompiled cubins included, so nvcc stays idle when fresh)."""
    dest = tmp_path / "kernels"
    shutil.copytree(KERNELS, dest, ignore=IGNORE)
    return dest


def _steps(result) -> dict[str, dict]:
    return {s["name"]: s for s in fits("release", result.stdout)["steps"]}


def test_rehearsal_runs_every_step_and_installs_back(project: Path) -> None:
    need_pythons("3.11", "3.12")  # two wheels, each installed back by its own Python
    result = run_cli(["release", "--project", str(project), "--rehearse", "--yes", "--json", "--python", "3.11,3.12"])
    assert result.code == 0, result.output
    steps = _steps(result)
    assert list(steps) == [
        "preflight",
        "build",
        "verify",
        "publish-testpypi",
        "smoke-test",
        "publish-pypi",
        "publish-github",
    ]
    assert all(s["status"] == "done" and s["seconds"] >= 0 for s in steps.values())
    assert "imported" in steps["smoke-test"]["detail"] and "3.12" in steps["smoke-test"]["detail"]
    # The stand-in indexes hold exactly the built wheels, byte for byte.
    out = project / "dist-all"
    built = {p.name: p.read_bytes() for p in out.glob("*.whl")}
    assert len(built) == 2
    for target in ("testpypi", "pypi"):
        published = {p.name: p.read_bytes() for p in (project / "dist-all.rehearsal" / target).glob("*.whl")}
        assert published == built, target
    # Human output (stderr) names the stand-ins and each step.
    assert "strict sandbox PyPI" in result.stderr and "emulator" in result.stderr


def test_injected_failure_at_each_step_stops_there_and_resume_completes(project: Path) -> None:
    base = ["release", "--project", str(project), "--rehearse", "--yes", "--json", "--python", PY, "--bump", "patch"]
    expected = [
        ("preflight", 3),
        ("bump", 2),
        ("build", 4),
        ("verify", 5),
        ("publish-testpypi", 6),
        ("smoke-test", 6),
        ("publish-pypi", 6),
        ("publish-github", 6),
    ]
    before = _tree(project)
    first = True
    for step, code in expected:
        args = base if first else [*base, "--resume"]
        result = run_cli(args, env={"KESTREL_RELEASE_FAIL_AT": step})
        # preflight changed nothing yet: the same command again (it is not --resume's turn)
        assert_one_line_error(
            result,
            code,
            f"release stopped at step '{step}'",
            "run the same release again" if step == "preflight" else "--resume",
        )
        assert fits("failure", result.stdout)["error"]["exit_code"] == code  # the failure's one document
        first = False
        assert _changed(project, before) == [], f"a rehearsal stopped at {step} restores its bump"
    done = run_cli([*base, "--resume"])
    assert done.code == 0, done.output
    steps = _steps(done)
    assert [s for s, v in steps.items() if v["status"] == "resumed"] == [
        "preflight",
        "bump",
        "build",
        "verify",
        "publish-testpypi",
        "smoke-test",
        "publish-pypi",
    ]
    assert steps["publish-github"]["status"] == "done"
    assert json.loads(done.stdout)["version"] == "0.1.1"
    assert {p.name.split("-")[1] for p in (project / "dist-all").glob("*.whl")} == {"0.1.1"}, "bumped exactly once"
    assert _changed(project, before) == []


def _tree(project: Path) -> dict[str, bytes]:
    """Every file of the project except the tool's output and rehearsal folders."""
    return {
        str(p.relative_to(project)): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file() and not p.relative_to(project).parts[0].startswith("dist-all")
    }


def _changed(project: Path, before: dict[str, bytes]) -> list[str]:
    """Files of `before` that are gone or hold other bytes (the build may add its precompile cache)."""
    after = _tree(project)
    return [name for name, data in before.items() if after.get(name) != data]


def test_rehearsal_bump_leaves_the_project_byte_identical_and_says_so(project: Path) -> None:
    before = _tree(project)
    result = run_cli(
        [
            "release",
            "--project",
            str(project),
            "--rehearse",
            "--yes",
            "--json",
            "--python",
            PY,
            "--bump",
            "minor",
            "--targets",
            "github",
        ]
    )
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == "0.2.0" and doc["restored"] == "0.1.0 -> 0.2.0 restored to 0.1.0"
    assert "the bump 0.1.0 -> 0.2.0 was for the rehearsal only" in result.stderr
    assert _changed(project, before) == []
    assert [p.name.split("-")[1] for p in (project / "dist-all").glob("*.whl")] == ["0.2.0"]
    # A real release after it bumps from 0.1.0 again (the rehearsal's state is no pending bump).
    plan = run_cli(["release", "--project", str(project), "--python", PY, "--bump", "minor", "--targets", "github"])
    assert_one_line_error(plan, 2, "not a terminal")
    assert "kestrel-kernels 0.1.0" in plan.stderr


def test_resume_refuses_when_wheels_changed(project: Path) -> None:
    base = ["release", "--project", str(project), "--rehearse", "--yes", "--python", PY]
    failed = run_cli(base, env={"KESTREL_RELEASE_FAIL_AT": "verify"})
    assert failed.code == 5, failed.output
    wheel = next((project / "dist-all").glob("*.whl"))
    wheel.write_bytes(wheel.read_bytes() + b"tampered")
    result = run_cli([*base, "--resume"])
    assert_one_line_error(result, 2, "cannot resume", wheel.name)


def test_resume_with_other_options_is_refused(project: Path) -> None:
    failed = run_cli(
        ["release", "--project", str(project), "--rehearse", "--yes", "--python", PY],
        env={"KESTREL_RELEASE_FAIL_AT": "preflight"},
    )
    assert failed.code == 3
    result = run_cli(
        ["release", "--project", str(project), "--rehearse", "--yes", "--python", PY, "--targets", "github", "--resume"]
    )
    assert_one_line_error(result, 2, "cannot resume")


def test_real_release_without_tty_or_yes_refuses(project: Path) -> None:
    result = run_cli(["release", "--project", str(project), "--targets", "github"], env={"KESTREL_RELEASE_FAIL_AT": ""})
    assert_one_line_error(result, 2, "not a terminal", "--yes")
    assert not list((project / "dist-all").glob("*.whl")), "nothing was built"


def test_unknown_target_is_a_usage_error(project: Path) -> None:
    result = run_cli(["release", "--project", str(project), "--targets", "pypi,gitlab", "--yes"])
    assert_one_line_error(result, 2, "gitlab")
