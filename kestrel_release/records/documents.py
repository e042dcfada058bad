"""The `--json` documents: one schema version for all of them, stamped where the one document is printed.

Why a version: CI jobs and scripts read these documents (`release --json`'s steps, verify's findings);
a field renamed or dropped is a break they should be able to detect, and `schema_version` is the
number they check. Raise it when a field of any document is removed or changes meaning (adding one
is not a break); docs/reference/schemas/ publishes the shapes (reference.py).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kestrel_release.records import serde
from kestrel_release.records.build_documents import HubDocument
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


# `version --json`.
@dataclass(frozen=True)
class VersionDocument:
    """`version --json`: the version printed, bumped or set."""

    action: str = field(metadata=doc("show, bump or set."))
    name: str = field(metadata=doc("The project's name."))
    old: str = field(metadata=doc("The version before."))
    new: str = field(metadata=doc("The version after (the same for show)."))
    files: list[str] = field(metadata=doc("The files rewritten (relative to the project)."))
    dry_run: bool = field(metadata=doc("Nothing was written (--dry-run)."))
    diff: str = field(metadata=doc("The change as a unified diff (empty for show)."))
    commit: str | None = field(metadata=doc("The commit made (--commit), else null."))
    tag: str | None = field(metadata=doc("The tag made (--tag), else null."))
    warnings: list[str] = field(metadata=doc("What the user should know (one line each)."))


# `doctor --json`.
@dataclass(frozen=True)
class CheckDocument:
    """One row of doctor's report."""

    name: str = field(metadata=doc("What was checked."))
    status: str = field(metadata=doc("ok, warn or fail."))
    detail: str = field(metadata=doc("What was found."))
    fix: str = field(metadata=doc("What to do (empty when ok)."))


@dataclass(frozen=True)
class DoctorDocument:
    """`doctor --json`: is this machine fit to build and publish."""

    ok: bool = field(metadata=doc("No check failed."))
    checks: list[CheckDocument] = field(metadata=doc("Each check, in the order printed."))


# `init --json`.
@dataclass(frozen=True)
class VersionFileDocument:
    """A place that holds the version."""

    path: str = field(metadata=doc("The file (relative to the project)."))
    pattern: str = field(metadata=doc("The pattern that finds the version in it."))


@dataclass(frozen=True)
class DetectedDocument:
    """What init found in the project."""

    backend: str = field(metadata=doc("The build backend (setuptools, scikit-build-core, ..., generic)."))
    backend_spec: str = field(metadata=doc("[build-system].build-backend as written."))
    name: str | None = field(metadata=doc("The project's name, if found."))
    name_source: str = field(metadata=doc("Where the name was found."))
    version: str | None = field(metadata=doc("The project's version, if found."))
    version_source: str = field(metadata=doc("Where the version was found."))
    version_files: list[VersionFileDocument] = field(metadata=doc("Every place that holds the version."))
    vcs: str | None = field(metadata=doc("The version control in use (git), if any."))
    packages: dict[str, str] = field(metadata=doc("Import name -> its directory (relative)."))
    native: list[str] = field(metadata=doc("Why init thinks there is native code (one line each)."))
    cuda: list[str] = field(metadata=doc("Why init thinks there is CUDA code (one line each)."))
    cuda_compiles: list[str] = field(metadata=doc("The archs the package's own build files compile for."))
    torch: bool = field(metadata=doc("The build uses torch."))
    abi3: str | None = field(metadata=doc("cp39, ..., abi3 or py3; null: one wheel per CPython."))
    requires_python: str | None = field(metadata=doc("[project].requires-python."))
    shipped_tests: list[str] = field(metadata=doc("Test directories inside a package."))
    configured: bool = field(metadata=doc("The project already has a [tool.kestrel-release] table."))


@dataclass(frozen=True)
class InitDocument:
    """`init --json`: what init found and wrote."""

    ok: bool = field(metadata=doc("init finished (a failure is the error document)."))
    project: str = field(metadata=doc("The project directory."))
    changed: bool = field(metadata=doc("A file was written."))
    written: list[str] = field(metadata=doc("The files written."))
    detected: DetectedDocument = field(metadata=doc("What init found."))
    table: dict[str, Any] | None = field(metadata=doc("The table proposed (null: the project has one)."))
    notes: list[str] = field(metadata=doc("What the user should know about the table."))
    gitignore_added: list[str] = field(metadata=doc("The lines added to .gitignore."))
    next: str = field(metadata=doc("The command to run next."))


# `release --json`.
@dataclass(frozen=True)
class ReleaseStepDocument:
    """One step of a release run."""

    name: str = field(metadata=doc("The step."))
    status: str = field(metadata=doc("done, resumed or failed."))
    seconds: float = field(metadata=doc("How long it took."))
    detail: str = field(metadata=doc("What it did, or why it failed."))


@dataclass(frozen=True)
class ReleaseDocument:
    """`release --json`: each step's outcome."""

    version: str | None = field(metadata=doc("The version released (null: not known when it stopped)."))
    rehearse: bool = field(metadata=doc("A rehearsal (--rehearse): nothing public was touched."))
    targets: list[str] = field(metadata=doc("The targets released to."))
    ok: bool = field(metadata=doc("No step failed."))
    steps: list[ReleaseStepDocument] = field(metadata=doc("Each step, in order."))
    pythons: list[str] = field(metadata=doc("The Pythons built, verified and installed."))
    skipped_pythons: list[str] = field(metadata=doc("Configured Pythons missing here (rehearsal only)."))
    not_checked: list[str] = field(metadata=doc("What only the real world can check (rehearsal)."))
    restored: str = field(metadata=doc("A rehearsal's bump undone in the project (empty: none)."))


# `assemble --json`.
@dataclass(frozen=True)
class AssembleDocument:
    """`assemble --json`: the release assembled from several machines' outputs."""

    OMIT_NONE: ClassVar[bool] = True  # hub only with --layout kernels-hub

    ok: bool = field(metadata=doc("assemble finished (a failure is the error document)."))
    out_dir: str = field(metadata=doc("The output folder written."))
    package: str = field(metadata=doc("The project's name."))
    version: str = field(metadata=doc("The version of its wheels."))
    commit: str | None = field(metadata=doc("The commit every input was built from."))
    inputs: list[str] = field(metadata=doc("The input folders."))
    wheels: list[dict[str, Any]] = field(metadata=doc("Each wheel: its manifest row and the input it came from."))
    hub: HubDocument | None = field(default=None, metadata=doc("--layout kernels-hub's folders."))


# `publish --json` to a static index (the index and GitHub publishers' results are records themselves).
@dataclass(frozen=True)
class PageDocument:
    """One project page of the static index (one per flavour: the root, cu126, ...)."""

    flavour: str = field(metadata=doc("The index's sub-folder (empty: the root)."))
    project: str = field(metadata=doc("The project's normalized name."))
    added: list[str] = field(metadata=doc("The wheels this publish added."))
    kept: list[str] = field(metadata=doc("The wheels already there, kept as they were."))
    written: list[str] = field(metadata=doc("The files this run created or changed, relative to the root."))


@dataclass(frozen=True)
class StaticIndexDocument:
    """`publish --json` to a static index (a PEP 503 index in a folder)."""

    target: str = field(metadata=doc("The target's name."))
    kind: str = field(metadata=doc("static-index."))
    root: str = field(metadata=doc("The index's folder."))
    dry_run: bool = field(metadata=doc("Nothing was written (--dry-run)."))
    uploaded: list[str] = field(metadata=doc("The wheels added."))
    skipped: list[str] = field(metadata=doc("The wheels already there."))
    pages: list[PageDocument] = field(metadata=doc("Each project page written or kept."))
    index_urls: dict[str, str] = field(metadata=doc("flavour -> the --index-url a user passes."))
    left_out: list[dict[str, str]] = field(metadata=doc("Wheels not published here, and why."))
    release: dict[str, Any] | None = field(metadata=doc("The wheels as a GitHub release's assets (repo, tag, url)."))


@dataclass(frozen=True)
class ErrorDocument:
    """Why the command failed (the one error line, as data)."""

    message: str = field(metadata=doc("What is wrong."))
    hint: str | None = field(metadata=doc("What to do."))
    exit_code: int = field(metadata=doc("The exit code (docs/reference/exit-codes.md)."))
    kind: str = field(metadata=doc("The error's class."))


def to_json(document: Any) -> dict[str, Any]:
    """A document record as the JSON `--json` prints (console.flush_json stamps the schema version)."""
    return typing.cast(dict[str, Any], serde.to_json(document))


def json_schema(cls: type, title: str, computed: dict[str, Any] | None = None) -> dict[str, Any]:
    """A document's published schema: its record's, with `schema_version` as flush_json stamps it."""
    schema = serde.json_schema(cls, title, {**(computed or {}), "error": ErrorDocument})
    version = {"description": "The --json schema version.", "const": SCHEMA_VERSION}
    # A command that reports and then fails (verify, doctor: exit 5 / 3) adds `error` and sets ok false.
    error = {
        "description": "Why the command failed, when it reported and then failed.",
        "$ref": "#/$defs/ErrorDocument",
    }
    ok = {} if "ok" in schema["properties"] else {"ok": {"description": "false: the command failed.", "const": False}}
    schema["properties"] = {"schema_version": version, **schema["properties"], **ok, "error": error}
    schema["required"] = ["schema_version", *(r for r in schema["required"] if r != "error")]
    return schema


def failure_schema() -> dict[str, Any]:
    """The document of a command that failed before it reported: `{"schema_version", "ok": false, "error"}`."""
    schema = serde.json_schema(ErrorDocument, "kestrel-release --json (a failure)")
    body = {k: schema.pop(k) for k in ("description", "type", "properties", "required", "additionalProperties")}
    return {
        **schema,
        "type": "object",
        "properties": {
            "schema_version": {"description": "The --json schema version.", "const": SCHEMA_VERSION},
            "ok": {"description": "Always false.", "const": False},
            "error": {"description": "Why the command failed.", **body},
        },
        "required": ["schema_version", "ok", "error"],
        "additionalProperties": False,
    }
