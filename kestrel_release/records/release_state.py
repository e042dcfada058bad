"""The release state file (`.release-state.json`) as a record: the document `release --resume` reads.

flows/release/state.py keeps the working object a run updates after every step; what it writes and
reads back is this record, through the one serializer, so a state written by a kestrel-release of
another schema is refused in one line instead of being resumed on a guess.

Schema history: 1 (no schema_version; saved_at, version and bump always present) -> 2
(`schema_version`, `tool_version`; None fields left out).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kestrel_release import __version__
from kestrel_release.records import serde, versions
from kestrel_release.records.serde import doc

SCHEMA_VERSION = 2
OLDEST_SCHEMA = 1


@dataclass(frozen=True)
class StateFile:
    """What a release run has done so far."""

    OMIT_NONE: ClassVar[bool] = True  # keys absent while None, as before schema 2

    params: dict[str, Any] = field(metadata=doc("The options of the run (resume refuses other ones)."))
    done: list[str] = field(metadata=doc("The steps that finished, in order."))
    artifacts: dict[str, str] = field(metadata=doc("sha256 by wheel filename of what the steps used."))
    schema_version: int = field(
        default=SCHEMA_VERSION, metadata=doc("The state schema this file follows.", required=True)
    )
    tool_version: str | None = field(default=__version__, metadata=doc("The kestrel-release that wrote it."))
    version: str | None = field(default=None, metadata=doc("The version being released."))
    timings: dict[str, float] = field(default_factory=dict, metadata=doc("Seconds each finished step took."))
    bump: dict[str, str] | None = field(
        default=None, metadata=doc("{from, to} of a bump, saved before any file changes.")
    )
    saved_at: int | None = field(default=None, metadata=doc("When it was saved (Unix time)."))


def to_json(record: StateFile) -> dict[str, Any]:
    return serde.to_json(dataclasses.replace(record, schema_version=SCHEMA_VERSION, tool_version=__version__))


def from_json(data: Any, where: str) -> StateFile:
    """A state file's parsed JSON; UsageError when damaged, IncompatibleRecordError from another schema."""
    from kestrel_release.errors import UsageError

    redo = "check the version, then run release --force to start over"
    if not isinstance(data, dict):
        raise UsageError(f"{where} is damaged", redo)
    legacy = "schema_version" not in data
    version = 1 if legacy else data["schema_version"]
    versions.check(
        version,
        data.get("tool_version"),
        kind="state",
        current=SCHEMA_VERSION,
        oldest=OLDEST_SCHEMA,
        where=where,
        redo=redo,
    )
    if legacy:  # schema 1 wrote no tool; its fields are schema 2's
        data = {**data, "schema_version": 1, "tool_version": None}
    try:
        return serde.from_json(StateFile, data, where)
    except serde.RecordError as exc:
        raise UsageError(f"{where} is damaged ({str(exc).removeprefix(where + ': ')})", redo) from None


def json_schema() -> dict[str, Any]:
    return serde.json_schema(StateFile, "kestrel-release release state")
