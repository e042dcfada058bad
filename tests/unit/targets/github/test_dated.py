"""Which dated nightlies a run reuses and which it deletes (pure selection logic)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from kestrel_release.targets.github import dated

BASE = "kk-nightly"
SHA = "abcdef0123456789abcdef0123456789abcdef01"


@dataclass
class Rel:
    tag: str
    id: int


class Client:
    def __init__(self, releases: list[Rel]) -> None:
        self._releases = releases

    def releases(self) -> list[Rel]:
        return self._releases


def test_tag_is_today_and_the_commit_unless_this_commit_already_has_one() -> None:
    today = dt.date(2026, 11, 22)
    assert dated.tag_for(Client([]), BASE, SHA, today) == "kk-nightly-20261122-abcdef0"
    before_midnight = Rel("kk-nightly-20261121-abcdef0", 5)  # a re-run after midnight finishes it
    assert (
        dated.tag_for(Client([before_midnight, Rel("kk-nightly-20261122-1234567", 6)]), BASE, SHA, today)
        == before_midnight.tag
    )


def test_prune_keeps_the_newest_and_the_current_and_ignores_other_tags() -> None:
    rels = [
        Rel("kk-nightly-20261120-1111111", 1),
        Rel("kk-nightly-20261121-2222222", 2),
        Rel("kk-nightly-20261121-3333333", 3),
        Rel("kk-nightly-20261122-4444444", 4),
        Rel("v1.0.0", 5),
        Rel("kk-nightly", 6),
        Rel("kk-nightly-extra-20261119-5555555", 7),
        Rel("kk-nightlyX20261101-6666666", 8),
    ]
    doomed = dated.to_prune(rels, BASE, "kk-nightly-20261122-4444444", keep=2)
    assert [r.tag for r in doomed] == ["kk-nightly-20261121-2222222", "kk-nightly-20261120-1111111"]
    assert dated.to_prune(rels, BASE, "kk-nightly-20261122-4444444", keep=1)[0].tag == "kk-nightly-20261121-3333333"
    assert dated.to_prune(rels, BASE, "kk-nightly-20261122-4444444", keep=10) == []


def test_base_with_regex_characters_is_taken_literally() -> None:
    assert dated.pattern("a.b+c").match("a.b+c-20260101-abcdef0")
    assert not dated.pattern("a.b+c").match("aXbbc-20260101-abcdef0")
