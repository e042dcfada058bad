"""A key is added by declaring one field: everything else (the parser, the variable, the type check, the
schema, the reference) follows from that declaration. The field is declared here on a throwaway copy of the
build table, put where the declarations are read (config.settings.SECTIONS)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kestrel_release.config import settings as config_settings
from kestrel_release.config.model import BuildConfig, doc
from kestrel_release.config_loader import parse as config_parse
from kestrel_release.config_loader import schema


@pytest.fixture
def knob(monkeypatch: pytest.MonkeyPatch) -> None:
    """[tool.kestrel-release.build] knob: the one declaration of a new key."""
    with_knob = dataclasses.make_dataclass(
        "BuildConfig",
        # a string annotation, as every declaring module has it (`from __future__ import annotations`)
        [("knob", "int", dataclasses.field(default=3, metadata=doc("Turns the knob (a key added in a test).")))],
        bases=(BuildConfig,),
        frozen=True,
    )
    monkeypatch.setitem(config_settings.SECTIONS, "build", with_knob)


def _load(table: dict, env: dict[str, str]) -> tuple[object, list[str]]:
    errors: list[str] = []
    cfg = config_parse.build(Path("."), "demo", "1.0", table, env, errors)
    return cfg, errors


def test_the_new_key_is_read_from_the_pyproject_and_its_variable(knob: None) -> None:
    cfg, errors = _load({"build": {"knob": 7}}, {})
    assert errors == [] and cfg.build.knob == 7  # type: ignore[attr-defined]
    cfg, errors = _load({"build": {"knob": 7}}, {"KESTREL_RELEASE_BUILD_KNOB": "9"})
    assert errors == [] and cfg.build.knob == 9  # type: ignore[attr-defined]
    cfg, errors = _load({}, {})
    assert cfg.build.knob == 3  # type: ignore[attr-defined]
    assert config_parse.env_table()["KESTREL_RELEASE_BUILD_KNOB"] == "build.knob"


def test_the_new_key_is_type_checked_with_its_place_named(knob: None) -> None:
    _, errors = _load({"build": {"knob": "high"}}, {})
    assert len(errors) == 1 and errors[0].startswith("[tool.kestrel-release].build.knob:")


def test_the_new_key_is_in_the_schema_and_the_reference(knob: None) -> None:
    prop = schema.json_schema()["properties"]["build"]["properties"]["knob"]
    assert prop["default"] == 3 and prop["type"] == "integer"
    assert "Turns the knob" in prop["description"]
    reference = schema.configuration_markdown()
    assert "`knob`" in reference and "KESTREL_RELEASE_BUILD_KNOB" in reference


def test_without_the_declaration_the_key_is_unknown() -> None:
    _, errors = _load({"build": {"knob": 7}}, {})
    assert errors and "build.knob: unknown key" in errors[0]
