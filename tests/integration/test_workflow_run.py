"""The workflow `ci init` writes, run end to end here against the sandboxes (issue 17).

A tiny C-extension project in a git repository; `ci init` writes its workflow; the runner
(workflow_runner.py) executes every job: two build legs (Python 3.11 and 3.12, each its own build
output), assemble + verify, the tag's PyPI publish (strict sandbox PyPI) and the GitHub release
(GitHub emulator). Only two steps are replaced, in this test only: installing the tool from PyPI
(the tool under test is already on PATH) and Sigstore signing (a recorded fake attestation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kestrel_release.sandbox.github import GithubEmulator
from kestrel_release.sandbox.pypi import PypiSandbox
from kestrel_release.stages import ci
from tests.helpers import run_cli
from tests.integration.workflow_runner import Expressions, WorkflowRunner
from tests.reliability import miniproject

pytestmark = pytest.mark.slow

REPO = "acme/mini-ext"
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64")
FAKE_ATTESTATION = '{"version": 1, "note": "recorded fake: signing needs a Sigstore identity"}'
# The signing step, replaced: one fixed attestation per wheel, where pypi-attestations would write it.
FAKE_SIGN = f"for w in release/*.whl; do printf '%s' '{FAKE_ATTESTATION}' > \"$w.publish.attestation\"; done"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed git repository: mini-ext in kernels/ (3.11 + 3.12) and its generated workflow."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    miniproject.make(repo / "kernels", pythons=("3.11", "3.12"))
    result = run_cli(["ci", "init", "--project", str(repo / "kernels")])
    assert result.code == 0, result.output
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "mini-ext 0.1.0")
    (repo / ".gitignore").write_text("*\n")  # build outputs never make the checkout dirty
    return repo


def two_platform_workflow(repo: Path) -> Path:
    """The workflow for `platforms = [manylinux_2_34_x86_64, manylinux_2_28_x86_64]` (two glibc flavours,
    both buildable on this machine), rendered by ci init's own code, then committed."""
    import dataclasses

    from kestrel_release import config

    cfg = config.load(repo / "kernels")
    with_platforms = SimpleNamespace(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)},
                                     out_path=cfg.out_path, platforms=PLATFORMS)
    workflow = repo / ".github" / "workflows" / "kernels-release.yml"
    workflow.write_text(ci.render_workflow(with_platforms, repo))
    _git(repo, "add", "-f", str(workflow))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "two platforms")
    return workflow


def test_generated_workflow_runs_end_to_end_against_the_sandboxes(repo: Path, tmp_path: Path) -> None:
    workflow = two_platform_workflow(repo)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    tool_bin = str(Path(sys.executable).parent)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as index, GithubEmulator(repos=(REPO,)) as gh:
        gh.push_history(REPO, repo)
        env = {**os.environ, "PATH": f"{tool_bin}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200",
               "UV_PYTHON_DOWNLOADS": "never", "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
               # Where the publish step's twine sends the files: the sandbox instead of PyPI's default.
               "TWINE_REPOSITORY_URL": index.upload_url, "TWINE_USERNAME": index.username,
               "TWINE_PASSWORD": index.password}
        env.pop("KESTREL_RELEASE_DEBUG", None)
        runner = WorkflowRunner(
            workflow, repo, tmp_path / "runner",
            github={"ref_type": "tag", "ref_name": "v0.1.0", "repository": REPO, "api_url": gh.api_url,
                    "token": gh.token, "run_id": "7001"},
            env=env,
            substitute={"install-tool": "command -v kestrel-release",
                        "install-publish-tools": "twine --version | grep -q 'twine version 7.0.0'",
                        "attest": FAKE_SIGN})
        jobs = runner.run()
        log = "\n".join(f"[{s.job}] {s.name}: {s.status}\n{s.output}" for s in runner.steps if s.status != "skipped")
        builds = [f"build-{plat}" for plat in PLATFORMS]
        assert {n: j.result for n, j in jobs.items()} == {
            "plan": "success", **dict.fromkeys(builds, "success"), "assemble": "success", "publish": "success",
            "github": "success"}, log
        for build in builds:
            assert [leg["matrix"]["python"] for leg in jobs[build].legs] == ["3.11", "3.12"]
        assert jobs["plan"].outputs == {"version": "0.1.0"}
        assert sorted(runner.substituted) == sorted(  # once per job leg: each build job has two
            [f"{job}:install-tool" for job in [*jobs, *builds]] + ["publish:install-publish-tools", "publish:attest"])

        # The assemble job combined two build outputs, verified them, and handed on one release.
        release = tmp_path / "runner" / "artifacts" / "release"
        wheels = {p.name: p.read_bytes() for p in release.glob("*.whl")}
        assert sorted((n.split("-")[2], n.split("-")[4]) for n in wheels) == sorted(
            (f"cp{py}", f"{plat}.whl") for py in ("311", "312") for plat in PLATFORMS)
        data = json.loads((release / "release-manifest.json").read_text())
        assert set(data["verified"]) == {"pypi"} and set(data["verified"]["pypi"]["wheels"]) == set(wheels)
        # Per wheel: which CI job (and leg) built it, from which commit.
        for wheel in data["wheels"]:
            plat, py, by = wheel["platform_tag"], wheel["python"], wheel["built_by"]
            assert by["label"] == f"{plat}-py{py}" and by["input"] == f"build-{plat}-py{py}"
            assert by["ci"]["job"] == f"build-{plat}" and by["ci"]["run_id"] == "7001"
            assert by["ci"]["repository"] == REPO and by["ci"]["runner"] == f"local-build-{plat}-{py}"
            assert wheel["toolchain"]["python"] == py and wheel["toolchain"]["auditwheel"]
        assert {w["commit"] for w in data["wheels"]} == {head} and data["git"] == {"commit": head, "dirty": False}
        assert len(data["assembled"]["inputs"]) == 4
        assert sorted(w["sha256"] for w in data["wheels"]) == sorted(
            line.split()[0] for line in (release / "SHA256SUMS").read_text().splitlines())

        # PyPI (the strict sandbox) holds exactly the assembled wheels, byte for byte.
        published = {p.name: p.read_bytes() for p in (tmp_path / "index").glob("*.whl")}
        assert published == wheels
        # The GitHub release v0.1.0 holds the wheels, SHA256SUMS and the assembled manifest.
        assets = gh.assets(REPO, "v0.1.0")
        assert set(wheels) | {"SHA256SUMS", "release-manifest.json"} <= set(assets)
        assert gh.tag_sha(REPO, "v0.1.0") == head


def test_nightly_run_skips_pypi_and_refreshes_the_rolling_github_release(repo: Path, tmp_path: Path) -> None:
    """A scheduled run on the branch: one nightly version for every leg, no PyPI publish, the rolling release."""
    workflow = repo / ".github" / "workflows" / "kernels-release.yml"
    with PypiSandbox(directory=tmp_path / "index", strict=True) as index, GithubEmulator(repos=(REPO,)) as gh:
        gh.push_history(REPO, repo)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "UV_PYTHON_DOWNLOADS": "never", "TWINE_REPOSITORY_URL": index.upload_url,
               "TWINE_USERNAME": index.username, "TWINE_PASSWORD": index.password}
        runner = WorkflowRunner(
            workflow, repo, tmp_path / "runner",
            github={"ref_type": "branch", "ref_name": "main", "repository": REPO, "api_url": gh.api_url,
                    "token": gh.token, "run_id": "7002"},
            env=env, substitute={"install-tool": "command -v kestrel-release"})
        jobs = runner.run()
        log = "\n".join(f"[{s.job}] {s.name}: {s.status}\n{s.output}" for s in runner.steps if s.status != "skipped")
        results = {n: j.result for n, j in jobs.items()}
        assert results.pop("publish") == "skipped" and set(results.values()) == {"success"}, log
        version = jobs["plan"].outputs["version"]
        assert version.startswith("0.1.1.dev"), version
        wheels = sorted(p.name for p in (tmp_path / "runner" / "artifacts" / "release").glob("*.whl"))
        assert len(wheels) == 2 and all(f"-{version}-" in w for w in wheels)
        assert list((tmp_path / "index").glob("*.whl")) == []  # nothing went to the index
        releases = gh.snapshot()[REPO]["releases"]
        assert [r["tag_name"] for r in releases] == ["mini-ext-nightly"] and releases[0]["prerelease"]
        assert set(wheels) <= {a["name"] for a in releases[0]["assets"]}


def test_runner_expressions_and_control() -> None:
    """The runner's expression evaluator gives GitHub's answers for the forms the workflow uses."""
    ctx = {"github": {"ref_type": "tag"}, "needs": {"publish": {"result": "skipped"}, "assemble": {"result": "success"}},
           "matrix": {"python": "3.12"}}
    exprs = Expressions(ctx, {"cancelled": False, "always": True, "success": True})
    assert exprs.evaluate("github.ref_type == 'tag' && 'pypi' || 'github'") == "pypi"
    assert exprs.expand("py${{ matrix.python }}-${{ github.ref_type != 'tag' }}") == "py3.12-false"
    assert exprs.condition("${{ !cancelled() && needs.assemble.result == 'success' && (needs.publish.result == "
                           "'success' || needs.publish.result == 'skipped') }}", "success()") is True
    assert exprs.condition("github.ref_type != 'tag'", "success()") is False
    assert exprs.evaluate("needs.missing.outputs.version") is None


def test_runner_failure_stops_dependents_and_artifacts_are_folders(tmp_path: Path) -> None:
    """Control: a failing step fails its job and skips what needs it; artifacts travel only by upload/download."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "README").write_text("x")
    workflow = tmp_path / "wf.yml"
    workflow.write_text("""
jobs:
  make:
    strategy: {matrix: {n: ["1", "2"]}}
    steps:
      - uses: actions/checkout@0000000000000000000000000000000000000000
      - id: out
        env: {N: "${{ matrix.n }}"}
        run: mkdir out && echo "leg $N" > "out/f$N" && echo "n=$N" >> "$GITHUB_OUTPUT"
      - uses: actions/upload-artifact@0000000000000000000000000000000000000000
        with: {name: "part-${{ matrix.n }}", path: out/}
  use:
    needs: make
    steps:
      - run: test ! -e out  # a fresh checkout: nothing of the other job's tree
      - uses: actions/download-artifact@0000000000000000000000000000000000000000
        with: {pattern: "part-*", path: parts}
      - run: cat parts/part-1/f1 parts/part-2/f2 && false
  after:
    needs: use
    steps:
      - run: "true"
""")
    runner = WorkflowRunner(workflow, checkout, tmp_path / "run", env=dict(os.environ),
                            github={"ref_type": "branch", "ref_name": "main", "repository": "a/b", "api_url": ""})
    jobs = runner.run()
    assert {n: j.result for n, j in jobs.items()} == {"make": "success", "use": "failure", "after": "skipped"}
    assert [leg["matrix"] for leg in jobs["make"].legs] == [{"n": "1"}, {"n": "2"}]
    cat = next(s for s in runner.steps if s.job == "use" and s.status == "failure")
    assert cat.output == "leg 1\nleg 2\n"
