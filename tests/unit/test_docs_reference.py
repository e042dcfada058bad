"""The documentation site: generated reference pages match the code, and the README stays the front door."""

from __future__ import annotations

import re

from kestrel_release import reference
from kestrel_release.errors import EXIT_CODES
from kestrel_release.stages.verify.finding import Finding
from kestrel_release.stages.verify.rule_table import BY_ID
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_generated_reference_pages_are_current() -> None:
    assert reference.stale(ROOT / "docs" / "reference") == [], (
        "run: python -m kestrel_release.reference --write docs/reference"
    )


def test_a_stale_page_is_named(tmp_path) -> None:
    assert reference.main(["--write", str(tmp_path)]) == 0
    assert reference.stale(tmp_path) == []
    page = tmp_path / "exit-codes.md"
    page.write_text(page.read_text().replace("| 6 |", "| 7 |"))
    assert reference.stale(tmp_path) == ["exit-codes.md"]
    assert reference.main(["--check", str(tmp_path)]) == 1


def test_exit_codes_page_lists_every_code() -> None:
    page = (ROOT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|\s*$", page, re.M)
    assert [(int(code), meaning) for code, meaning in rows] == EXIT_CODES


def test_a_rule_missing_from_the_table_cannot_be_reported() -> None:
    assert Finding("source-leak", "error", "x.cu", "m").rule in BY_ID
    try:
        Finding("no-such-rule", "error", "x", "m")
    except ValueError as e:
        assert "rule_table" in str(e)
    else:
        raise AssertionError("an undocumented rule id was accepted")


def test_readme_is_a_short_front_door() -> None:
    assert len(README.encode()) <= 8 * 1024
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```bash\n(.*?)```", quickstart, re.S)
    assert commands and len(commands.group(1).strip().splitlines()) == 2
    assert "tools/uv run mkdocs build --strict" in README


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).is_file(), target
