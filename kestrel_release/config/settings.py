"""The settings table: every [tool.kestrel-release] key, derived from config_model's declarations.

A setting is declared once, as a field of config_model's frozen dataclasses (type, default) with
`doc(...)` metadata (description, allowed values). This module turns those fields into one row per
dotted key with its variable name, for the parser (config_parse), the JSON Schema and the
configuration reference (schema.py); nothing here is written per key. The targets' settings are each kind's
own (targets.settings, from the registry): this module sits below the targets and names none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kestrel_release.config.model import Config
from kestrel_release.config.values import PREFIX, env_word, field_default, suggest

# The tables of Config that hold plain settings ([tool.kestrel-release.build] ...): its fields declared
# with `table(...)` whose default is a dataclass. `targets` and `variants` have parsers of their own.
SECTIONS: dict[str, type] = {
    f.name: f.default_factory  # type: ignore[misc]
    for f in dataclasses.fields(Config)
    if f.metadata.get("table") and dataclasses.is_dataclass(f.default_factory)
}
# Config's fields that are not top-level keys: the project's identity and the tables.
TOP_SKIP = {f.name for f in dataclasses.fields(Config) if f.metadata.get("key") is False or f.metadata.get("table")}


@dataclass(frozen=True)
class Setting:
    key: str  # the dotted path in [tool.kestrel-release]: "build.container_engine"
    type: str  # the field's annotation: "str", "tuple[str, ...]", ...
    default: Any  # dataclasses.MISSING for a required key (an index target's repository_url)
    env: str  # the variable that overrides it ("" when none)
    doc: str
    choices: tuple[str, ...] = ()
    size: bool = False  # an integer that may be written "100MiB"
    list_or_string: bool = False  # a list that may be one string listing several ("80,90a")

    @property
    def name(self) -> str:
        return self.key.rsplit(".", 1)[-1]

    @property
    def table(self) -> str:
        """The dotted table the key is in ("" = [tool.kestrel-release] itself)."""
        return self.key.rsplit(".", 1)[0] if "." in self.key else ""


def declared(cls: type, prefix: str, env_prefix: str) -> list[Setting]:
    """One Setting per field of dataclass `cls`, its keys under `prefix`, its variables `env_prefix`+KEY."""
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if meta.get("key") is False or meta.get("table"):
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        out.append(
            Setting(
                key=f"{prefix}.{f.name}" if prefix else f.name,
                type=str(f.type),
                default=field_default(f) if has_default else dataclasses.MISSING,
                env=f"{env_prefix}{env_word(f.name)}" if env_prefix else "",
                doc=meta.get("doc", ""),
                choices=tuple(meta.get("choices", ())),
                size=bool(meta.get("size")),
                list_or_string=bool(meta.get("list_or_string")),
            )
        )
    return out


def settings() -> list[Setting]:
    """The configuration's own keys: the top-level ones and each section's (schema.settings adds the targets')."""
    out = declared(Config, "", PREFIX)
    for section, cls in SECTIONS.items():
        out += declared(cls, section, f"{PREFIX}{env_word(section)}_")
    return out


def undocumented(classes: tuple[type, ...]) -> Iterator[str]:
    """`Class.field` for each field of `classes` declared without a doc (a new setting must say what it does)."""
    for cls in classes:
        for f in dataclasses.fields(cls):
            if not str(f.metadata.get("doc", "")).strip():
                yield f"{cls.__name__}.{f.name}"


def choice_problems(obj: Any, prefix: str, at: Callable[[str], str]) -> list[str]:
    """One line for each field of dataclass `obj` whose value is neither its default nor a declared choice."""
    out = []
    for f in dataclasses.fields(obj):
        choices = tuple(f.metadata.get("choices", ()))
        value = getattr(obj, f.name)
        if not choices or value in choices or value == field_default(f):
            continue
        key = f"{prefix}.{f.name}" if prefix else f.name
        allowed = f"'{choices[0]}' or '{choices[1]}'" if len(choices) == 2 else f"one of {', '.join(choices)}"
        out.append(f"{at(key)}: '{value}' is not {allowed}{suggest(value, choices)}")
    return out
