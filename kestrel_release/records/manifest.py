"""The release manifest as a record: what a build (or assemble) made, and what verify passed.

It is the contract between build machines, `assemble`, `verify`, `publish`, `release --from` and CI,
so it says which schema it follows and which kestrel-release wrote it (records/versions.py). The
file itself (where it lives in a shared folder, SHA256SUMS beside it) is manifest.py's.

Schema history: 1 (`"schema": 1`, no tool_version: the tool's version was in toolchain) -> 2
(`schema_version`, `tool_version`; every field typed). Schema 1 files are read by migrating them.
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
class GitState:
    """The commit a build was made from."""

    commit: str | None = field(metadata=doc("The commit (None outside a git checkout)."))
    dirty: bool = field(default=False, metadata=doc("The tree had uncommitted changes."))


@dataclass(frozen=True)
class Builder:
    """The machine (and the CI job, on GitHub Actions) that built an output."""

    host: str = field(metadata=doc("Its host name."))
    platform: str = field(metadata=doc("sysconfig's platform name."))
    machine: str = field(metadata=doc("Its CPU, as platform.machine() names it."))
    label: str | None = field(metadata=doc("KESTREL_RELEASE_BUILDER, the label a CI matrix leg sets."))
    ci: dict[str, str] | None = field(metadata=doc("job, run_id, run_attempt, workflow, repository, runner."))


@dataclass(frozen=True)
class Verified:
    """What verify passed for one target."""

    wheels: dict[str, str] = field(metadata=doc("sha256 by wheel filename."))


@dataclass(frozen=True)
class Wheel:
    """One wheel of the output, as build (or assemble) recorded it."""

    OMIT_NONE: ClassVar[bool] = True  # keys absent while None, as before schema 2

    filename: str = field(metadata=doc("The wheel's file name, in the manifest's folder."))
    size: int = field(metadata=doc("Its size in bytes."))
    sha256: str = field(metadata=doc("The sha256 of its bytes (publish refuses other bytes)."))
    python: str | None = field(default=None, metadata=doc("The Python it was built for (3.12)."))
    python_tag: str | None = field(default=None, metadata=doc("Its interpreter tags, joined by '.'."))
    platform_tag: str | None = field(default=None, metadata=doc("Its platform tags, joined by '.'."))
    platform: str | None = field(default=None, metadata=doc("The configured platform it was built for."))
    glibc_floor: str | None = field(default=None, metadata=doc("The glibc its tag requires (2.28)."))
    installs_on: list[str] | None = field(default=None, metadata=doc("Distributions that can install it."))
    variant: dict[str, Any] | None = field(default=None, metadata=doc("The torch x CUDA variant it is."))
    torch: dict[str, Any] | None = field(default=None, metadata=doc("The torch it was built against."))
    commit: str | None = field(default=None, metadata=doc("assemble: the commit of its input."))
    built_by: dict[str, Any] | None = field(default=None, metadata=doc("assemble: the machine or CI job."))
    also_built_by: list[dict[str, Any]] | None = field(
        default=None, metadata=doc("assemble: other inputs holding the same bytes.")
    )
    toolchain: dict[str, Any] | None = field(default=None, metadata=doc("assemble: the tools that built it."))


@dataclass(frozen=True)
class Manifest:
    """release-manifest.json: a build output's wheels and how they were made."""

    OMIT_NONE: ClassVar[bool] = True  # keys absent while None, as before schema 2

    package: str = field(metadata=doc("The project's name."))
    version: str = field(metadata=doc("The version of its wheels (without a variant's local part)."))
    wheels: tuple[Wheel, ...] = field(metadata=doc("Every wheel of the output."))
    schema_version: int = field(
        default=SCHEMA_VERSION, metadata=doc("The manifest schema this file follows.", required=True)
    )
    tool_version: str | None = field(
        default=__version__, metadata=doc("The kestrel-release that wrote it (None: unknown, schema 1).")
    )
    git: GitState | None = field(default=None, metadata=doc("The commit it was built from."))
    source_date_epoch: int | None = field(default=None, metadata=doc("The timestamp every wheel carries."))
    toolchain: dict[str, Any] | None = field(default=None, metadata=doc("Versions of the tools that built it."))
    builder: Builder | None = field(default=None, metadata=doc("The machine (and CI job) that built it."))
    kernels: list[Any] | None = field(default=None, metadata=doc("The precompiled kernels."))
    platforms: dict[str, Any] | None = field(default=None, metadata=doc("Platforms built here and left for others."))
    built_with: dict[str, Any] | None = field(default=None, metadata=doc("The settings that shaped the wheels."))
    variant: dict[str, Any] | None = field(default=None, metadata=doc("The variant of a variant build's output."))
    assembled: dict[str, Any] | None = field(default=None, metadata=doc("assemble: the inputs it merged."))
    verified: dict[str, Verified] | None = field(default=None, metadata=doc("What verify passed, by target."))

    @property
    def commit(self) -> str | None:
        return self.git.commit if self.git else None

    def filenames(self) -> list[str]:
        return [w.filename for w in self.wheels]

    def wheel(self, filename: str) -> Wheel | None:
        return next((w for w in self.wheels if w.filename == filename), None)

    def verified_hashes(self, target: str | None = None) -> dict[str, str]:
        """sha256 by filename verify passed for `target`, or for any target."""
        verified = self.verified or {}
        if target and target in verified:
            return dict(verified[target].wheels)
        merged: dict[str, str] = {}
        for record in verified.values():
            merged.update(record.wheels)
        return merged

    def with_verified(self, target: str, hashes: dict[str, str]) -> Manifest:
        verified = {**(self.verified or {}), target: Verified(dict(sorted(hashes.items())))}
        return dataclasses.replace(self, verified=verified)


def to_json(record: Manifest) -> dict[str, Any]:
    """The file's contents, stamped with this tool's schema and version (whoever wrote what was read)."""
    return serde.to_json(dataclasses.replace(record, schema_version=SCHEMA_VERSION, tool_version=__version__))


def from_json(data: Any, where: str) -> Manifest:
    """A manifest file's parsed JSON; UsageError (exit 2) when it does not fit, IncompatibleRecordError
    when a kestrel-release with another schema wrote it."""
    from kestrel_release.errors import UsageError

    redo = "rebuild with this version of kestrel-release build"
    if not isinstance(data, dict):
        raise UsageError(f"{where} has an unknown schema", redo)
    legacy = "schema_version" not in data
    version = data.get("schema") if legacy else data["schema_version"]
    writer = data.get("tool_version") if not legacy else (data.get("toolchain") or {}).get("kestrel-release")
    versions.check(
        version, writer, kind="manifest", current=SCHEMA_VERSION, oldest=OLDEST_SCHEMA, where=where, redo=redo
    )
    if legacy:
        data = _from_schema_1(data, writer)
    try:
        return serde.from_json(Manifest, data, where)
    except serde.RecordError as exc:
        raise UsageError(str(exc), redo) from None


def _from_schema_1(data: dict[str, Any], writer: Any) -> dict[str, Any]:
    """Schema 1 had no field list: keep what schema 2 declares (older tools wrote a few keys since dropped)."""
    top = {f.name for f in dataclasses.fields(Manifest)}
    row = {f.name for f in dataclasses.fields(Wheel)}
    out = {k: v for k, v in data.items() if k in top}
    if isinstance(out.get("wheels"), list):
        out["wheels"] = [{k: v for k, v in w.items() if k in row} if isinstance(w, dict) else w for w in out["wheels"]]
    return {**out, "schema_version": 1, "tool_version": writer if isinstance(writer, str) else None}


def json_schema() -> dict[str, Any]:
    return serde.json_schema(Manifest, "kestrel-release release manifest")
