"""adapters.github: retries, rate-limit waits and upload recovery, against the emulator."""

from __future__ import annotations

import hashlib
import time

import pytest

from kestrel_release.adapters.github.client import GithubClient
from kestrel_release.adapters.retry import RetryPolicy as Policy
from kestrel_release.errors import PublishError
from kestrel_release.sandbox.github.emulator import GithubEmulator

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


@pytest.mark.parametrize(
    ("status", "retry_after", "reset"),
    [(429, "-5", "soon"), (429, "1e400", "soon"), (429, "nan", "1e400"), (403, None, "soon"), (403, None, "-5")],
)
def test_a_nonsense_rate_limit_hint_falls_back_to_the_backoff(gh, status, retry_after, reset) -> None:
    c, sleeps = client(gh)
    gh.rate_limit_next(status=status, retry_after=retry_after, reset_header=reset)
    assert c.find_release("nope") is None
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.02  # the policy's backoff


def test_a_nonsense_rate_limit_hint_that_never_ends_gives_up_with_one_line(gh) -> None:
    c, sleeps = client(gh, retries=2)
    gh.rate_limit_next(status=429, retry_after="-5", reset_header="soon", count=1000)
    with pytest.raises(PublishError, match=r"after 3 attempt.*rate limit without a usable") as exc:
        c.find_release("nope")
    assert "\n" not in str(exc.value) and len(sleeps) == 2


def test_an_http_date_retry_after_is_waited_for(gh) -> None:
    from email.utils import formatdate

    c, sleeps = client(gh)
    gh.rate_limit_next(status=429, retry_after=formatdate(time.time() + 30, usegmt=True))
    assert c.find_release("nope") is None
    assert len(sleeps) == 1 and 25 <= sleeps[0] <= 31


def test_a_far_reset_says_when_without_overflowing(gh) -> None:
    c, sleeps = client(gh, cap=5)
    gh.rate_limit_next(status=403, reset_header="9" * 11)  # the year 5138
    with pytest.raises(PublishError, match=r"rate limit .* resets at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"):
        c.find_release("nope")
    assert sleeps == []


def test_retry_after_zero_forever_still_ends_at_the_cap(gh) -> None:
    c, sleeps = client(gh, cap=5)
    gh.rate_limit_next(status=429, retry_after=0, count=1000)
    with pytest.raises(PublishError, match="rate limit"):
        c.find_release("nope")
    assert sleeps == [0.0] * 5  # each wait counts at least a second against rate_limit_wait_cap


def test_deeply_nested_json_from_github_is_one_publish_error() -> None:
    from tests.integration.hostile_http import HostileServer, nested_json

    with HostileServer() as srv:
        srv.route("GET", "/api/v3/repos/", headers={"Content-Type": "application/json"}, body=nested_json(100_000))
        with pytest.raises(PublishError, match="answer while opening m87-labs/kestrel was refused: nested too deeply"):
            GithubClient(srv.url + "/api/v3", "t" * 40, REPO, timeout=5, policy=Policy(retries=0))


def test_nonsense_rate_limit_headers_on_a_good_answer_are_ignored() -> None:
    from tests.integration.hostile_http import HostileServer

    repo = b'{"id": 1, "full_name": "m87-labs/kestrel", "html_url": "https://github.com/m87-labs/kestrel"}'
    hostile = {
        "Content-Type": "application/json",
        "X-RateLimit-Reset": "soon",
        "X-RateLimit-Remaining": "1e400",
        "X-RateLimit-Limit": "nan",
    }
    with HostileServer() as srv:
        srv.route("GET", "/api/v3/repos/", headers=hostile, body=repo)
        c = GithubClient(srv.url + "/api/v3", "t" * 40, REPO, timeout=5, policy=Policy(retries=0))
        assert c.repo_html_url() == "https://github.com/m87-labs/kestrel"
