"""Dated nightlies on a repository with immutable releases, through the real CLI, PyGithub and HTTP.

One prerelease per nightly under `<tag>-YYYYMMDD-<sha7>`: draft, every asset, then publish;
the oldest beyond `keep` are deleted while their tags stay. A rolling nightly is refused on
such a repository before anything changes.
"""

from __future__ import annotations

import json
import re

import pytest
import requests

from kestrel_release.sandbox.github.emulator import GithubEmulator
from tests.factories import build_output, make_github_project
from tests.helpers import assert_one_line_error
from tests.integration.github_support import CANARY, REPO, TAG
from tests.integration.publish.test_github_publish import local, publish, published, writes_since


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,), token=CANARY) as emulator:
        # through the API, as a repository admin would turn it on
        answer = requests.put(
            f"{emulator.api_url}/repos/{REPO}/immutable-releases",
            headers={"Authorization": f"token {CANARY}"},
            timeout=10,
        )
        assert answer.status_code == 204
        yield emulator


def nightly(gh, project, *extra, env=None) -> tuple[int, dict]:
    result = publish(gh, project, "--json", *extra, env=env)
    return result.code, json.loads(result.stdout)


def test_dated_nightlies_draft_fill_publish_and_keep_the_newest(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.3.0", extra='nightly = "dated"\nkeep = 2\n')
    c1 = gh.add_commit(REPO)
    out = build_output(project, "0.3.0", c1)
    code, doc = nightly(gh, project)
    assert code == 0, doc
    tag = doc["tag"]
    assert re.fullmatch(rf"{TAG}-\d{{8}}-{c1[:7]}", tag), tag
    rel = gh.release(REPO, tag)
    assert (rel.draft, rel.prerelease, rel.immutable, gh.tag_sha(REPO, tag)) == (False, True, True, c1)
    assert published(gh, tag) == local(out)
    assert doc["release_url"].endswith(f"/{REPO}/releases/tag/{tag}")
    writes = [r for r in gh.requests() if r["method"] in ("POST", "PATCH")]
    create = next(json.loads(r["body"]) for r in writes if r["path"].endswith("/releases"))
    assert (create["draft"], create["prerelease"], create["make_latest"]) == (True, True, "false")
    publish_at = next(i for i, r in enumerate(writes) if '"draft": false' in r["body"])
    uploads = [i for i, r in enumerate(writes) if "/api/uploads/" in r["path"]]
    assert len(uploads) == len(local(out)) and max(uploads) < publish_at  # every asset before publishing

    mark = len(gh.requests())
    code, again = nightly(gh, project)  # the same night and commit: nothing to do
    assert code == 0 and again["tag"] == tag and writes_since(gh, mark) == []
    assert sorted(again["skipped"]) == sorted(local(out))

    tags = [tag]
    for night in (2, 3):
        commit = gh.add_commit(REPO)
        build_output(project, "0.3.0", commit, payload=f"# night {night}\n")
        code, doc = nightly(gh, project)
        assert code == 0, doc
        tags.append(doc["tag"])
    assert doc["pruned_releases"] == [tags[0]]  # keep = 2: the first night goes
    listed = [
        r["tag_name"]
        for r in requests.get(
            f"{gh.api_url}/repos/{REPO}/releases", timeout=10, headers={"Authorization": f"token {CANARY}"}
        ).json()
    ]
    assert sorted(listed) == sorted(tags[1:])
    assert gh.tag_sha(REPO, tags[0]) == c1  # its tag stays, as GitHub requires
    assert all(gh.release(REPO, t).immutable for t in tags[1:])


def test_an_interrupted_dated_nightly_is_completed_by_the_next_run(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.3.0", extra='nightly = "dated"\n')
    out = build_output(project, "0.3.0", gh.add_commit(REPO))
    gh.fail_next_upload(count=10)  # more than the retries: the run fails with a draft left behind
    failed = publish(gh, project)
    assert_one_line_error(failed, 6, "uploading")
    (draft,) = [r for r in gh.state.repo(REPO).releases.values()]
    assert draft.draft and not draft.immutable
    gh.clear_faults()
    code, doc = nightly(gh, project)
    assert code == 0, doc
    rel = gh.release(REPO, doc["tag"])
    assert (rel.id, rel.draft, rel.immutable) == (draft.id, False, True)  # the same release, finished
    assert published(gh, doc["tag"]) == local(out)


def test_rolling_nightly_on_an_immutable_repository_is_refused_before_any_change(gh, tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.3.0")
    build_output(project, "0.3.0", gh.add_commit(REPO))
    before, mark = gh.snapshot(), len(gh.requests())
    for extra in ((), ("--dry-run",)):
        refused = publish(gh, project, *extra)
        assert_one_line_error(refused, 6, "immutable releases are enabled", 'targets.github.nightly = "dated"')
    assert gh.snapshot() == before and writes_since(gh, mark) == []
    code, doc = nightly(gh, project, env={"KESTREL_RELEASE_GITHUB_NIGHTLY": "dated"})  # the way out
    assert code == 0, doc
    assert gh.release(REPO, doc["tag"]).immutable
