"""The metadata cache's key in words: what -v says when a cached answer is or is not reused."""

from __future__ import annotations

from kestrel_release.project import backend_meta_key as key

HEAD = "a" * 40
BASE = {
    "format": key.CACHE_FORMAT,
    "isolated": True,
    "file pyproject.toml": "1",
    "git HEAD": HEAD,
    "git branch": "main",
    "git tags": [f"v5.11.0 {'b' * 40}"],
    "git dirty": {},
}


def test_a_new_tag_at_head_is_named() -> None:
    now = {**BASE, "git tags": [*BASE["git tags"], f"v5.11.1 {HEAD}"]}
    assert key.changes(BASE, now) == ["git tags changed: new v5.11.1"]
    assert key.describe(now) == "1 input file(s) unchanged, HEAD aaaaaaaaaaaa, tags at HEAD: v5.11.1, clean tree"
    assert key.digest(now) != key.digest(BASE)


def test_a_moved_tag_head_dirt_files_and_environment_are_named() -> None:
    now = {
        **BASE,
        "git HEAD": "c" * 40,
        "git tags": [f"v5.11.0 {'d' * 40}"],
        "git dirty": {"pkg/_version.h": "x"},
        "git dirty day": "20260101",
        "file pyproject.toml": "2",
        "env SETUPTOOLS_SCM_PRETEND_VERSION": "e",
    }
    said = key.changes(BASE, now)
    assert said[:3] == [
        "HEAD moved: aaaaaaaaaaaa -> cccccccccccc",
        "uncommitted changes differ (pkg/_version.h)",
        "git tags changed: a tag moved",
    ]
    assert "$SETUPTOOLS_SCM_PRETEND_VERSION is set" in said and "pyproject.toml changed" in said
    assert key.changes(None, BASE) == ["no earlier answer for this project"]


def test_the_key_does_not_depend_on_the_order_of_its_inputs() -> None:
    assert key.digest(dict(reversed(list(BASE.items())))) == key.digest(BASE)
