"""The JSON Schema of [tool.kestrel-release] and the configuration reference, generated from the declarations.

Both are derived from config_model's fields (through config_settings) and, for the targets, from each registered
kind's settings (the registry's `settings`), so a setting is described where it is declared and a new kind's
table appears here without a line of this module naming it. `tools/gen-docs` (kestrel_release/reference.py) writes
config-schema.json and configuration.md there; a unit test fails when the committed ones are stale.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from kestrel_release import targets
from kestrel_release.config import settings as config_settings
from kestrel_release.config.model import MIB, Config, VersionFile
from kestrel_release.config.settings import Setting
from kestrel_release.config.variants import FORMATS, NAMINGS
from kestrel_release.config_loader import variants as config_variants

SCHEMA_FILE, REFERENCE_FILE = "config-schema.json", "configuration.md"
_SIZE = r"^ *[0-9.]+ *([KkMmGg][Ii]?)?[Bb] *$"  # "100MiB", "1.5 GB": config_values.parse_size's forms
_TYPE_WORDS = {
    "str": "string",
    "bool": "boolean",
    "int": "integer",
    "float": "number",
    "tuple[str, ...]": "list of strings",
    "dict[str, str]": "table of strings",
    "tuple[VersionFile, ...]": "list of {path, pattern}",
}


def _value_schema(s: Setting) -> dict[str, Any]:
    """The schema of one value, from its declared type (config_values.coerce accepts the same)."""
    if s.type == "str":
        out: dict[str, Any] = {"type": "string"}
        if s.choices:
            out["enum"] = [*s.choices, *([] if s.default in s.choices else [s.default])]
        return out
    if s.type == "bool":
        return {"type": "boolean"}
    if s.type == "int":
        number = {"type": "integer", "minimum": 0}
        return {"anyOf": [number, {"type": "string", "pattern": _SIZE}]} if s.size else number
    if s.type == "float":
        return {"type": "number", "minimum": 0}
    if s.type == "tuple[str, ...]":
        return {"type": ["array", "string"] if s.list_or_string else "array", "items": {"type": "string"}}
    if s.type == "dict[str, str]":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if s.type == "tuple[VersionFile, ...]":
        return {"type": "array", "items": _table(config_settings.declared(VersionFile, "", ""), required=True)}
    raise TypeError(f"{s.key}: no JSON Schema for the type {s.type}")  # a new type needs a line here


def _property(s: Setting) -> dict[str, Any]:
    out = {"description": s.doc, **_value_schema(s)}
    if s.default is not dataclasses.MISSING:
        out["default"] = _json(s.default)
    return out


def _json(value: Any) -> Any:
    return [_json(v) for v in value] if isinstance(value, tuple) else value


def _table(rows: list[Setting], doc: str = "", required: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object"}
    if doc:
        out["description"] = doc
    out["properties"] = {s.name: _property(s) for s in rows}
    needed = [s.name for s in rows if required or s.default is dataclasses.MISSING]
    if needed:
        out["required"] = needed
    out["additionalProperties"] = False
    return out


def settings() -> list[Setting]:
    """Every key: the configuration's own (config_settings) and each registered target kind's."""
    return [*config_settings.settings(), *targets.settings()]


def _kind_schema(kind: targets.TargetKind) -> dict[str, Any]:
    """One kind's table: its keys, its sub-tables, and `kind` (required where the name does not tell it)."""
    rows = targets.settings_of(kind, "")
    out = _table([s for s in rows if not s.table])
    for sub, doc in kind.TABLE.nested.items():
        out["properties"][sub] = _table([s for s in rows if s.table == sub], doc)
    if targets.needs_kind(kind):
        out["required"] = ["kind", *out.get("required", [])]
    out["properties"] = {"kind": {"const": kind.KIND, "description": "The kind of target."}, **out["properties"]}
    return out


def _targets_schema(doc: str) -> dict[str, Any]:
    """A target by name, of any registered kind, told apart by `kind`; a kind's fixed table by its name."""
    kinds = {kind.KIND: _kind_schema(kind) for kind in targets.KINDS.values()}
    fixed = {k.TABLE.table.rsplit(".", 1)[1]: kinds[k.KIND] for k in targets.KINDS.values() if "<" not in k.TABLE.table}
    return {
        "type": "object",
        "description": doc,
        "properties": fixed,
        "additionalProperties": {"anyOf": list(kinds.values())},
    }


def _variants_schema(doc: str) -> dict[str, Any]:
    """The variants table's keys (its parser, config_variants, checks the values' syntax)."""
    words = {"type": ["array", "string"], "items": {"type": "string"}}
    shapes: dict[str, dict[str, Any]] = {
        "naming": {"enum": list(NAMINGS)},
        "format": {"enum": list(FORMATS)},
        "default": {"type": "object"},
        "exclude": {"type": "array", "items": {"type": "object"}},
        "index": {"type": "object", "additionalProperties": {"type": "string"}},
        "stable_abi": {"type": "string", "pattern": r"^\d+\.\d+$"},
    }
    properties = {k: shapes.get(k, words) for k in config_variants.KEYS}
    return {"type": "object", "description": doc, "properties": properties, "additionalProperties": False}


def _tables() -> dict[str, str]:
    """Config's tables -> their doc."""
    return {f.name: f.metadata["doc"] for f in dataclasses.fields(Config) if f.metadata.get("table")}


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 7, as validate-pyproject reads) of the [tool.kestrel-release] table."""
    rows = config_settings.settings()
    out = _table([s for s in rows if not s.table], "kestrel-release: releases prebuilt CUDA kernel wheels.")
    for name, doc in _tables().items():
        if name == "targets":
            out["properties"][name] = _targets_schema(doc)
        elif name == "variants":
            out["properties"][name] = _variants_schema(doc)
        else:
            out["properties"][name] = _table([s for s in rows if s.table == name], doc)
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "[tool.kestrel-release]", **out}


def _default_cell(s: Setting) -> str:
    if s.default is dataclasses.MISSING:
        return "required"
    if s.size and s.default % MIB == 0:
        return f"`{s.default // MIB}MiB`" if s.default < 1024 * MIB else f"`{s.default // (1024 * MIB)}GiB`"
    text = json.dumps(_json(s.default))
    return f"`{text}`" if len(text) <= 40 else "below"


def _type_cell(s: Setting) -> str:
    if s.choices:
        return " \\| ".join(f"`{c}`" for c in s.choices)
    word = _TYPE_WORDS.get(s.type, s.type)
    return "size" if s.size else "list or string" if s.list_or_string else word


def _summary(doc: str) -> str:
    """The first sentence or clause of a doc, outside parentheses (a table cell stays short; the whole
    paragraph follows the table)."""
    depth = 0
    for i, char in enumerate(doc):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and doc.startswith((". ", "; "), i) and not doc[:i].endswith(("e.g", "i.e")):
            doc = doc[:i]
            break
    return doc.rstrip(".").replace("|", "\\|")


def _section(title: str, doc: str, rows: list[Setting], prefix: str = "") -> list[str]:
    """A table's heading, one row per key (named within the table) and each key's whole doc below."""
    lines = [f"## `{title}`", "", doc, "", "| key | type | default | variable | description |", "|---|---|---|---|---|"]
    keys = [s.key.removeprefix(f"{prefix}.") if prefix else s.key for s in rows]
    for key, s in zip(keys, rows, strict=True):
        env = f"`{s.env}`" if s.env else ""
        lines.append(f"| `{key}` | {_type_cell(s)} | {_default_cell(s)} | {env} | {_summary(s.doc)} |")
    lines.append("")
    for key, s in zip(keys, rows, strict=True):
        lines.append(f"- **`{key}`**: {s.doc}")
        if _default_cell(s) == "below":
            lines.append(f"  Default: `{json.dumps(_json(s.default))}`.")
    return [*lines, ""]


_INTRO = """\
# Configuration reference

<!-- Generated from the settings' declarations (kestrel_release/config/model.py) by tools/gen-docs;
edit the declarations, not this file. -->

The `[tool.kestrel-release]` table of the kernel package's `pyproject.toml`. Every key can be overridden by the
variable named in its row (lists comma-separated, tables and `version_files` as JSON or a TOML inline value), and
flags override both. The JSON Schema of the table is [config-schema.json](config-schema.json).
"""


def configuration_markdown() -> str:
    """The configuration reference: one section per table, one row per key."""
    rows = config_settings.settings()
    tables = _tables()
    lines = [_INTRO, *_section("[tool.kestrel-release]", "The top-level keys.", [s for s in rows if not s.table])]
    for name in config_settings.SECTIONS:
        lines += _section(f"[tool.kestrel-release.{name}]", tables[name], [s for s in rows if s.table == name], name)
    for kind in targets.in_order():
        prefix = kind.TABLE.table
        title = f"[tool.kestrel-release.{prefix}]" + (f' kind = "{kind.KIND}"' if targets.needs_kind(kind) else "")
        lines += _section(title, tables["targets"], targets.settings_of(kind), prefix)
    keys = ", ".join(f"`{k}`" for k in config_variants.KEYS)
    lines += ["## `[tool.kestrel-release.variants]`", "", f"{tables['variants']} Keys: {keys}.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
