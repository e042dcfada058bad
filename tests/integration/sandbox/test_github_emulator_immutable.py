"""The emulator's immutable releases, over HTTP, against docs/github-releases.md point 6.

Each rule is checked the way a client sees it: status code and GitHub's JSON body. Release
objects keep every key of the recorded real traffic (octokit fixture) and add `immutable`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from kestrel_release.sandbox.github.emulator import GithubEmulator

REPO = "m87-labs/kestrel"
FIXTURE = Path(__file__).resolve().parents[2] / "data" / "github" / "release-assets" / "normalized-fixture.json"
BURNED = {
    "message": "Validation Failed",
    "errors": [
        {
            "resource": "Release",
            "code": "custom",
            "field": "tag_name",
            "message": "tag_name was used by an immutable release",
        }
    ],
}


@pytest.fixture()
def gh():
    with GithubEmulator(repos=(REPO,)) as emulator:
        yield emulator


def api(gh, method: str, path: str, **kwargs) -> requests.Response:
    return requests.request(
        method, f"{gh.api_url}/repos/{REPO}{path}", timeout=10, headers={"Authorization": f"token {gh.token}"}, **kwargs
    )


def upload(gh, release_id: int, name: str, data: bytes = b"abc") -> requests.Response:
    return requests.post(
        f"{gh.url}/api/uploads/repos/{REPO}/releases/{release_id}/assets",
        params={"name": name},
        data=data,
        headers={"Authorization": f"token {gh.token}", "Content-Type": "application/octet-stream"},
        timeout=10,
    )


def immutable_release(gh, tag: str = "v1.0.0") -> dict:
    """Turn the setting on through the API, then draft -> upload -> publish."""
    assert api(gh, "PUT", "/immutable-releases").status_code == 204
    draft = api(gh, "POST", "/releases", json={"tag_name": tag, "draft": True}).json()
    assert draft["immutable"] is False  # a draft is still mutable: this is where assets go
    assert upload(gh, draft["id"], "a.whl").status_code == 201
    published = api(gh, "PATCH", f"/releases/{draft['id']}", json={"draft": False})
    assert published.status_code == 200
    return published.json()


def test_setting_is_read_and_changed_through_the_api(gh) -> None:
    off = api(gh, "GET", "/immutable-releases")
    assert (off.status_code, off.json()["message"]) == (404, "Not Found")  # GitHub: 404 when disabled
    assert api(gh, "PUT", "/immutable-releases").status_code == 204
    on = api(gh, "GET", "/immutable-releases")
    assert (on.status_code, on.json()) == (200, {"enabled": True, "enforced_by_owner": False})
    assert api(gh, "DELETE", "/immutable-releases").status_code == 204
    assert api(gh, "GET", "/immutable-releases").status_code == 404


def test_published_release_is_immutable_and_keeps_the_recorded_shape(gh) -> None:
    rel = immutable_release(gh)
    assert rel["immutable"] is True and api(gh, "GET", "/releases/tags/v1.0.0").json()["immutable"] is True
    recorded = json.loads(FIXTURE.read_text())[0]["response"]  # every key real GitHub sent for a release
    assert set(recorded) - set(rel) == set(), set(recorded) - set(rel)


def test_assets_of_a_published_immutable_release_cannot_change(gh) -> None:
    rel = immutable_release(gh)
    refused = upload(gh, rel["id"], "b.whl")
    assert (refused.status_code, refused.json()["message"]) == (422, "Cannot upload assets to an immutable release")
    asset = rel["assets"][0]["id"]
    assert api(gh, "PATCH", f"/releases/assets/{asset}", json={"name": "c.whl"}).status_code == 422
    assert api(gh, "DELETE", f"/releases/assets/{asset}").status_code == 422
    assert [a["name"] for a in api(gh, "GET", f"/releases/{rel['id']}/assets").json()] == ["a.whl"]
    # Only title and notes can be edited.
    edited = api(gh, "PATCH", f"/releases/{rel['id']}", json={"name": "New title", "body": "notes"})
    assert (edited.status_code, edited.json()["name"]) == (200, "New title")
    assert api(gh, "PATCH", f"/releases/{rel['id']}", json={"tag_name": "v9"}).status_code == 422


def test_tag_cannot_move_or_be_deleted(gh) -> None:
    immutable_release(gh)
    sha = gh.tag_sha(REPO, "v1.0.0")
    newer = gh.add_commit(REPO)
    moved = api(gh, "PATCH", "/git/refs/tags/v1.0.0", json={"sha": newer, "force": True})
    assert moved.status_code == 422
    assert api(gh, "DELETE", "/git/refs/tags/v1.0.0").status_code == 422
    assert gh.tag_sha(REPO, "v1.0.0") == sha


def test_release_can_be_deleted_but_its_tag_stays_and_the_name_is_burned(gh) -> None:
    rel = immutable_release(gh)
    sha = gh.tag_sha(REPO, "v1.0.0")
    assert api(gh, "DELETE", f"/releases/{rel['id']}").status_code == 204
    assert api(gh, "GET", "/releases/tags/v1.0.0").status_code == 404
    assert api(gh, "GET", "/git/ref/tags/v1.0.0").json()["object"]["sha"] == sha  # the tag stays
    assert api(gh, "DELETE", "/git/refs/tags/v1.0.0").status_code == 422  # and stays locked
    api(gh, "DELETE", "/immutable-releases")  # turning the setting off does not free the name
    again = api(gh, "POST", "/releases", json={"tag_name": "v1.0.0"})
    body = again.json()
    assert again.status_code == 422
    assert {k: body[k] for k in ("message", "errors")} == BURNED
    other = api(gh, "POST", "/releases", json={"tag_name": "v1.0.1", "draft": True}).json()
    assert (
        api(gh, "PATCH", f"/releases/{other['id']}", json={"tag_name": "v1.0.0"}).json()["errors"] == BURNED["errors"]
    )


def test_releases_published_before_the_setting_stay_mutable(gh) -> None:
    old = api(gh, "POST", "/releases", json={"tag_name": "v0.9.0"}).json()
    assert api(gh, "PUT", "/immutable-releases").status_code == 204
    assert api(gh, "GET", f"/releases/{old['id']}").json()["immutable"] is False
    assert upload(gh, old["id"], "late.whl").status_code == 201
