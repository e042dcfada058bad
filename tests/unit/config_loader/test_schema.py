"""The JSON Schema and the configuration reference: generated from the declarations, committed, current,
and the schema accepts the tables this repository ships (kernels/ and examples/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from kestrel_release._compat import tomllib
from kestrel_release.config import settings as config_settings
from kestrel_release.config_loader import schema

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "docs" / "reference"
SHIPPED = [ROOT / "kernels" / "pyproject.toml", *sorted((ROOT / "examples").glob("*/pyproject.toml"))]


def _table(pyproject: Path) -> Any:
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["kestrel-release"]


def _errors(table: Any) -> list[str]:
    return [error.message for error in Draft7Validator(schema.json_schema()).iter_errors(table)]


def test_the_committed_schema_is_the_generated_one():
    committed = json.loads((REFERENCE / schema.SCHEMA_FILE).read_text(encoding="utf-8"))
    assert committed == schema.json_schema(), "docs/reference/config-schema.json is stale: run tools/gen-docs"


def test_the_committed_reference_is_the_generated_one():
    committed = (REFERENCE / schema.REFERENCE_FILE).read_text(encoding="utf-8")
    assert committed == schema.configuration_markdown(), "docs/reference/configuration.md is stale: run tools/gen-docs"


def test_the_schema_is_a_draft7_schema():
    Draft7Validator.check_schema(schema.json_schema())


@pytest.mark.parametrize("pyproject", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_schema_accepts_the_tables_this_repository_ships(pyproject):
    assert _errors(_table(pyproject)) == []


def test_the_schema_accepts_every_default():
    rows = config_settings.settings()
    table: dict[str, Any] = {}
    for s in rows:
        if s.table in config_settings.SECTIONS or not s.table:
            value = list(s.default) if isinstance(s.default, tuple) else s.default
            (table.setdefault(s.table, {}) if s.table else table)[s.name] = value
    assert _errors(table) == []


@pytest.mark.parametrize(
    ("table", "word"),
    [
        ({"build": {"container_engine": "podmn"}}, "'podmn' is not one of"),
        ({"abi": "abi4"}, "'abi4' is not one of"),
        ({"pyhton": ["3.12"]}, "'pyhton' was unexpected"),
        ({"build": {"jobs": -1}}, "less than the minimum"),
        ({"verify": {"max_file_size": "a lot"}}, "is not valid under any of the given schemas"),
        ({"targets": {"github": {"nightly": "weekly"}}}, "'weekly' is not one of"),
        ({"targets": {"wheels": {"kind": "static-index"}}}, "is not valid under any of the given schemas"),
        ({"variants": {"naming": "suffix"}}, "'suffix' is not one of"),
    ],
)
def test_the_schema_refuses_what_the_parser_refuses(table, word):
    assert any(word in message for message in _errors(table)), _errors(table)


def test_the_schema_takes_the_forms_the_parser_takes():
    table = {
        "cuda_arch": "80,90a",
        "verify": {"max_file_size": "200MiB"},
        "build": {"container_engine": ""},
        "targets": {
            "mirror": {"repository_url": "https://example.org/legacy/"},
            "wheels": {"kind": "static-index", "dir": "site/whl", "github": {"repo": "o/n", "tag": "v{version}"}},
        },
    }
    assert _errors(table) == []


def test_the_reference_has_a_row_per_key_with_its_variable():
    text = schema.configuration_markdown()
    for s in schema.settings():
        assert f"| `{s.name}` |" in text or f"| `{s.key}` |" in text, s.key
        assert not s.env or f"`{s.env}`" in text
