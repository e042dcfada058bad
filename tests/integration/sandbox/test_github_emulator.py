"""The GitHub emulator follows the contract: statuses, payloads, headers, faults."""

from __future__ import annotations

import threading

import pytest
import requests

from kestrel_release.sandbox.github.emulator import GithubEmulator

REPO = "m87-labs/kestrel"


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,)) as emulator:
        yield emulator


def api(gh, method: str, path: str, token: str | None = None, **kwargs) -> requests.Response:
    headers = {"Authorization": f"token {token or gh.token}", **kwargs.pop("headers", {})}
    return requests.request(method, f"{gh.api_url}/repos/{REPO}{path}", headers=headers, timeout=10, **kwargs)


def upload(gh, release_id: int, name: str, data: bytes = b"abc") -> requests.Response:
    return requests.post(
        f"{gh.url}/api/uploads/repos/{REPO}/releases/{release_id}/assets",
        params={"name": name},
        data=data,
        headers={"Authorization": f"token {gh.token}", "Content-Type": "application/octet-stream"},
        timeout=10,
    )


def test_wrong_or_missing_token_is_401(gh) -> None:
    assert api(gh, "GET", "", token="ghp_wrong").json()["message"] == "Bad credentials"
    assert api(gh, "GET", "", token="ghp_wrong").status_code == 401
    assert requests.get(f"{gh.api_url}/repos/{REPO}", timeout=10).status_code == 401


def test_create_release_201_location_and_duplicate_tag_422(gh) -> None:
    resp = api(gh, "POST", "/releases", json={"tag_name": "v1", "name": "v1"})
    assert resp.status_code == 201
    assert resp.headers["Location"] == resp.json()["url"]
    assert resp.json()["upload_url"].startswith(f"{gh.url}/api/uploads/")
    again = api(gh, "POST", "/releases", json={"tag_name": "v1"})
    assert again.status_code == 422
    assert again.json()["errors"] == [{"resource": "Release", "code": "already_exists", "field": "tag_name"}]


def test_drafts_are_not_found_by_tag_but_listed(gh) -> None:
    api(gh, "POST", "/releases", json={"tag_name": "v2", "draft": True})
    assert api(gh, "GET", "/releases/tags/v2").status_code == 404
    assert [r["tag_name"] for r in api(gh, "GET", "/releases").json()] == ["v2"]
    assert gh.tag_sha(REPO, "v2") is None  # a draft creates no tag


def test_duplicate_asset_name_422_and_rename_keeps_id(gh) -> None:
    rel = gh.add_release(REPO, "v3")
    first = upload(gh, rel.id, "a.whl").json()
    dup = upload(gh, rel.id, "a.whl")
    assert dup.status_code == 422
    assert dup.json()["errors"] == [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}]
    renamed = api(gh, "PATCH", f"/releases/assets/{first['id']}", json={"name": "b.whl", "label": ""}).json()
    assert renamed["id"] == first["id"] and renamed["browser_download_url"].endswith("/v3/b.whl")
    assert requests.get(renamed["browser_download_url"], timeout=10).content == b"abc"
    assert requests.get(first["browser_download_url"], timeout=10).status_code == 404


def test_assets_paginate_with_link_headers(gh) -> None:
    rel = gh.add_release(REPO, "v4")
    for i in range(45):
        gh.add_asset(REPO, "v4", f"f{i}.whl", b"x")
    page1 = api(gh, "GET", f"/releases/{rel.id}/assets")
    assert len(page1.json()) == 30
    assert 'rel="next"' in page1.headers["Link"] and "page=2" in page1.headers["Link"]
    page2 = requests.get(page1.links["next"]["url"], headers={"Authorization": f"token {gh.token}"}, timeout=10)
    assert [a["name"] for a in page2.json()] == [f"f{i}.whl" for i in range(30, 45)]
    assert "next" not in page2.links and "prev" in page2.links


def test_asset_cap_is_1000(gh) -> None:
    rel = gh.add_release(REPO, "v5")
    for i in range(1000):
        gh.add_asset(REPO, "v5", f"f{i}")
    resp = upload(gh, rel.id, "one-more")
    assert resp.status_code == 422 and "1000" in resp.text


def test_ref_updates_must_fast_forward_unless_forced(gh) -> None:
    old = gh.head(REPO)
    new = gh.add_commit(REPO)
    side = gh.add_commit(REPO, parents=[old], branch=None)
    assert api(gh, "POST", "/git/refs", json={"ref": "refs/tags/t", "sha": new}).status_code == 201
    again = api(gh, "POST", "/git/refs", json={"ref": "refs/tags/t", "sha": new})
    assert again.status_code == 422 and again.json()["message"] == "Reference already exists"
    refused = api(gh, "PATCH", "/git/refs/tags/t", json={"sha": side})
    assert refused.status_code == 422 and refused.json()["message"] == "Update is not a fast forward"
    assert api(gh, "PATCH", "/git/refs/tags/t", json={"sha": side, "force": True}).status_code == 200
    assert api(gh, "GET", "/git/ref/tags/t").json()["object"]["sha"] == side
    assert api(gh, "POST", "/git/refs", json={"ref": "refs/tags/u", "sha": "f" * 40}).status_code == 422


def test_upload_fault_502_leaves_a_starter_asset(gh) -> None:
    rel = gh.add_release(REPO, "v6")
    gh.fail_next_upload()
    assert upload(gh, rel.id, "a.whl").status_code == 502
    assert gh.assets(REPO, "v6")["a.whl"].state == "starter"
    assert upload(gh, rel.id, "a.whl").status_code == 422  # the broken asset blocks the name


def test_dropped_upload_still_stores_the_asset(gh) -> None:
    rel = gh.add_release(REPO, "v7")
    gh.drop_next_upload()
    with pytest.raises(requests.ConnectionError):
        upload(gh, rel.id, "a.whl", b"payload")
    assert gh.assets(REPO, "v7")["a.whl"].data == b"payload"


def test_rate_limit_fault_answers_403_with_reset(gh) -> None:
    gh.rate_limit_next(reset_in=30)
    resp = api(gh, "GET", "")
    assert resp.status_code == 403 and "rate limit" in resp.json()["message"]
    assert resp.headers["X-RateLimit-Remaining"] == "0" and int(resp.headers["X-RateLimit-Reset"]) > 0
    assert api(gh, "GET", "").status_code == 200


def test_http_fault_hook_and_immutable_releases(gh) -> None:
    requests.post(f"{gh.url}/_emulator/immutable", json={"repo": REPO}, timeout=10)
    rel = api(gh, "POST", "/releases", json={"tag_name": "v8"}).json()
    assert rel["immutable"] is True
    resp = upload(gh, rel["id"], "late.whl")
    assert resp.status_code == 422 and "immutable" in resp.json()["message"]
    moved = api(gh, "PATCH", "/git/refs/tags/v8", json={"sha": gh.add_commit(REPO), "force": True})
    assert moved.status_code == 422
    requests.post(f"{gh.url}/_emulator/fault", json={"kind": "rate_limit", "status": 429, "retry_after": 1}, timeout=10)
    limited = api(gh, "GET", "")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "1"


def test_serves_concurrent_clients(gh) -> None:
    rel = gh.add_release(REPO, "v9")
    gh.add_asset(REPO, "v9", "a.whl", b"a" * 1000)
    url = f"{gh.url}/{REPO}/releases/download/v9/a.whl"
    codes: list[int] = []

    def poll() -> None:
        for _ in range(20):
            codes.append(requests.get(url, timeout=10).status_code)

    threads = [threading.Thread(target=poll) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(5):
        assert upload(gh, rel.id, f"b{i}.whl").status_code == 201
    for t in threads:
        t.join()
    assert codes == [200] * 80
