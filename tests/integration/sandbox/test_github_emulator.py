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


def fault(gh, **body) -> None:
    assert requests.post(f"{gh.url}/_emulator/fault", json=body, timeout=10).status_code == 204


def test_upload_knobs_over_http_discard_delay_and_rewrite(gh) -> None:
    import hashlib

    rel = gh.add_release(REPO, "v10")
    fault(gh, kind="upload_discard")
    answer = upload(gh, rel.id, "gone.whl", b"sent")
    assert answer.status_code == 201 and answer.json()["state"] == "uploaded"
    assert "gone.whl" not in gh.assets(REPO, "v10")  # acknowledged, never stored
    fault(gh, kind="upload_rewrite")
    answer = upload(gh, rel.id, "other.whl", b"sent")
    stored = gh.assets(REPO, "v10")["other.whl"].data
    assert stored != b"sent" and answer.json()["digest"] == "sha256:" + hashlib.sha256(stored).hexdigest()
    fault(gh, kind="upload_delay", delay=0.3)
    assert upload(gh, rel.id, "late.whl", b"sent").status_code == 201
    assert "late.whl" not in gh.assets(REPO, "v10")
    deadline = threading.Event()
    for _ in range(100):  # stored a moment later, with the bytes sent
        if "late.whl" in gh.assets(REPO, "v10"):
            break
        deadline.wait(0.1)
    assert gh.assets(REPO, "v10")["late.whl"].data == b"sent"


def test_answer_knobs_over_http_foreign_upload_url_and_redirects(gh) -> None:
    rel = gh.add_release(REPO, "v11")
    fault(gh, kind="foreign_upload_url", origin="http://127.0.0.2:9")
    assert api(gh, "GET", f"/releases/{rel.id}").json()["upload_url"].startswith("http://127.0.0.2:9/api/uploads/")
    assert api(gh, "GET", f"/releases/{rel.id}").json()["upload_url"].startswith(gh.url)  # one request only
    fault(gh, kind="redirect_get", status=307, count=5)
    moved = api(gh, "GET", "/releases/tags/v11", allow_redirects=False)
    assert (
        moved.status_code == 307 and moved.headers["Location"] == f"{gh.api_url}/_moved/repos/{REPO}/releases/tags/v11"
    )
    assert requests.get(moved.headers["Location"], headers={"Authorization": f"token {gh.token}"}, timeout=10).ok
    assert requests.post(f"{gh.url}/_emulator/clear", timeout=10).status_code == 204
    assert api(gh, "GET", "/releases/tags/v11", allow_redirects=False).status_code == 200
