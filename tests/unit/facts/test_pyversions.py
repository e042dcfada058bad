"""The one list of Pythons and which wheel tags serve each build, free-threaded ones included."""

from __future__ import annotations

import pytest

from kestrel_release.facts import pyversions


def test_the_tool_knows_3_10_to_3_15_and_their_free_threaded_builds() -> None:
    assert pyversions.known() == (
        "3.10", "3.11", "3.12", "3.13", "3.13t", "3.14", "3.14t", "3.15", "3.15t",
    )  # fmt: skip
    assert pyversions.known(free_threaded=False)[-2:] == ("3.14", "3.15")


@pytest.mark.parametrize(
    ("tag", "served", "not_served"),
    [
        ("cp314-cp314", ["3.14"], ["3.14t", "3.13", "3.15"]),
        ("cp314-cp314t", ["3.14t"], ["3.14", "3.15t"]),
        ("cp315-cp315t", ["3.15t"], ["3.15", "3.14t"]),
        # abi3 is the GIL build's stable ABI: no free-threaded interpreter takes it.
        ("cp310-abi3", ["3.10", "3.14", "3.15"], ["3.14t", "3.15t", "3.13t"]),
        # abi3t (PEP 803): free-threaded builds from its floor on, and no GIL build.
        ("cp315-abi3t", ["3.15t"], ["3.14t", "3.15", "3.14"]),
        ("py3-none", ["3.10", "3.14t", "3.15t"], []),
        ("cp314-none", ["3.14", "3.14t"], ["3.15"]),
    ],
)
def test_which_pythons_a_tag_serves(tag: str, served: list[str], not_served: list[str]) -> None:
    interp, abi = tag.split("-")
    assert [py for py in served if pyversions.serves(interp, abi, py)] == served
    assert [py for py in not_served if pyversions.serves(interp, abi, py)] == []


def test_a_free_threaded_interpreter_prefers_its_own_tag_then_abi3t() -> None:
    pairs = pyversions.tag_pairs(pyversions.Py(15, True))
    assert pairs[:3] == (("cp315", "cp315t"), ("cp315", "abi3t"), ("cp315", "none"))
    assert ("cp310", "abi3") not in pairs


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("3.14", None),
        ("3.14t", None),
        ("3.13t", None),
        ("3.12t", "'3.12t': free-threaded builds exist from CPython 3.13 on"),
        ("3.14T", "'3.14T' is not a CPython version like 3.12 (or 3.14t for the free-threaded build)"),
        ("cp314", "'cp314' is not a CPython version like 3.12 (or 3.14t for the free-threaded build)"),
        ("2.7", "'2.7' is not a CPython version like 3.12 (or 3.14t for the free-threaded build)"),
    ],
)
def test_config_spelling_of_a_python(text: str, why: str | None) -> None:
    assert pyversions.problem(text) == why


def test_loose_spellings_for_flags() -> None:
    assert pyversions.parse("cp314t", loose=True) == pyversions.Py(14, True)
    assert pyversions.parse("315", loose=True) == pyversions.Py(15, False)
    assert pyversions.parse("3.14", loose=True).abi == "cp314"
    assert pyversions.parse("3.14t").abi == "cp314t"
