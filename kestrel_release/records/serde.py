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
from collections.abc import Callable
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
        return typing.cast(T, _converter(typing.cast(Any, cls))(data))
    except _Misfit as exc:
        raise RecordError(f"{where or cls.__name__}: {exc.line()}") from None


# Reading converts each value through a function made once per type (a manifest of thousands of wheels
# is read by every command on an output); the field path is put together only when a value does not fit.
Convert = Callable[[Any], Any]


class _Misfit(Exception):
    def __init__(self, text: str) -> None:  # `text` names the field as {field}
        self.text = text
        self.path: list[str] = []

    def within(self, step: str) -> _Misfit:
        self.path.insert(0, step)
        return self

    def line(self) -> str:
        at = "".join(p if p.startswith("[") else f".{p}" for p in self.path).lstrip(".")
        return self.text.format(field=f"field '{at}'" if at else "the document", name=at)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _same(value: Any) -> Any:
    return value


@functools.cache
def _converter(tp: Any) -> Convert:
    if tp is Any:
        return _same
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return _union(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _record(tp)
    args = typing.get_args(tp)
    if origin in (list, tuple):
        return _sequence(_converter(args[0] if args else Any), tuple if origin is tuple else list)
    if origin is dict:
        return _mapping(_converter(args[1] if args else Any))
    return _scalar(tp)


def _sequence(item: Convert, make: type) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, list):
            raise _Misfit(f"{{field}} is {_kind(value)}, not a list")
        if item is _same:
            return make(value)
        out = []
        for i, v in enumerate(value):
            try:
                out.append(item(v))
            except _Misfit as exc:
                raise exc.within(f"[{i}]") from None
        return make(out)

    return convert


def _mapping(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Misfit(f"{{field}} is {_kind(value)}, not an object")
        if item is _same:
            return dict(value)
        out = {}
        for k, v in value.items():
            try:
                out[str(k)] = item(v)
            except _Misfit as exc:
                raise exc.within(str(k)) from None
        return out

    return convert


def _union(tp: Any) -> Convert:
    nullable = type(None) in typing.get_args(tp)
    options = [_converter(o) for o in typing.get_args(tp) if o is not type(None)]

    def convert(value: Any) -> Any:
        if value is None and nullable:
            return None
        errors = []
        for option in options:
            try:
                return option(value)
            except _Misfit as exc:
                errors.append(exc)
        raise errors[0] if len(errors) == 1 else _Misfit(f"{{field}} is {_kind(value)}, which it may not be")

    return convert


# bool is an int to Python, never to a document; an int is a fine float
_SCALARS: dict[Any, Callable[[Any], bool]] = {
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def _scalar(tp: Any) -> Convert:
    if tp not in _SCALARS:
        raise TypeError(f"records cannot hold {tp!r}")  # a bug in a record's declaration
    fits, name = _SCALARS[tp], tp.__name__

    def convert(value: Any) -> Any:
        if not fits(value):
            raise _Misfit(f"{{field}} is {_kind(value)}, not {name}")
        return float(value) if tp is float else value

    return convert


def _record(cls: type) -> Convert:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    needed = [
        name
        for name, f in fields.items()
        if f.metadata.get("required") or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    ]
    converters: dict[str, Convert] = {}  # filled on first use: a record may hold itself

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _Misfit(f"{{field}} is {_kind(value)}, not an object")
        if not converters:
            hints = _hints(cls)
            converters.update({name: _converter(hints[name]) for name in fields})
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise _Misfit("unknown field '{name}'").within(unknown[0])
        for name in needed:
            if name not in value:
                raise _Misfit("missing field '{name}'").within(name)
        kwargs = {}
        for name, v in value.items():
            try:
                kwargs[name] = converters[name](v)
            except _Misfit as exc:
                raise exc.within(name) from None
        return cls(**kwargs)

    return convert


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
