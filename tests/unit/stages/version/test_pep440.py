"""Pure version arithmetic: every bump kind, and the strings PyPI would refuse."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from packaging.version import Version

from kestrel_release.errors import UsageError
from kestrel_release.stages.version.pep440 import KINDS, next_version, parse

NOW = datetime(2026, 11, 22, 15, 30, 59, tzinfo=timezone.utc)

CASES = [
    # major / minor / patch: increment, or finalize a pre/dev release already at that level
    ("0.1.0", "major", "1.0.0"),
    ("1.0.0rc1", "major", "1.0.0"),
    ("1.2.0rc1", "major", "2.0.0"),
    ("0.1.0", "minor", "0.2.0"),
    ("0.2.0b1", "minor", "0.2.0"),
    ("0.2.1b1", "minor", "0.3.0"),
    ("0.1.0", "patch", "0.1.1"),
    ("0.1.1rc2", "patch", "0.1.1"),
    ("0.1.1.dev3", "patch", "0.1.1"),
    ("0.1.0.post2", "patch", "0.1.1"),
    ("1.2", "patch", "1.2.1"),
    ("1!2.0.0", "patch", "1!2.0.1"),
    # pre: cycles a -> b -> rc, then counts rc
    ("0.1.0", "pre", "0.1.1a1"),
    ("0.1.1a2", "pre", "0.1.1b1"),
    ("0.1.1b1", "pre", "0.1.1rc1"),
    ("0.1.1rc1", "pre", "0.1.1rc2"),
    ("0.1.1.dev3", "pre", "0.1.1a1"),
    ("0.1.1a1.dev2", "pre", "0.1.1a1"),
    ("0.1.0.post1", "pre", "0.1.1a1"),
    # rc
    ("0.1.0", "rc", "0.1.1rc1"),
    ("0.1.1a2", "rc", "0.1.1rc1"),
    ("0.1.1rc1", "rc", "0.1.1rc2"),
    ("0.1.1rc2.dev1", "rc", "0.1.1rc2"),
    ("0.1.1a1.dev1", "rc", "0.1.1rc1"),
    ("0.1.1.dev4", "rc", "0.1.1rc1"),
    # post
    ("0.1.0", "post", "0.1.0.post1"),
    ("0.1.0.post1", "post", "0.1.0.post2"),
    # dev
    ("0.1.0", "dev", "0.1.1.dev1"),
    ("0.1.1.dev1", "dev", "0.1.1.dev2"),
    ("0.1.1a1", "dev", "0.1.1a2.dev1"),
    ("0.1.0.post1", "dev", "0.1.0.post2.dev1"),
    # nightly: next patch, UTC minute; a version with .devN keeps its base
    ("0.1.0", "nightly", "0.1.1.dev202611221530"),
    ("0.1.1.dev202611210300", "nightly", "0.1.1.dev202611221530"),
    ("0.1.1rc1", "nightly", "0.1.1rc2.dev202611221530"),
    ("0.1.0.post1", "nightly", "0.1.1.dev202611221530"),
]


@pytest.mark.parametrize(("current", "kind", "expected"), CASES)
def test_bump(current: str, kind: str, expected: str) -> None:
    new = next_version(current, kind, now=NOW)
    assert new == expected
    assert Version(new) > Version(current)  # every bump goes forward
    assert Version(new).local is None


def test_every_kind_is_covered() -> None:
    assert {kind for _, kind, _ in CASES} == set(KINDS)


def test_nightly_uses_utc_and_sorts_by_time() -> None:
    east = timezone(timedelta(hours=9))
    assert next_version("0.1.0", "nightly", datetime(2026, 11, 23, 0, 30, tzinfo=east)) == "0.1.1.dev202611221530"
    naive = datetime(2026, 11, 22, 15, 30)  # naive means UTC
    assert next_version("0.1.0", "nightly", naive) == "0.1.1.dev202611221530"
    first = next_version("0.1.0", "nightly", NOW)
    later = next_version(first, "nightly", NOW + timedelta(hours=11))
    assert Version(later) > Version(first) and later.startswith("0.1.1.dev")


@pytest.mark.parametrize("current", ["0.1.1rc1", "0.1.1.dev3"])
def test_post_refused_on_unreleased(current: str) -> None:
    with pytest.raises(UsageError, match="post releases follow a final release"):
        next_version(current, "post")


def test_unknown_kind_suggests() -> None:
    with pytest.raises(UsageError, match="did you mean 'patch'"):
        next_version("0.1.0", "pach")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("1.0+cu124", "local version (+cu124)"),
        ("not-a-version", "not a valid PEP 440 version"),
        ("", "not a valid PEP 440 version"),
    ],
)
def test_parse_refuses(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        parse(text)


def test_parse_normalizes() -> None:
    assert str(parse("1.0.0-RC1")) == "1.0.0rc1"
