"""Reading one configuration value: types, sizes, lists, env strings; shared by config_parse and the targets.

Kept apart from config_parse so that a publish target (targets/) parses its own table with the same
rules and the same messages without importing the parser that asks it.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable
from typing import Any, TypeVar

from kestrel_release.config.model import MIB, Config

PREFIX = "KESTREL_RELEASE_"
T = TypeVar("T")
# Keys whose value may be one string listing several ("80,90a"), as the env form: the old single-arch form stays
# valid. Declared in config_model (`doc(..., list_or_string=True)`).
_SPLIT_KEYS = [f.name for f in dataclasses.fields(Config) if f.metadata.get("list_or_string")]
_LIST_OR_STRING = tuple(f".{k}" for k in _SPLIT_KEYS)
_ENV_LISTS = tuple(f"_{k.upper()}" for k in _SPLIT_KEYS)


def fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def suggest(key: str, known: Iterable[str]) -> str:
    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def coerce(where: str, value: Any, default: Any, errors: list[str], from_env: bool = False) -> Any:
    """Check `value` against the type of `default`; env strings are parsed."""
    if from_env and isinstance(default, dict) and isinstance(value, str):
        value = parse_structured(value)
    if isinstance(default, bool):
        if from_env and isinstance(value, str):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
        if isinstance(value, bool):
            return value
        errors.append(f"{where}: expected true or false, got {value!r}")
        return default
    if isinstance(default, (int, float)):
        if from_env and isinstance(value, str):
            try:
                value = type(default)(value)
            except ValueError:
                pass
        if isinstance(default, int) and isinstance(value, str):  # "6KiB": the same forms in env and pyproject
            value = parse_size(value, where, errors)
        # `value >= 0` is False for nan; inf is refused too (int(inf) raises, and no limit is infinite).
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"):
            return type(default)(value)
        errors.append(f"{where}: expected a non-negative number, got {value!r}")
        return default
    if isinstance(default, tuple):
        if from_env and isinstance(value, str) and value.lstrip().startswith("["):  # JSON/TOML, as tables
            value = parse_structured(value)
        if isinstance(value, str) and (from_env or where.endswith(_LIST_OR_STRING)):
            sep = r"[,;\s]+" if where.endswith(_LIST_OR_STRING) or where.endswith(_ENV_LISTS) else ","
            value = [v.strip() for v in re.split(sep, value) if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        errors.append(f"{where}: expected a list of strings, got {value!r}")
        return default
    if isinstance(default, dict):
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            return dict(value)
        errors.append(f"{where}: expected a table of strings, got {value!r}")
        return default
    if isinstance(value, str):
        return value
    errors.append(f"{where}: expected a string, got {value!r}")
    return default


def parse_structured(text: str) -> Any:
    """A table or list given in an environment variable: JSON, or a TOML inline value; else the text."""
    import json

    from kestrel_release._compat import tomllib

    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def env_word(name: str) -> str:
    """A key or target name as it appears in a variable name: upper case, `-` and `.` as `_`."""
    return name.upper().replace("-", "_").replace(".", "_")


def parse_size(text: str, where: str, errors: list[str]) -> Any:
    units = {"kib": 1024, "mib": MIB, "gib": 1024 * MIB, "kb": 1000, "mb": 10**6, "gb": 10**9, "b": 1}
    low = text.strip().lower().replace(" ", "")
    for unit, factor in units.items():
        if low.endswith(unit):
            try:
                return int(float(low[: -len(unit)]) * factor)
            except (ValueError, OverflowError):  # "nanMiB", "infMiB", "1e400MiB"
                break
    return text  # left for the caller's type error


def section(cls: type[T], table: Any, where: str, errors: list[str], env: dict[str, str], env_prefix: str) -> T:
    """A table of dataclass `cls`: every key checked and coerced, then `env_prefix`+KEY variables on top."""
    known = fields(cls)
    values: dict[str, Any] = {}
    if not isinstance(table, dict):
        errors.append(f"{where}: expected a table")
        table = {}
    for key, value in table.items():
        if key not in known:
            errors.append(f"{where}.{key}: unknown key{suggest(key, known)}")
            continue
        values[key] = coerce(f"{where}.{key}", value, field_default(known[key]), errors)
    for key in known:
        env_name = f"{env_prefix}{env_word(key)}"
        if env_name in env:
            values[key] = coerce(env_name, env[env_name], field_default(known[key]), errors, True)
    return cls(**values)


def field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"{f.name} has no default")  # every config field has one; a new one without is a bug
