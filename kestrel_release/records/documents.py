"""The `--json` documents: one schema version for all of them, stamped where the one document is printed.

Why a version: CI jobs and scripts read these documents (`release --json`'s steps, verify's findings);
a field renamed or dropped is a break they should be able to detect, and `schema_version` is the
number they check. Raise it when a field of any document is removed or changes meaning (adding one
is not a break); docs/reference/schemas/ publishes the shapes (reference.py).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any

from kestrel_release.records import serde
from kestrel_release.records.serde import doc

SCHEMA_VERSION = 1


def stamp(payload: Any) -> Any:
    """`payload` with `schema_version` first (every document is an object; anything else passes as is)."""
    if not isinstance(payload, dict):
        return payload
    return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in payload.items() if k != "schema_version"}}


# `verify --json` (also inside publish's and release's results): the records it is written from.
@dataclass(frozen=True)
class FindingDocument:
    """One finding: a rule, its severity, where, and what to do."""

    rule: str = field(metadata=doc("The rule's id (docs/reference/verify-rules.md)."))
    severity: str = field(metadata=doc("error, warning or info."))
    member: str = field(metadata=doc("The wheel member (or file) it is about."))
    message: str = field(metadata=doc("What is wrong and what to do."))


@dataclass(frozen=True)
class WheelDocument:
    """What verify read of one wheel."""

    path: str = field(metadata=doc("The wheel's path."))
    filename: str = field(metadata=doc("Its file name."))
    sha256: str = field(metadata=doc("The sha256 of the bytes verify read."))
    size: int = field(metadata=doc("Its size in bytes."))
    name: str | None = field(metadata=doc("The project name in its METADATA."))
    version: str | None = field(metadata=doc("The version in its METADATA."))
    tags: list[str] = field(metadata=doc("Its wheel tags."))
    cuda: list[dict[str, Any]] = field(metadata=doc("Each CUDA binary: SASS architectures, PTX, toolkit."))
    native: dict[str, Any] = field(metadata=doc("DT_NEEDED per binary, glibc floor, abi3."))
    cuda_sizes: list[dict[str, Any]] = field(metadata=doc("Bytes per toolkit and architecture."))
    coverage: dict[str, Any] = field(metadata=doc("The GPUs and drivers the binaries serve."))
    findings: list[FindingDocument] = field(metadata=doc("The findings inside this wheel."))


@dataclass(frozen=True)
class VerifyDocument:
    """`verify --json`: the report of one verify run."""

    ok: bool = field(metadata=doc("No finding of severity error."))
    mode: str = field(metadata=doc("project, or standalone (wheels outside a kernel project)."))
    target: str = field(metadata=doc("The target whose rules applied."))
    wheels: list[WheelDocument] = field(metadata=doc("Each wheel verify read."))
    findings: list[FindingDocument] = field(metadata=doc("Findings about the set of wheels."))


def to_json(document: Any) -> dict[str, Any]:
    """A document record as the JSON `--json` prints (console.flush_json stamps the schema version)."""
    return typing.cast(dict[str, Any], serde.to_json(document))


def json_schema(cls: type, title: str, computed: dict[str, Any] | None = None) -> dict[str, Any]:
    """A document's published schema: its record's, with `schema_version` as flush_json stamps it."""
    schema = serde.json_schema(cls, title, computed)
    version = {"description": "The --json schema version.", "const": SCHEMA_VERSION}
    schema["properties"] = {"schema_version": version, **schema["properties"]}
    schema["required"] = ["schema_version", *schema["required"]]
    return schema
