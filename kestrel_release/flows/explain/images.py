"""Which image of a binary a GPU and driver would load, by NVIDIA's rules (cuda_rules), or why none.

Pure: works on the CUDA reader's per-image rows (`CudaInfo.entries`: kind, arch, compressed, cuda).
The driver prefers a cubin (SASS) that runs on the device to JIT-compiling PTX; among cubins the
one built for exactly this GPU (`a`), then the highest arch of the same major not above the device
(family `f` before plain at the same arch); among PTX the highest arch. An image the driver cannot
load (CUDA 13 code before r580, compressed fat binaries before CUDA 12.4's driver, PTX newer than
the driver) is passed over, and said why.

Files that are alternatives of one another (`cu12.9/sm_80/attn.fatbin` and `cu13.0/sm_90a/attn.fatbin`,
`attn_sm80.so` and `attn_sm90a.so`: the package's loader picks one by name) count as one binary:
it is served when any of them holds a loadable image.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kestrel_release.facts import cuda_rules
from kestrel_release.facts.cuda_rules import Arch
from kestrel_release.flows.explain.arch_source import ArchSource
from kestrel_release.records import documents
from kestrel_release.records.explain_documents import ChoiceDocument, ImageDocument

# A path component or file-name word that names an arch or a toolkit: dropped from the grouping key.
_ARCH_WORD = re.compile(r"(?<![a-z0-9])(?:sm|compute)_?\d{2,3}[af]?(?![a-z0-9])")
_TOOLKIT_DIR = re.compile(r"^(?:cu|cuda)[-_]?\d+(?:\.\d+)*$")


@dataclass(frozen=True)
class Image:
    member: str
    kind: str  # sass or ptx
    arch: str  # sm_90a, compute_90
    cuda: str  # toolkit that wrote it ("13.0", "12", "")
    compressed: bool
    bytes: int = 0

    def document(self) -> ImageDocument:
        return ImageDocument(self.member, self.kind, self.arch, self.cuda, self.compressed)

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


@dataclass
class Choice:
    """One binary (or group of alternative files) on one GPU: the image loaded, or why none."""

    binary: str  # the member, or the group's key
    members: list[str]
    image: Image | None = None
    how: str = ""  # "exact arch-specific SASS (a)", "family SASS (f)", "same-major SASS", "PTX JIT", ...
    needs_driver: str = ""  # the oldest driver that loads the chosen image
    why: list[str] = field(default_factory=list)  # when none: each reason, one line
    fix: str = ""
    passed_over: list[str] = field(default_factory=list)  # images that would run but cannot load here

    @property
    def ok(self) -> bool:
        return self.image is not None

    def document(self) -> ChoiceDocument:
        return ChoiceDocument(
            binary=self.binary,
            members=self.members,
            ok=self.ok,
            image=self.image.document() if self.image else None,
            how=self.how,
            needs_driver=self.needs_driver,
            why=self.why,
            fix=self.fix,
            passed_over=self.passed_over,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def group_key(member: str) -> str:
    """The binary a file stands for: its path without arch or toolkit names (folders and words)."""
    parts = member.split("/")
    folders = [p for p in parts[:-1] if not _TOOLKIT_DIR.match(p.lower()) and not _ARCH_WORD.fullmatch(p.lower())]
    base = _ARCH_WORD.sub("", parts[-1].lower())
    base = re.sub(r"[._-]{2,}", lambda m: m.group()[-1], base).strip("_-")
    # A package loader reads a kernel's cubin or fat binary, whichever it has for the GPU: one binary.
    base = re.sub(r"\.(?:cubin|fatbin)$", ".{cubin,fatbin}", base)
    return "/".join([*folders, base])


def binary_name(key: str, members: list[str]) -> str:
    """What a report calls a binary: its file, or the group's key and how many files stand for it."""
    return members[0] if len(members) == 1 else f"{key} ({len(members)} files)"


def _arch(image: Image) -> Arch | None:
    try:
        return Arch.parse(image.arch)
    except cuda_rules.ArchError:
        return None


def _toolkit(image: Image) -> tuple[int, int] | None:
    try:
        return cuda_rules.parse_toolkit(image.cuda) if image.cuda else None
    except cuda_rules.ArchError:
        return None


def _how(arch: Arch, kind: str, device: tuple[int, int]) -> str:
    if kind == "ptx":
        return f"PTX JIT ({arch.compute} compiled by the driver for sm_{device[0]}{device[1]})"
    if arch.suffix == "a":
        return "exact arch-specific SASS (a)"
    if arch.suffix == "f":
        return "family SASS (f)" if (arch.major, arch.minor) != device else "family SASS (f), exact GPU"
    if (arch.major, arch.minor) == device:
        return "exact SASS"
    return f"same-major SASS ({arch.sm} runs on {arch.major}.x with minor >= {arch.minor})"


def driver_needs(image: Image) -> list[tuple[str, str, str]]:
    """(floor, why, fix) for each driver requirement of an image."""
    out = []
    toolkit = _toolkit(image)
    if toolkit and toolkit[0] in cuda_rules.DRIVER_FOR_MAJOR:
        floor = cuda_rules.DRIVER_FOR_MAJOR[toolkit[0]]
        out.append(
            (
                floor,
                f"CUDA {toolkit[0]} code needs driver >= {floor.split('.')[0]} (r{floor.split('.')[0]})",
                f"install NVIDIA driver >= {floor}" + (" or use a build made with CUDA 12" if toolkit[0] >= 13 else ""),
            )
        )
    if image.compressed:
        floor = cuda_rules.DRIVER_FOR_COMPRESSED
        out.append(
            (
                floor,
                f"compressed fat-binary entries need driver >= {floor} (CUDA 12.4's)",
                f'install NVIDIA driver >= {floor}, or rebuild with build.cuda_compress = "none"',
            )
        )
    if image.kind == "ptx" and toolkit:
        rows = [k for k in cuda_rules.DRIVER_OF_TOOLKIT if k <= toolkit]
        if rows:
            floor = cuda_rules.DRIVER_OF_TOOLKIT[max(rows)]
            name = image.cuda if "." in image.cuda else cuda_rules.toolkit_name(toolkit)
            out.append(
                (
                    floor,
                    f"PTX from CUDA {name} needs driver >= {floor} to JIT-compile",
                    f"install NVIDIA driver >= {floor}, or add SASS for this GPU (its arch list)",
                )
            )
    return out


def _rank(image: Image, arch: Arch) -> tuple:
    toolkit = _toolkit(image) or (0, 0)
    if image.kind == "sass":
        return (1, arch.suffix == "a", arch.minor, arch.suffix == "f", toolkit)
    return (0, arch.major, arch.minor, False, toolkit)


def choose(
    binary: str, images: list[Image], device: tuple[int, int], driver: str, arches: ArchSource | None = None
) -> Choice:
    """The image `device` with `driver` ("" = any driver) loads among `images`, or why none; a fix
    that adds an arch names `arches`, where the project's arch list comes from."""
    arches = arches or ArchSource()
    members = sorted({i.member for i in images})
    choice = Choice(binary, members)
    runnable: list[tuple[Image, Arch]] = []
    for image in images:
        arch = _arch(image)
        if arch is None or image.kind not in ("sass", "ptx"):
            continue
        runs = cuda_rules.sass_runs_on if image.kind == "sass" else cuda_rules.ptx_runs_on
        if runs(arch, device):
            runnable.append((image, arch))
    gpu = f"sm_{device[0]}{device[1]}"
    if not runnable:
        sass = sorted({i.arch for i in images if i.kind == "sass"}, key=_order)
        ptx = sorted({i.arch for i in images if i.kind == "ptx"}, key=_order)
        choice.why.append(
            f"nothing runs on {gpu}: SASS {', '.join(sass) or 'none'}; PTX {', '.join(ptx) or 'none'}"
            + _why_not(sass, ptx, device)
        )
        choice.fix = (
            f"build for this GPU: {arches.add(device)} (or PTX for an arch <= "
            f"{device[0]}.{device[1]} to cuda_ptx for forward compatibility)"
        )
        return choice
    loadable: list[tuple[Image, Arch, str]] = []
    blocked: list[tuple[Image, list[tuple[str, str, str]]]] = []
    for image, arch in runnable:
        needs = driver_needs(image)
        floor = max((n[0] for n in needs), key=cuda_rules.driver_key, default="")
        missing = [n for n in needs if driver and cuda_rules.driver_older(driver, n[0])]
        if missing:
            blocked.append((image, missing))
        else:
            loadable.append((image, arch, floor))
    for image, missing in blocked:
        choice.passed_over.append(f"{image.member}: {image.arch}: " + "; ".join(m[1] for m in missing))
    if loadable:
        image, arch, floor = max(loadable, key=lambda c: _rank(c[0], c[1]))
        choice.image, choice.how, choice.needs_driver = image, _how(arch, image.kind, device), floor
        return choice
    # Every image that would run is refused by the driver: say each reason once, fix with the smallest update.
    reasons: dict[str, None] = {}
    for _image, missing in blocked:
        for m in missing:
            reasons.setdefault(f"{m[1]}; this driver is {driver}", None)
    choice.why = list(reasons)
    floors = [max((m[0] for m in missing), key=cuda_rules.driver_key) for _i, missing in blocked]
    lowest = min(floors, key=cuda_rules.driver_key)
    best = next(missing for _i, missing in blocked if max((m[0] for m in missing), key=cuda_rules.driver_key) == lowest)
    choice.fix = next(m[2] for m in best if m[0] == lowest)
    return choice


def _order(arch: str) -> tuple[int, str]:
    digits = re.search(r"\d+", arch)
    return (int(digits.group()) if digits else 0, arch)


def _why_not(sass: list[str], ptx: list[str], device: tuple[int, int]) -> str:
    """The one rule that keeps the nearest image off this GPU."""
    for name in sass:
        arch = Arch.parse(name)
        if arch.major == device[0] and arch.suffix == "a":
            return f" ({arch.sm} runs on {arch.major}.{arch.minor} only)"
        if arch.major == device[0] and arch.minor > device[1]:
            return f" ({arch.sm} needs minor >= {arch.minor})"
    if any(Arch.parse(p).suffix for p in ptx):
        return " (a/f PTX does not carry across families)"
    return " (SASS runs only within its major; PTX only on newer GPUs)" if sass or ptx else ""
