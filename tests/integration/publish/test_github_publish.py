"""publish --target github, run as a user would (the real CLI and PyGithub) against the emulator."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from kestrel_release.sandbox.github.emulator import GithubEmulator
from tests.factories import build_output, make_github_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.github_support import CANARY, REPO, TAG, Poller
from tests.schemas import fits


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,), token=CANARY) as emulator:
        yield emulator


def publish(gh, project, *extra, env=None):
    args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url, *extra]
    return run_cli(args, env={"GH_TOKEN": CANARY, "GITHUB_TOKEN": "", **(env or {})}, timeout=300)


def published(gh, tag=TAG) -> dict[str, str]:
    """name -> sha256 of every asset of the release."""
    return {n: hashlib.sha256(a.data).hexdigest() for n, a in gh.assets(REPO, tag).items()}


def local(out) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.iterdir())
        if p.name.endswith(".whl") or p.name in ("SHA256SUMS", "release-manifest.json")
    }


def writes_since(gh, mark: int) -> list[str]:
    return [f"{r['method']} {r['path']}" for r in gh.requests()[mark:] if r["method"] != "GET"]


def test_first_then_second_nightly_moves_tag_prunes_and_updates_notes(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    c1 = gh.add_commit(REPO)
    out = build_output(project, "0.1.0", c1)
    first = publish(gh, project)
    assert first.code == 0, first.output
    assert published(gh) == local(out)
    rel = gh.release(REPO, TAG)
    assert (rel.prerelease, rel.draft, gh.tag_sha(REPO, TAG)) == (True, False, c1)
    assert gh.state.repo(REPO).latest_release_id is None  # a nightly is never "latest"
    assert c1 in rel.body and "0.1.0" in rel.body
    for name, sha in local(out).items():
        if name.endswith(".whl"):
            assert sha in rel.body and f"pip install {gh.url}/{REPO}/releases/download/{TAG}/{name}" in rel.body

    c2 = gh.add_commit(REPO)
    out = build_output(project, "0.2.0", c2)
    second = publish(gh, project, "--json")
    assert second.code == 0, second.output
    assert published(gh) == local(out)  # exactly the new set: 0.1.0 wheels pruned
    rel = gh.release(REPO, TAG)
    assert (rel.prerelease, rel.draft, gh.tag_sha(REPO, TAG)) == (True, False, c2)
    assert c2 in rel.body and "0.2.0" in rel.body and "0.1.0" not in rel.body
    assert sorted(fits("publish-github", second.stdout)["pruned"]) == sorted(
        n.replace("0.2.0", "0.1.0") for n in local(out) if n.endswith(".whl")
    )

    mark = len(gh.requests())
    again = publish(gh, project)
    assert again.code == 0, again.output
    assert "4 unchanged" in again.stderr
    assert not [w for w in writes_since(gh, mark) if "/api/uploads/" in w or "DELETE" in w]


def test_failing_uploads_never_remove_the_published_asset_and_a_rerun_cleans_up(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0", retries=2)
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    assert publish(gh, project).code == 0
    before = published(gh)
    old_wheel = next(n for n in before if n.endswith(".whl"))
    out = build_output(project, "0.2.0", gh.add_commit(REPO))

    base = f"{gh.url}/{REPO}/releases/download/{TAG}"
    pollers = [Poller(f"{base}/SHA256SUMS"), Poller(f"{base}/{old_wheel}")]
    for p in pollers:
        p.start()
    gh.fail_next_upload(count=1000)  # every upload: 502 leaving a `starter` asset
    failed = publish(gh, project)
    assert_one_line_error(failed, 6, "uploading", "502")
    gh.clear_faults()
    gh.rate_limit_next(reset_in=3600, count=1000)  # beyond rate_limit_wait_cap = 5 s
    limited = publish(gh, project)
    assert_one_line_error(limited, 6, "rate limit", "retry after")
    gh.clear_faults()
    for p in pollers:
        p.stop()
        assert (p.missing, p.errors) == (0, 0) and p.ok > 0, (p.url, p.ok, p.missing, p.errors)
    assert {n: s for n, s in published(gh).items() if n in before} == before  # nothing published changed

    gh.drop_next_upload(count=2)  # answers lost after the bytes landed: accepted on the retry's 422
    gh.rate_limit_next(reset_in=1)  # within the cap: waited out
    rerun = publish(gh, project)
    assert rerun.code == 0, rerun.output
    assert published(gh) == local(out)  # no starter, no temporary names, old version pruned
    assert all(a.state == "uploaded" for a in gh.assets(REPO, TAG).values())


def test_versioned_release_via_draft_and_immutable_releases(gh, tmp_path) -> None:
    gh.enable_immutable_releases(REPO)
    project = make_github_project(tmp_path / "kernels", "0.2.0")
    c1 = gh.add_commit(REPO)
    out = build_output(project, "0.2.0", c1)
    first = publish(gh, project, "--tag", "v0.2.0")
    assert first.code == 0, first.output
    rel = gh.release(REPO, "v0.2.0")
    assert (rel.draft, rel.prerelease, rel.immutable, gh.tag_sha(REPO, "v0.2.0")) == (False, False, True, c1)
    assert published(gh, "v0.2.0") == local(out)
    log = [r for r in gh.requests() if r["method"] in ("POST", "PATCH")]
    create = next(r for r in log if r["path"].endswith("/releases"))
    assert json.loads(create["body"])["draft"] is True  # created as a draft ...
    publish_at = next(i for i, r in enumerate(log) if '"draft": false' in r["body"])
    assert all(i < publish_at for i, r in enumerate(log) if "/api/uploads/" in r["path"])  # ... published last

    assert publish(gh, project, "--tag", "v0.2.0").code == 0  # identical re-run: nothing to change
    released = published(gh, "v0.2.0")
    out = build_output(project, "0.2.0", c1, payload="# rebuilt\n")
    changed = publish(gh, project, "--tag", "v0.2.0")
    assert_one_line_error(changed, 6, "v0.2.0", "immutable")
    assert published(gh, "v0.2.0") == released != local(out)  # refused, not half-modified

    build_output(project, "0.2.0", gh.head(REPO))
    before, mark = gh.snapshot(), len(gh.requests())
    refused = publish(gh, project)  # a rolling nightly could never be updated here: refused up front
    assert_one_line_error(refused, 6, "immutable", "--tag", 'targets.github.nightly = "dated"')
    assert gh.snapshot() == before and writes_since(gh, mark) == []


def test_token_is_never_printed_nor_sent_outside_the_authorization_header(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    build_output(project, "0.1.0", gh.add_commit(REPO))
    ok = publish(gh, project, env={"KESTREL_RELEASE_DEBUG": "1"})
    build_output(project, "0.1.0", "f" * 40)  # a commit GitHub does not have: the second run fails
    failed = run_cli(
        ["-v", "publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url],
        env={"GH_TOKEN": CANARY},
    )
    assert ok.code == 0 and failed.code == 6, (ok.output, failed.output)
    for result in (ok, failed):
        assert CANARY not in result.stdout + result.stderr
    requests = gh.requests()
    assert requests and all(r["headers"].get("Authorization") == f"token {CANARY}" for r in requests)
    for r in requests:
        others = {k: v for k, v in r["headers"].items() if k != "Authorization"}
        assert CANARY not in r["path"] + r["body"] + json.dumps(others)


def test_dry_run_changes_nothing(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    build_output(project, "0.1.0", gh.add_commit(REPO))
    result = publish(gh, project, "--dry-run")
    assert result.code == 0, result.output
    assert "would upload" in result.stderr
    assert writes_since(gh, 0) == [] and not gh.state.repo(REPO).releases


def test_prune_walks_every_page_and_removes_leftovers(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.3.0")
    out = build_output(project, "0.3.0", gh.add_commit(REPO))
    gh.add_release(REPO, TAG, prerelease=True)
    for i in range(150):
        gh.add_asset(REPO, TAG, f"kestrel_kernels-0.0.{i}-cp312-cp312-manylinux_2_34_x86_64.whl", b"old")
    gh.add_asset(REPO, TAG, "kestrel-tmp-deadbeef-SHA256SUMS", b"half")
    gh.add_asset(REPO, TAG, "SHA256SUMS", b"", state="starter")
    gh.add_asset(REPO, TAG, "README.txt", b"kept: not a wheel of this package")
    result = publish(gh, project)
    assert result.code == 0, result.output
    kept = hashlib.sha256(b"kept: not a wheel of this package").hexdigest()
    assert published(gh) == {**local(out), "README.txt": kept}


@pytest.mark.parametrize("case", ["no-token", "bad-token", "unpushed-commit", "changed-wheel", "bad-repo"])
def test_refusals_are_one_line_with_their_exit_code(gh, tmp_path, case) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    env, extra, code, needles = {}, [], 6, []
    if case == "no-token":
        env, needles = {"GH_TOKEN": ""}, ["no GitHub token", "GH_TOKEN"]
    elif case == "bad-token":
        env, needles = {"GH_TOKEN": "ghp_" + "W" * 36}, ["rejected the token"]
    elif case == "unpushed-commit":
        build_output(project, "0.1.0", "e" * 40)
        needles = ["eeeeeeeeeeee", "is not on m87-labs/kestrel", "push it"]
    elif case == "changed-wheel":
        wheel = next(out.glob("*.whl"))
        wheel.write_bytes(wheel.read_bytes() + b"\0")
        needles = [wheel.name, "changed since"]
    else:
        extra, code, needles = ["--repo", "no-slash"], 2, ["OWNER/NAME"]
    result = publish(gh, project, *extra, env=env)
    assert_one_line_error(result, code, *needles)
    assert not gh.state.repo(REPO).releases  # nothing was created
    assert "W" * 36 not in result.output


def test_verify_failure_exits_5_before_any_upload(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    build_output(project, "0.1.0", gh.add_commit(REPO), extra={"kestrel_kernels/kernel.cu": b"__global__ void k(){}"})
    result = publish(gh, project)
    assert result.code == 5, result.output
    assert "Traceback" not in result.output
    assert not [r for r in gh.requests() if r["method"] != "GET"]


def test_a_release_created_meanwhile_by_another_publisher_is_joined(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.1.0")
    out = build_output(project, "0.1.0", gh.add_commit(REPO))
    gh.race_next_release()  # another CI job's draft lands between our lookup and our create: 422 already_exists
    result = publish(gh, project)
    assert result.code == 0, result.output
    assert "created meanwhile by another publisher; joining it" in result.stderr
    assert [r.tag_name for r in gh.state.repo(REPO).releases.values()] == [TAG]  # one release, no second draft
    rel = gh.release(REPO, TAG)
    assert (rel.draft, rel.prerelease) == (False, True)
    assert published(gh) == local(out)


def test_two_publishers_of_the_first_nightly_at_once_both_succeed(gh, tmp_path) -> None:
    """Two CI jobs (two checkouts, two locks) publish the same nightly together."""
    import shutil
    import subprocess
    import sys

    first = make_github_project(tmp_path / "a" / "kernels", "0.1.0")
    out = build_output(first, "0.1.0", gh.add_commit(REPO))
    second = make_github_project(tmp_path / "b" / "kernels", "0.1.0")
    shutil.copytree(out, second / "dist-all")  # the same bytes, as two builds of one commit give
    env = {**os.environ, "GH_TOKEN": CANARY, "GITHUB_TOKEN": "", "COLUMNS": "200"}
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kestrel_release",
                "publish",
                "--target",
                "github",
                "--project",
                str(p),
                "--api-url",
                gh.api_url,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in (first, second)
    ]
    results = [r.communicate(timeout=300) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], results
    assert [r.tag_name for r in gh.state.repo(REPO).releases.values()] == [TAG]
    assert published(gh) == local(out) and not gh.release(REPO, TAG).draft
