"""platforms/arches.py is THE table of CPU architectures: every CPU a platform accepts, a host
reports or a binary header names comes from it, and no module outside platforms/ spells one out."""

from __future__ import annotations

import ast
import re

import pytest

from kestrel_release import platforms
from kestrel_release.adapters import host
from kestrel_release.artifacts import binformat
from kestrel_release.platforms import arches, linux, macos, windows
from tests.helpers import ROOT

NAMES = {a.name for a in arches.ARCHES}
WORDS = {w for a in arches.ARCHES for w in (a.name, *a.spellings)}
# Files still spelling CPUs out, each with why; the list only shrinks (a file that stops is reported).
ALLOWED = {
    "kestrel_release/config/variants.py": "the variant model's defaults (x86_64), landed beside this work",
}


def test_every_cpu_a_platform_accepts_is_in_the_table() -> None:
    accepted = {*linux.ARCHES, *macos.ARCHES, *windows.TAGS.values(), *(a for m in macos.MULTI.values() for a in m)}
    assert accepted <= NAMES
    for os_ in platforms.REGISTRY.values():
        assert set(os_.runners) <= NAMES, os_.system
        for tag in os_.examples:
            assert set(platforms.parse(tag).arches) <= NAMES, tag  # type: ignore[union-attr]


@pytest.mark.parametrize("word", sorted(WORDS))
def test_a_host_reports_each_spelling_as_the_tables_name(monkeypatch: pytest.MonkeyPatch, word: str) -> None:
    monkeypatch.setattr(host.platform, "machine", lambda: word.upper())
    monkeypatch.setattr(host.toolchain, "glibc_version", lambda: "2.36")
    assert host.current().arch == arches.canonical(word) in NAMES


def test_binary_headers_name_only_table_machines() -> None:
    machines = {a.machine for a in arches.ARCHES}
    for table in (binformat.ELF_MACHINES, binformat.PE_MACHINES, binformat.MACHO_CPUS):
        assert set(table.values()) - {"cuda"} <= machines


def _string_literals(path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_module_outside_platforms_names_a_cpu() -> None:
    words = WORDS | set(windows.TAGS) | set(macos.MULTI)
    alternatives = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    pattern = re.compile(rf"(?<![A-Za-z0-9])({alternatives})(?![A-Za-z0-9])")
    package = ROOT / "kestrel_release"
    naming = {
        str(path.relative_to(ROOT)): line
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(package).parts[0] != "platforms"
        for line, text in _string_literals(path)
        if pattern.search(text)
    }
    assert sorted(set(naming) - set(ALLOWED)) == [], "ask kestrel_release/platforms instead"
    assert sorted(set(ALLOWED) - set(naming)) == [], "no CPU names left: remove it from ALLOWED"


def test_the_scan_sees_a_cpu_name_in_code(tmp_path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text('"""x86_64 in a docstring is prose."""\nHOSTED = {"linux-aarch64": "ubuntu-24.04-arm"}\n')
    assert [text for _line, text in _string_literals(sample)] == ["linux-aarch64", "ubuntu-24.04-arm"]
