"""adapters.github: retries, rate-limit waits and upload recovery, against the emulator."""

from __future__ import annotations

import hashlib

import pytest

from kestrel_release.adapters.github import GithubClient
from kestrel_release.retry import RetryPolicy as Policy
from kestrel_release.errors import PublishError
from kestrel_release.sandbox.github import GithubEmulator

REPO = "m87-labs/kestrel"


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,)) as emulator:
        yield emulator


def client(gh, token=None, cap=60.0, retries=3) -> tuple[GithubClient, list[float]]:
    sleeps: list[float] = []
    policy = Policy(retries=retries, backoff=0.01, max_backoff=0.02, rate_limit_wait_cap=cap, sleep=sleeps.append)
    return GithubClient(gh.api_url, token or gh.token, REPO, timeout=10, policy=policy), sleeps


def wheel(tmp_path, data: bytes = b"wheel-bytes" * 10):
    path = tmp_path / "k-1-cp312-cp312-linux_x86_64.whl"
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def test_bad_token_is_one_publish_error(gh) -> None:
    with pytest.raises(PublishError, match="rejected the token"):
        client(gh, token="ghp_" + "x" * 36)


def test_unknown_repo_names_the_repo(gh) -> None:
    with pytest.raises(PublishError, match="m87-labs/other not found"):
        GithubClient(gh.api_url, gh.token, "m87-labs/other", timeout=10, policy=Policy(retries=0))


def test_rate_limit_waits_until_reset_then_succeeds(gh) -> None:
    c, sleeps = client(gh)
    gh.rate_limit_next(reset_in=20)
    assert c.find_release("nope") is None
    assert len(sleeps) == 1 and 15 <= sleeps[0] <= 22


def test_rate_limit_beyond_the_cap_says_when_to_retry(gh) -> None:
    c, sleeps = client(gh, cap=5)
    gh.rate_limit_next(reset_in=3600, status=429, retry_after=3600)
    with pytest.raises(PublishError, match=r"rate limit .* resets at \d\d:\d\d:\d\d UTC") as exc:
        c.find_release("nope")
    assert "retry after" in str(exc.value) and sleeps == []


def test_502_leaves_starter_which_is_removed_before_the_retry(gh, tmp_path) -> None:
    c, sleeps = client(gh)
    gh.add_release(REPO, "v1")
    rel = c.find_release("v1")
    path, sha = wheel(tmp_path)
    gh.fail_next_upload()
    asset = c.upload(rel, path, path.name, sha)
    assert asset.state == "uploaded" and asset.digest == f"sha256:{sha}"
    assert {n: a.state for n, a in gh.assets(REPO, "v1").items()} == {path.name: "uploaded"}
    assert len(sleeps) == 1


def test_dropped_connection_then_422_accepts_the_landed_asset(gh, tmp_path) -> None:
    c, _ = client(gh)
    gh.add_release(REPO, "v1")
    rel = c.find_release("v1")
    path, sha = wheel(tmp_path)
    gh.drop_next_upload()
    asset = c.upload(rel, path, path.name, sha)
    assert asset.digest == f"sha256:{sha}"
    uploads = [r for r in gh.requests() if "/api/uploads/" in r["path"]]
    assert [r["status"] for r in uploads] == ["dropped", 422]  # second attempt found the first


def test_persistent_upload_failure_gives_up_with_one_line(gh, tmp_path) -> None:
    c, sleeps = client(gh, retries=2)
    gh.add_release(REPO, "v1")
    rel = c.find_release("v1")
    path, sha = wheel(tmp_path)
    gh.fail_next_upload(count=10)
    with pytest.raises(PublishError, match=r"uploading .* after 3 attempt\(s\): HTTP 502") as exc:
        c.upload(rel, path, path.name, sha)
    assert "\n" not in str(exc.value) and len(sleeps) == 2


def test_find_release_sees_drafts(gh) -> None:
    c, _ = client(gh)
    gh.add_release(REPO, "v9", draft=True)
    assert c.find_release("v9").draft is True
