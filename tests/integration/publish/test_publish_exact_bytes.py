"""publish sends exactly the bytes verify checked, and says "uploaded" only when the index holds them.

Against a non-validating index (tests/integration/lying_index.py) that drops, rewrites or delays uploads,
and while the wheel on disk is changed between the first attempt and the retry.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.lying_index import LyingIndex

PASSWORD = "pypi-lying-index-token-0123456789"
ENV = {
    "TWINE_USERNAME": "__token__",
    "TWINE_PASSWORD": PASSWORD,
    "KESTREL_RELEASE_PUBLISH_TIMEOUT": "10",
    "KESTREL_RELEASE_PUBLISH_RETRIES": "2",
    "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05",
    "KESTREL_RELEASE_PUBLISH_MAX_BACKOFF": "0.1",
}


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(root / "dist-all", pythons=("3.12",))
    return root


@pytest.fixture
def index():
    with LyingIndex() as server:
        yield server


def the_wheel(project):
    (wheel,) = (project / "dist-all").glob("*.whl")
    return wheel


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def publish(project, url, *extra):
    args = ["publish", "--project", str(project), "--target", "lying", "--repository-url", url + "/legacy/"]
    return run_cli([*args, "--yes", *extra], env=ENV, timeout=300)


@pytest.mark.parametrize("swap", ["rewritten", "symlink to a private file"])
def test_a_retry_sends_the_verified_bytes_when_the_wheel_changes_while_waiting(project, index, tmp_path, swap) -> None:
    wheel = the_wheel(project)
    verified = wheel.read_bytes()
    private = tmp_path / "home" / "private.key"
    private.parent.mkdir()
    private.write_bytes(b"PRIVATE KEY MATERIAL " * 100)

    def change_the_wheel() -> None:  # while publish waits to retry the 503
        if swap == "rewritten":
            wheel.write_bytes(verified[:-10] + b"0123456789")
        else:
            wheel.unlink()
            wheel.symlink_to(private)

    index.fail_first = change_the_wheel
    result = publish(project, index.url, "--json")
    assert [sha(r["content"]) for r in index.received] == [sha(verified)] * 2  # both attempts: the verified bytes
    assert all(r["form_sha256"] == sha(verified) for r in index.received)
    assert index.store[wheel.name] == verified
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(r["filename"], r["sha256"]) for r in doc["uploaded"]] == [(wheel.name, sha(verified))]
    assert all(b"PRIVATE KEY" not in r["content"] for r in index.received)


def test_an_index_that_acknowledges_and_stores_nothing_is_exit_6(project, index) -> None:
    index.mode = "drop"
    result = publish(project, index.url)
    assert_one_line_error(result, 6, the_wheel(project).name, "does not list the file")
    assert "lying: 0 uploaded, 0 skipped, 1 failed" in result.output and "caches may lag" not in result.output
    again = publish(project, index.url, "--json")  # the re-run sends it again: nothing was skipped as "there"
    assert again.code == 6 and json.loads(again.stdout)["ok"] is False


@pytest.mark.parametrize("hashes", [True, False], ids=["page-lists-sha256", "page-lists-no-hash"])
def test_an_index_that_stores_other_bytes_is_exit_6_with_what_it_holds(project, index, hashes) -> None:
    index.mode, index.hashes = "rewrite", hashes
    verified = the_wheel(project).read_bytes()
    result = publish(project, index.url)
    held = sha(index.store[the_wheel(project).name])
    assert held != sha(verified)
    assert_one_line_error(result, 6, "other bytes", held, sha(verified))
    if not hashes:  # no hash on the page: the file itself was read back
        assert any(m == "GET" and p.startswith("/files/") for m, p, _ in index.requests)


def test_an_index_without_hashes_is_confirmed_by_reading_the_file_back(project, index) -> None:
    index.hashes = False
    result = publish(project, index.url, "--json")
    assert result.code == 0, result.output
    assert [r["filename"] for r in json.loads(result.stdout)["uploaded"]] == [the_wheel(project).name]
    assert any(m == "GET" and p == f"/files/{the_wheel(project).name}" for m, p, _ in index.requests)


def test_credentials_go_only_to_the_upload_origin(project) -> None:
    """The page and the files are on another origin than the upload URL: read without the credentials,
    by publish's read-back and by the smoke test."""
    with LyingIndex() as upload, LyingIndex(store=upload.store) as mirror:
        upload.hashes = mirror.hashes = False  # the read-back downloads the file too
        upload.files_base = mirror.files_base = mirror.url
        pyproject = project / "pyproject.toml"
        pyproject.write_text(
            pyproject.read_text()
            + f'[tool.kestrel-release.targets.lying]\nrepository_url = "{upload.url}/legacy/"\n'
            + f'simple_url = "{mirror.url}/simple/"\n'
        )
        result = run_cli(
            ["publish", "--project", str(project), "--target", "lying", "--yes", "--smoke-test"], env=ENV, timeout=300
        )
        assert upload.requests and all(auth for m, _, auth in upload.requests if m == "POST")
        assert mirror.requests, result.output
        assert not any(auth for _, _, auth in mirror.requests), mirror.requests
        assert any(p.startswith("/files/") for _, p, _ in mirror.requests)
        assert PASSWORD not in result.output
        assert os.environ.get("TWINE_PASSWORD") != PASSWORD  # the test's own process never held it
