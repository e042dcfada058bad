"""`build --json`'s documents (one build, or the torch x CUDA variant matrix) and the parts `assemble --json`
shares (the kernels-hub layout). Written by the one serializer; the wheel rows stay open objects (their keys
are the release manifest's wheel rows, schemas/release-manifest.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kestrel_release.records.serde import doc


@dataclass(frozen=True)
class LeftDocument:
    """One (platform, Python) pair this machine left for another."""

    platform: str = field(metadata=doc("The platform, as the configuration names it."))
    python: str = field(metadata=doc("The Python (e.g. 3.12)."))
    why: str = field(metadata=doc("Why this machine cannot build it."))


@dataclass(frozen=True)
class PlatformsDocument:
    """The configured platforms: the one built here, and the pairs left for other machines."""

    configured: list[str] = field(metadata=doc("The configured platforms (empty: this machine's only)."))
    built: str | None = field(metadata=doc("The platform built here (null: this machine's)."))
    left_for_others: list[LeftDocument] = field(metadata=doc("The pairs left for other machines."))


@dataclass(frozen=True)
class PrecompileDocument:
    """The precompile step."""

    pairs: list[dict[str, Any]] = field(metadata=doc("One row per (toolkit, arch) compiled."))
    ran_in: str | None = field(metadata=doc("host, or the container image (null: no step)."))
    status: str = field(metadata=doc("none, compiled, restored or up-to-date."))
    key: str | None = field(metadata=doc("The precompile cache key."))
    seconds: float = field(metadata=doc("How long it took."))
    log: str | None = field(metadata=doc("Its log file."))
    kernels: list[dict[str, Any]] = field(metadata=doc("The kernels it made."))


@dataclass(frozen=True)
class StepDocument:
    """One step of the build's progress."""

    name: str = field(metadata=doc("The step."))
    state: str = field(metadata=doc("waiting, running, ok, failed, skipped or stopped."))
    detail: str = field(metadata=doc("What it did."))
    seconds: float | None = field(metadata=doc("How long it took (null: it did not run)."))


@dataclass(frozen=True)
class HubVariantDocument:
    """One build/<variant>/ folder of the kernels-hub layout."""

    variant: str = field(metadata=doc("The variant's name."))
    path: str = field(metadata=doc("build/<variant>, relative to the output."))
    kernel: str = field(metadata=doc("metadata.json's name."))
    package: str = field(metadata=doc("The import package directory."))
    wheels: list[str] = field(metadata=doc("The wheels it was made from."))
    archs: list[str] = field(metadata=doc("The CUDA archs of its binaries."))
    files: int = field(metadata=doc("How many files it holds."))
    derived: bool = field(metadata=doc("Named from the build's torch (a project without variants)."))
    warnings: list[str] = field(metadata=doc("What the user should know."))


@dataclass(frozen=True)
class HubDocument:
    """--layout kernels-hub: the build/<variant>/ folders for the kernels library."""

    layout: str = field(metadata=doc("kernels-hub."))
    dir: str = field(metadata=doc("The build/ folder."))
    variants: list[HubVariantDocument] = field(metadata=doc("Each variant's folder."))


@dataclass(frozen=True)
class Pep825Document:
    """variants.format = "pep825": the PEP 825 (Draft) labelled wheels."""

    format: str = field(metadata=doc("The draft followed."))
    dir: str = field(metadata=doc("The <out>/pep825 folder."))
    wheels: list[str] = field(metadata=doc("The labelled wheels."))
    variants_json: str = field(metadata=doc("The index file that describes the labels."))
    labels: list[str] = field(metadata=doc("The variant labels."))


@dataclass(frozen=True)
class WheelSizeDocument:
    """One wheel of the size plan."""

    filename: str = field(metadata=doc("The wheel's file name."))
    size: int = field(metadata=doc("Bytes."))


@dataclass(frozen=True)
class LimitDocument:
    """One size limit the release meets."""

    name: str = field(metadata=doc("What a user calls it, with the setting that sets it."))
    limit: int = field(metadata=doc("Bytes."))
    scope: str = field(metadata=doc("file (each wheel) or release (all together)."))


@dataclass(frozen=True)
class LeverDocument:
    """One way to make the wheels smaller, and what it saves."""

    name: str = field(metadata=doc("What to do."))
    kind: str = field(metadata=doc("drop-arch, merge-identical or compress-size."))
    release_saving: int = field(metadata=doc("Bytes off the release."))
    file_saving: int = field(metadata=doc("Bytes off its largest wheel."))
    basis: str = field(metadata=doc("measured or estimated."))
    detail: str = field(metadata=doc("How the saving was found."))
    fits: bool = field(metadata=doc("Alone, it brings the release within every limit."))


@dataclass(frozen=True)
class SizePlanDocument:
    """The wheels against every size limit, and each lever's effect."""

    fits: bool = field(metadata=doc("Within every limit."))
    total: int = field(metadata=doc("Bytes of all wheels."))
    largest: int = field(metadata=doc("Bytes of the largest wheel."))
    wheels: list[WheelSizeDocument] = field(metadata=doc("The wheels, largest first."))
    limits: list[LimitDocument] = field(metadata=doc("The limits."))
    over: list[str] = field(metadata=doc("Each limit broken, one line each."))
    levers: list[LeverDocument] = field(metadata=doc("What would make them smaller."))


@dataclass(frozen=True)
class BuildDocument:
    """`build --json`: one build's wheels and how they were made."""

    OMIT_NONE: ClassVar[bool] = True  # hub, pep825 and size_plan only when made

    platforms: PlatformsDocument = field(metadata=doc("What was built here, and left for others."))
    left_for_others: list[LeftDocument] = field(metadata=doc("The pairs left for other machines."))
    out_dir: str = field(metadata=doc("The output folder."))
    wheels: list[dict[str, Any]] = field(metadata=doc("The wheels, as the release manifest lists them."))
    precompile: PrecompileDocument = field(metadata=doc("The precompile step."))
    steps: list[StepDocument] = field(metadata=doc("Each step of the build."))
    seconds: float = field(metadata=doc("How long the build took."))
    logs: str | None = field(metadata=doc("The folder of the build's logs."))
    warnings: list[str] = field(metadata=doc("What the user should know."))
    reproducible: bool | None = field(metadata=doc("--check-reproducible's answer (null: not checked)."))
    hub: HubDocument | None = field(default=None, metadata=doc("--layout kernels-hub's folders."))
    pep825: Pep825Document | None = field(default=None, metadata=doc("The PEP 825 labelled wheels."))
    size_plan: SizePlanDocument | None = field(default=None, metadata=doc("The wheels against the size limits."))


@dataclass(frozen=True)
class OutcomeDocument:
    """One variant of the matrix: built here, or left for a machine that can."""

    variant: dict[str, Any] = field(metadata=doc("The variant (torch, cuda, name, ..., default)."))
    status: str = field(metadata=doc("built or left."))
    out_dir: str = field(metadata=doc("Its output folder, <out>/variants/<name>."))
    wheels: list[dict[str, Any]] = field(metadata=doc("Its wheels, as the release manifest lists them."))
    torch: dict[str, Any] | None = field(metadata=doc("The torch it was built against."))
    why: str | None = field(metadata=doc("Left: why."))
    command: str | None = field(metadata=doc("Left: the command to run where it can be built."))
    torch_from: str | None = field(metadata=doc("Where its torch came from: PyPI, an index, an interpreter."))
    seconds: float = field(metadata=doc("How long its build took."))


@dataclass(frozen=True)
class VariantsDocument:
    """`build --json` on a project with variants: one build per torch x CUDA variant."""

    OMIT_NONE: ClassVar[bool] = True  # hub and pep825 only when made

    out_dir: str = field(metadata=doc("The output folder."))
    variants: list[OutcomeDocument] = field(metadata=doc("Each variant."))
    built: list[str] = field(metadata=doc("The variants built here."))
    left_for_others: list[str] = field(metadata=doc("The variants left for other machines."))
    default_wheels: list[dict[str, Any]] = field(metadata=doc("The default variant's wheels (what PyPI gets)."))
    wheels: list[dict[str, Any]] = field(metadata=doc("Every variant's wheels."))
    seconds: float = field(metadata=doc("How long the builds took."))
    hub: HubDocument | None = field(default=None, metadata=doc("--layout kernels-hub's folders."))
    pep825: Pep825Document | None = field(default=None, metadata=doc("The PEP 825 labelled wheels."))
