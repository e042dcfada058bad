"""The one serializer of the records: frozen dataclasses to JSON and back, and their JSON Schema.

Why one: every document that crosses a process or a machine (the release manifest, the release state,
the `--json` documents) is read by another version of the tool one day. A converter that knows the
field types refuses what it does not know (an unknown field, a missing one, a wrong type) with one
line naming the field, instead of a KeyError three modules later. It covers what the records use:
str, int, float, bool, None, `X | None`, `list[X]`, `tuple[X, ...]`, `dict[str, X]`, `Any` and
nested dataclasses; `Any` and `dict[str, Any]` hold the open parts (a toolchain's versions).

In a record that declares `OMIT_NONE: ClassVar[bool] = True`, a field whose default is None is left out
of the JSON while it is None (the files omitted those keys before they were records); `metadata={"doc": ...}` is its description in the schema, and
`metadata={"required": True}` makes a field with a default required on reading (schema_version).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


class RecordError(ValueError):
    """A document that does not fit its record; `str()` is one line naming the field."""


def doc(text: str, **more: Any) -> dict[str, Any]:
    """A field's metadata: its description in the published schema (`required=True`: see above)."""
    return {"doc": text, **more}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _omitted(record: Any, field: dataclasses.Field[Any], value: Any) -> bool:
    return value is None and field.default is None and getattr(type(record), "OMIT_NONE", False)


def to_json(record: Any) -> Any:
    """A record (or a value inside one) as JSON-ready data: dicts, lists, str, int, float, bool, None."""
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return {
            f.name: to_json(getattr(record, f.name))
            for f in dataclasses.fields(record)
            if not _omitted(record, f, getattr(record, f.name))
        }
    if isinstance(record, (list, tuple)):
        return [to_json(v) for v in record]
    if isinstance(record, dict):
        return {str(k): to_json(v) for k, v in record.items()}
    return record


def from_json(cls: type[T], data: Any, where: str = "") -> T:
    """`data` (parsed JSON) as a `cls` record; RecordError naming the first field that does not fit
    (`where`: the document, e.g. its path, that starts the line)."""
    try:
        return typing.cast(T, _convert(cls, data, ""))
    except RecordError as exc:
        raise RecordError(f"{where or cls.__name__}: {exc}") from None


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _field(where: str) -> str:
    return f"field '{where}'" if where else "the document"


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _convert(tp: Any, value: Any, where: str) -> Any:
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(tp, value, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _record(tp, value, where)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise RecordError(f"{_field(where)} is {_kind(value)}, not a list")
        item = typing.get_args(tp)[0] if typing.get_args(tp) else Any
        items = [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if origin is list else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            raise RecordError(f"{_field(where)} is {_kind(value)}, not an object")
        item = typing.get_args(tp)[1] if typing.get_args(tp) else Any
        return {str(k): _convert(item, v, _at(where, str(k))) for k, v in value.items()}
    return _scalar(tp, value, where)


def _union(tp: Any, value: Any, where: str) -> Any:
    options = typing.get_args(tp)
    if value is None and type(None) in options:
        return None
    errors = []
    for option in (o for o in options if o is not type(None)):
        try:
            return _convert(option, value, where)
        except RecordError as exc:
            errors.append(exc)
    raise errors[0] if len(errors) == 1 else RecordError(f"{_field(where)} is {_kind(value)}, which it may not be")


def _scalar(tp: Any, value: Any, where: str) -> Any:
    # bool is an int to Python, never to a document; an int is a fine float
    ok = {
        str: isinstance(value, str),
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: isinstance(value, (int, float)) and not isinstance(value, bool),
    }.get(tp)
    if ok is None:
        raise TypeError(f"records cannot hold {tp!r} ({where})")  # a bug in a record's declaration
    if not ok:
        raise RecordError(f"{_field(where)} is {_kind(value)}, not {tp.__name__}")
    return float(value) if tp is float else value


def _record(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise RecordError(f"{_field(where)} is {_kind(value)}, not an object")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise RecordError(f"unknown field '{_at(where, unknown[0])}'")
    hints = _hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name not in value:
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            if not has_default or f.metadata.get("required"):
                raise RecordError(f"missing field '{_at(where, name)}'")
            continue
        kwargs[name] = _convert(hints[name], value[name], _at(where, name))
    return cls(**kwargs)


def json_schema(cls: type, title: str, computed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record's documents, from the same declarations; `computed`:
    name -> type of the properties its to_json adds (`ok`), required too."""
    defs: dict[str, Any] = {}
    root = _record_body(cls, defs)
    for name, tp in (computed or {}).items():
        root["properties"][name] = _schema_of(tp, defs)
        root["required"].append(name)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        **root,
        **({"$defs": dict(sorted(defs.items()))} if defs else {}),
    }


def _schema_of(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any:
        return {}
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(o, defs) for o in typing.get_args(tp)]}
    if tp is type(None):
        return {"type": "null"}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # a record that holds itself stops here
            defs[tp.__name__] = _record_body(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return {"type": "array", **({"items": _schema_of(args[0], defs)} if args and args[0] is not Any else {})}
    if origin is dict:
        args = typing.get_args(tp)
        value = _schema_of(args[1], defs) if args else {}
        return {"type": "object", **({"additionalProperties": value} if value else {})}
    return {"type": {str: "string", bool: "boolean", int: "integer", float: "number"}[tp]}


def _record_body(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    props, required = {}, []
    for f in dataclasses.fields(cls):
        schema = _schema_of(hints[f.name], defs)
        if f.metadata.get("doc"):
            schema = {"description": f.metadata["doc"], **schema}
        props[f.name] = schema
        if f.metadata.get("required") or (
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ):
            required.append(f.name)
    body = {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):  # not dataclass's generated one
        body = {"description": " ".join(cls.__doc__.split()), **body}
    return body
