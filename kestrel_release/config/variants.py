"""The torch x CUDA variant model ([tool.kestrel-release.variants]), pure: no I/O, no console.

A torch C++/CUDA extension is bound to the torch minor it was built against (C++ ABI) and to its
CUDA major, so one wheel per Python is not enough for torch users. A Variant is one such build, named
as HF's kernel-builder names its build variants (`torch213-cxx11-cu130-x86_64-linux`); a
VariantsConfig is the matrix a project releases. docs/gpu-generations.md keeps the facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kestrel_release import platforms

NAMINGS = ("local", "package-suffix")
FORMATS = ("wheel", "pep825")
PYTORCH_INDEX = "https://download.pytorch.org/whl/{cu}"
# Which CUDA PyPI's torch of a minor is built with is read from PyPI itself, never written here:
# adapters/pypi/torch_cuda.py.

_TORCH_RE = re.compile(r"(\d+)\.(\d+)")
_CUDA_RE = re.compile(r"(\d+)\.(\d+)")


class VariantError(ValueError):
    """A variant or a variants table that cannot be; the message is one line for the user."""


def torch_minor(text: str) -> tuple[int, int]:
    """'2.13' -> (2, 13); '2.13.1' and '2.13.0+cu130' are read as their minor."""
    m = _TORCH_RE.match(text.strip())
    if not m:
        raise VariantError(f"'{text}' is not a torch version like 2.13")
    return int(m.group(1)), int(m.group(2))


def cuda_version(text: str) -> tuple[int, int]:
    """'13.0' -> (13, 0); '13.0.88' and '130' (a cu tag's digits) are accepted."""
    t = text.strip().lower().removeprefix("cu")
    m = _CUDA_RE.match(t)
    if m:
        return int(m.group(1)), int(m.group(2))
    if t.isdigit() and len(t) in (3, 4):  # "130", "126", "1210"
        return int(t[:2]), int(t[2:])
    raise VariantError(f"'{text}' is not a CUDA toolkit version like 12.6 or 13.0")


@dataclass(frozen=True, order=True)
class Variant:
    torch: str  # torch minor, "2.13"
    cuda: str  # CUDA toolkit, "13.0"
    cxx11_abi: bool = True
    os: str = "linux"  # "linux" | "windows" | "macos"
    arch: str = "x86_64"
    # The LibTorch stable ABI's target minor ("2.10"): built against `torch` with TORCH_TARGET_VERSION
    # set to it, the wheel loads on every torch from it up; "" = bound to `torch`'s minor.
    stable_abi: str = ""

    @property
    def cu(self) -> str:
        """PyTorch's tag of the CUDA build: 'cu130'."""
        major, minor = cuda_version(self.cuda)
        return f"cu{major}{minor}"

    @property
    def cuda_major(self) -> int:
        return cuda_version(self.cuda)[0]

    @property
    def torch_tag(self) -> str:
        major, minor = torch_minor(self.torch)
        return f"torch{major}{minor}"

    @property
    def name(self) -> str:
        """kernel-builder's build-variant name: torch213-cxx11-cu130-x86_64-linux (the ABI word on
        Linux only, as kernel-builder writes Windows and macOS variants without it); a stable-ABI build
        is `torch-stable-abi210-cu130-x86_64-linux` (kernel-builder's nix-builder/lib/variants/torch.nix,
        kernels' TorchStableAbi: no C++ ABI word, the target minor instead of the torch minor)."""
        if self.stable_abi:
            major, minor = torch_minor(self.stable_abi)
            return "-".join([f"torch-stable-abi{major}{minor}", self.cu, self.arch, platforms.variant_word(self.os)])
        parts = [self.torch_tag]
        os_ = platforms.REGISTRY.get(self.os)
        if os_ is not None and os_.variant_abi:
            parts.append("cxx11" if self.cxx11_abi else "cxx98")
        parts += [self.cu, self.arch, platforms.variant_word(self.os)]
        return "-".join(parts)

    @property
    def requirement(self) -> str:
        """The pin a variant wheel's METADATA carries: torch==2.13.*, or torch>=2.10 for a stable-ABI
        build (it loads on every torch from its target up)."""
        return f"torch>={self.stable_abi}" if self.stable_abi else f"torch=={self.torch}.*"

    @property
    def build_requirement(self) -> str:
        """The torch its build env holds: torch==2.13.* (a stable-ABI build too: the headers of that torch,
        held to the target's API by TORCH_TARGET_VERSION)."""
        return f"torch=={self.torch}.*"

    @property
    def target_version(self) -> str:
        """TORCH_TARGET_VERSION of a stable-ABI build, as torch/csrc/stable/version.h reads it:
        major << 56 | minor << 48 ('2.10' -> 0x020a000000000000); "" for a build bound to its torch."""
        if not self.stable_abi:
            return ""
        major, minor = torch_minor(self.stable_abi)
        return f"0x{(major << 56) | (minor << 48):016x}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "torch": self.torch,
            "cuda": self.cuda,
            "cu": self.cu,
            "cxx11_abi": self.cxx11_abi,
            "os": self.os,
            "arch": self.arch,
            **({"stable_abi": self.stable_abi} if self.stable_abi else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Variant:
        """The inverse of to_json (extra keys such as `default` or `name` are ignored)."""
        try:
            return cls(
                torch=str(data["torch"]),
                cuda=str(data["cuda"]),
                cxx11_abi=bool(data.get("cxx11_abi", True)),
                os=str(data.get("os", "linux")),
                arch=str(data.get("arch", "x86_64")),
                stable_abi=str(data.get("stable_abi") or ""),
            )
        except (KeyError, TypeError) as exc:
            raise VariantError(f"not a variant record (needs torch and cuda): {data!r}") from exc


@dataclass(frozen=True)
class Exclude:
    """One `exclude` entry: a variant is left out when every key given matches ("" = any)."""

    torch: str = ""
    cuda: str = ""
    os: str = ""
    arch: str = ""

    def matches(self, v: Variant) -> bool:
        return all(
            not want or want == have
            for want, have in ((self.torch, v.torch), (self.cuda, v.cuda), (self.os, v.os), (self.arch, v.arch))
        )


@dataclass(frozen=True)
class VariantsConfig:
    torch: tuple[str, ...]
    cuda: tuple[str, ...]
    default: Variant | None = None
    exclude: tuple[Exclude, ...] = ()
    naming: str = "local"  # "local" (+cu130 versions) | "package-suffix" (<name>-cu13 projects)
    format: str = "wheel"  # "wheel" | "pep825" (experimental)
    index: dict[str, str] = field(default_factory=dict)  # cuda -> torch index URL (overrides PyTorch's)
    python: tuple[str, ...] = ()  # () = the project's `python`
    platforms: tuple[str, ...] = ()  # () = the project's `platforms`
    stable_abi: str = ""  # the LibTorch stable ABI's target minor: one build per CUDA major, torch>=X.Y

    @property
    def pythons(self) -> tuple[str, ...]:
        return self.python

    def matrix(self, os: str = "linux", arch: str = "x86_64") -> list[Variant]:
        """Every torch x cuda for one platform, minus the excludes, sorted."""
        every = (Variant(t, c, os=os, arch=arch, stable_abi=self.stable_abi) for t in self.torch for c in self.cuda)
        return sorted(v for v in every if not any(e.matches(v) for e in self.exclude))

    def is_default(self, v: Variant) -> bool:
        d = self.default
        return d is not None and (d.torch, d.cuda, d.cxx11_abi) == (v.torch, v.cuda, v.cxx11_abi)

    def index_url(self, cuda: str) -> str:
        """Where the torch of this CUDA build is installed from: the configured index, else PyTorch's."""
        return self.index.get(cuda) or PYTORCH_INDEX.format(cu=Variant("0.0", cuda).cu)

    def select(self, selectors: tuple[str, ...], os: str = "linux", arch: str = "x86_64") -> list[Variant]:
        """The variants of the matrix a selector names (VariantError for one that names none)."""
        every = self.matrix(os, arch)
        chosen: list[Variant] = []
        for text in selectors:
            hit = [v for v in every if matches_selector(v, text)]
            if not hit:
                names = ", ".join(v.name for v in every)
                raise VariantError(f"--variant {text!r} names no variant of the matrix ({names})")
            chosen += [v for v in hit if v not in chosen]
        return sorted(chosen)

    def wheel_version(self, version: str, v: Variant) -> str:
        """The version a variant wheel carries: plain for the default (and under package-suffix),
        else PyTorch's local-version style `<version>+cu130`; where two variants other than the default
        share a CUDA, the torch minor joins it as flash-attention writes it (`+cu130torch2.14`), since
        `+cu130` alone would give them one filename."""
        if self.naming == "package-suffix" or self.is_default(v):
            return version
        return f"{version}+{self.local_tag(v)}"

    def local_tag(self, v: Variant) -> str:
        """`cu130`, or `cu130torch2.14` when another non-default variant of the matrix has the same CUDA."""
        same = {
            w.torch
            for w in self.matrix(v.os, v.arch)
            if w.cuda == v.cuda and w.cxx11_abi == v.cxx11_abi and not self.is_default(w)
        }
        return v.cu if same <= {v.torch} else f"{v.cu}torch{v.torch}"

    def project_name(self, name: str, v: Variant) -> str:
        """The project a variant wheel belongs to: the name, or `<name>-cu13` under package-suffix."""
        return f"{name}-cu{v.cuda_major}" if self.naming == "package-suffix" else name


def matches_selector(v: Variant, text: str) -> bool:
    """A --variant selector: the full name, or words like `torch2.13`, `cu130`, `torch2.13-cu13.0`,
    `2.13+cu130`; every word given must match."""
    t = text.strip().lower()
    if t == v.name:
        return True
    words = [w for w in re.split(r"[-+,/\s]+", t) if w]
    if not words:
        return False
    for word in words:
        if word in ("torch", "stable", "abi"):  # the words of torch-stable-abi210
            ok = bool(v.stable_abi)
        elif re.fullmatch(r"abi\d+", word):
            ok = bool(v.stable_abi) and word[3:] == "".join(map(str, torch_minor(v.stable_abi)))
        elif word.startswith("torch"):
            body = word.removeprefix("torch")
            ok = body in (v.torch, v.torch_tag.removeprefix("torch"))
        elif word.startswith("cu"):
            try:
                ok = cuda_version(word) == cuda_version(v.cuda)
            except VariantError:
                ok = False
        elif word in ("cxx11", "cxx98"):
            ok = (word == "cxx11") == v.cxx11_abi
        elif word in (v.arch, v.os, platforms.variant_word(v.os)):
            ok = True
        else:
            ok = word == v.torch
        if not ok:
            return False
    return True


def same_cuda(a: str, b: str) -> bool:
    """'13.0' and '13.0.88' (torch.version.cuda) are the same toolkit minor."""
    try:
        return cuda_version(a) == cuda_version(b)
    except VariantError:
        return False


def local_tag(version: str) -> str:
    """The local part of a version ('+cu130' -> 'cu130'), '' when none."""
    return version.partition("+")[2]
