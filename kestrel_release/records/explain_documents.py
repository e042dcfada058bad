"""`explain --json`'s documents: which image of each binary a GPU and driver load (explain WHEEL|DIR|--index),
and which variant of a project a torch user installs (explain --torch). Written by the one serializer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kestrel_release.records.serde import doc


@dataclass(frozen=True)
class ImageDocument:
    """One CUDA image inside a binary."""

    member: str = field(metadata=doc("The wheel member that holds it."))
    kind: str = field(metadata=doc("sass or ptx."))
    arch: str = field(metadata=doc("sm_90a, compute_90, ..."))
    cuda: str = field(metadata=doc("The toolkit that wrote it (13.0; empty: unknown)."))
    compressed: bool = field(metadata=doc("A compressed fat-binary entry."))


@dataclass(frozen=True)
class ChoiceDocument:
    """One binary (or group of alternative files) on one GPU: the image loaded, or why none."""

    binary: str = field(metadata=doc("The member, or the group's name."))
    members: list[str] = field(metadata=doc("The files that stand for it."))
    ok: bool = field(metadata=doc("An image loads."))
    image: ImageDocument | None = field(metadata=doc("The image the driver loads (null: none)."))
    how: str = field(metadata=doc("Why that one (exact SASS, family SASS, PTX JIT, ...)."))
    needs_driver: str = field(metadata=doc("The oldest driver that loads it."))
    why: list[str] = field(metadata=doc("When none loads: each reason."))
    fix: str = field(metadata=doc("When none loads: what to do."))
    passed_over: list[str] = field(metadata=doc("Images that would run but cannot load with this driver."))


@dataclass(frozen=True)
class GpuDocument:
    """What one GPU loads of the chosen wheel."""

    gpu: str = field(metadata=doc("Its compute capability (sm_89)."))
    name: str = field(metadata=doc("Its name (--gpu auto), else empty."))
    driver: str = field(metadata=doc("The driver version (empty: any)."))
    ok: bool = field(metadata=doc("Every binary has an image it loads."))
    binaries: list[ChoiceDocument] = field(metadata=doc("Each CUDA binary of the wheel."))


@dataclass(frozen=True)
class ExplainDocument:
    """`explain WHEEL|DIR|--index URL --json`: the wheel a machine installs and what its GPUs load."""

    ok: bool = field(metadata=doc("A wheel fits and every binary loads on every GPU."))
    python: str = field(metadata=doc("The machine's Python."))
    platform: str = field(metadata=doc("The machine's platform tag."))
    source: str = field(metadata=doc("The wheel, directory or index read."))
    wheel: str | None = field(metadata=doc("The chosen wheel's file name (null: none fits)."))
    why: str = field(metadata=doc("When no wheel fits: why."))
    fix: str = field(metadata=doc("When no wheel fits: what to do."))
    candidates: list[str] = field(metadata=doc("The wheels considered."))
    no_cuda: bool = field(metadata=doc("The wheel carries no CUDA code."))
    unreadable: list[str] = field(metadata=doc("Binaries the CUDA reader refused, one line each."))
    gpus: list[GpuDocument] = field(metadata=doc("Each GPU asked about."))


@dataclass(frozen=True)
class TorchDocument:
    """`explain --torch VERSION --json`: the variant a torch user installs, from where, or why none."""

    OMIT_NONE: ClassVar[bool] = True  # loads_on only for a stable-ABI project

    ok: bool = field(metadata=doc("A variant fits."))
    torch: str = field(metadata=doc("The torch asked about (2.13)."))
    gpu: str | None = field(metadata=doc("The GPU asked about (null: any)."))
    platform: str = field(metadata=doc("The machine's platform tag."))
    project: str = field(metadata=doc("The project's name."))
    variant: dict[str, Any] | None = field(metadata=doc("The variant chosen (torch, cuda, name, ...); null: none."))
    index: str | None = field(metadata=doc("pypi, or the static index URL of the variant's CUDA."))
    pip: str | None = field(metadata=doc("The pip command that installs it."))
    uv: str | None = field(metadata=doc("The uv command that installs it."))
    why: str | None = field(metadata=doc("When none fits: why."))
    fix: str | None = field(metadata=doc("When none fits: what to do."))
    considered: list[dict[str, str]] = field(metadata=doc("Every variant of that torch, and why not."))
    loads_on: str | None = field(default=None, metadata=doc("A stable-ABI project's wheels: torch>=2.10."))
