"""Replay recorded real GitHub traffic (octokit/fixtures) against the emulator.

Each fixture request is sent as recorded; the emulator must answer with the same status,
the same Location/Link/content-type/rate-limit headers, and every recorded response key
with the same value, modulo hosts (api.github.com, uploads.github.com and github.com map
onto the emulator), timestamps, user objects and download counts. Extra keys that newer
GitHub sends (digest, immutable, updated_at) are allowed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import requests

from kestrel_release.sandbox.github.emulator import GithubEmulator

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "github"
TOKEN = "0000000000000000000000000000000000000001"
SHA1, SHA2 = "0" * 39 + "1", "0" * 39 + "2"
IGNORED_VALUES = {"author", "uploader", "download_count", "node_id"}  # modulo users and counters


def _load(scenario: str) -> list[dict]:
    # Committed in tests/data/github/ (README there): a missing file is an error, never a skip.
    return json.loads((FIXTURES / scenario / "normalized-fixture.json").read_text())


def _seed(gh: GithubEmulator, scenario: str) -> None:
    """Recreate what existed before the recording started."""
    if scenario == "release-assets":
        repo = "octokit-fixture-org/release-assets"
        gh.state.add_repo(repo, with_commit=False)
        gh.add_commit(repo, SHA1, parents=[])
        gh.add_release(repo, "v1.0.0", name="Version 1.0.0", body="Initial release", target=SHA1)
    else:  # git-refs: main at ...1, whose parent ...2 exists (the recorded PATCH is a fast-forward)
        repo = "octokit-fixture-org/git-refs"
        gh.state.add_repo(repo, with_commit=False)
        gh.add_commit(repo, SHA2, parents=[], branch=None)
        gh.add_commit(repo, SHA1, parents=[SHA2])


def _localize(text: str, base: str) -> str:
    text = text.replace("https://api.github.com", f"{base}/api/v3")
    text = text.replace("https://uploads.github.com", f"{base}/api/uploads")
    return text.replace("https://github.com", base)


def _normalize(value, base: str):
    if isinstance(value, dict):
        return {
            k: "<ignored>" if k in IGNORED_VALUES else "<time>" if k.endswith("_at") and v else _normalize(v, base)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_normalize(v, base) for v in value]
    return _localize(value, base) if isinstance(value, str) else value


def _subset(expected, actual, where="response"):
    """Every recorded key is present with an equal value (extra keys allowed)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            assert key in actual, f"{where}.{key} missing"
            _subset(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _subset(e, a, f"{where}[{i}]")
    else:
        assert expected == actual, f"{where}: recorded {expected!r}, emulator {actual!r}"


def _send(gh: GithubEmulator, step: dict) -> requests.Response:
    host = "api/uploads" if "uploads.github.com" in step["scope"] else "api/v3"
    headers = {k: str(v) for k, v in step["reqheaders"].items() if k not in ("host", "content-length")}
    body = step["body"]
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return requests.request(
        step["method"].upper(), f"{gh.url}/{host}{step['path']}", headers=headers, data=data or None, timeout=10
    )


@pytest.mark.parametrize("scenario", ["release-assets", "git-refs"])
def test_emulator_replays_recorded_github_traffic(scenario: str) -> None:
    steps = _load(scenario)
    with GithubEmulator(repos=(), token=TOKEN) as gh:
        _seed(gh, scenario)
        for i, step in enumerate(steps):
            resp = _send(gh, step)
            where = f"{scenario} step {i} {step['method'].upper()} {step['path']}"
            assert resp.status_code == step["status"], (where, resp.text)
            recorded = {k.lower(): str(v) for k, v in step["headers"].items()}
            for header in ("location", "link"):
                expected = recorded.get(header)
                got = resp.headers.get(header)
                assert (_localize(expected, gh.url) if expected else None) == got, (where, header)
            if "content-type" in recorded:
                assert resp.headers.get("content-type") == recorded["content-type"], where
            for header in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "x-ratelimit-used"):
                if header in recorded:
                    assert header in resp.headers, (where, header)
            if step["response"] == "":
                assert resp.content == b"", where
                continue
            _subset(_normalize(step["response"], gh.url), _normalize(resp.json(), gh.url), where)


def test_normalization_is_not_vacuous() -> None:
    """The comparison catches a wrong value (guards against a comparator that accepts anything)."""
    steps = _load("release-assets")
    recorded = _normalize(steps[1]["response"], "http://x")
    tampered = dict(recorded, name="other.txt")
    with pytest.raises(AssertionError, match="name"):
        _subset(recorded, tampered)
    assert re.search(r"releases/download/v1\.0\.0/test-upload\.txt$", recorded["browser_download_url"])
