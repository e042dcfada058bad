"""Native-code checks: DT_NEEDED of every binary, grafted torch/CUDA runtimes, abi3, the glibc floor.

A torch CUDA extension needs libtorch/libc10/libcudart at run time, from the user's torch
install: a copy a repair tool grafted into the wheel (auditwheel without the right excludes)
shadows the user's and breaks on the next torch or driver, so it is an error. A wheel that ships
such a library as itself (nvidia-curand's nvidia/curand/lib/libcurand.so.10, torch's torch/lib)
is that library's provider: reported (info), not an error. The glibc floor (the manylinux tag)
decides who can install the wheel; verify says which distributions.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.artifacts import elf, torch_symbols
from kestrel_release.artifacts.errors import CudaFormatError
from kestrel_release.stages.verify import cxx_runtime
from kestrel_release.stages.verify.finding import Finding

if TYPE_CHECKING:
    from kestrel_release.artifacts.wheel import Member

# glibc of common distributions (docs/real-packages.md section 4), oldest first.
DISTROS = (
    ("RHEL/Rocky 8", (2, 28)),
    ("Ubuntu 20.04", (2, 31)),
    ("Debian 11", (2, 31)),
    ("RHEL 9", (2, 34)),
    ("Amazon Linux 2023", (2, 34)),
    ("Ubuntu 22.04", (2, 35)),
    ("Debian 12", (2, 36)),
    ("Ubuntu 24.04", (2, 39)),
)
# What repair tools do to a library they graft: auditwheel and delvewheel put it in `<dist>.libs/` (older
# auditwheel: `<pkg>/.libs/`; delocate: `<pkg>/.dylibs/`) and rename it with a content hash
# (auditwheel: libfoo-1a2b3c4d.so.1, 8 hex digits; delvewheel: foo-<32 hex digits>.dll).
_GRAFT_DIR = re.compile(r"(?:^|/)(?:[^/]*\.libs|\.dylibs)/")
_GRAFT_HASH = re.compile(r"-[0-9a-f]{8}(?:[0-9a-f]{24})?(?=\.(?:so|dll|dylib)(?:\.|$))")


def glibc_floor(tags: list[str]) -> tuple[int, int] | None:
    """The lowest glibc any of the wheel's manylinux tags asks for (None: not a manylinux wheel)."""
    from kestrel_release.platforms import linux

    plats = [plat for tag in tags for plat in tag.rsplit("-", 1)[-1].split(".")]
    floors = [floor for plat in plats if (floor := linux.glibc_floor(plat))]
    return min(floors) if floors else None


def installs_on(floor: tuple[int, int]) -> tuple[list[str], list[str]]:
    """(distributions that can install a wheel with this floor, those that cannot)."""
    yes = [name for name, glibc in DISTROS if glibc >= floor]
    return yes, [name for name, glibc in DISTROS if glibc < floor]


def floor_text(floor: tuple[int, int]) -> str:
    yes, no = installs_on(floor)
    text = f"glibc >= {floor[0]}.{floor[1]}: installs on {', '.join(yes) or 'none of the common distributions'}"
    return text + (f"; not on {', '.join(no)}" if no else "")


def is_excluded(member: str, exclude: tuple[str, ...]) -> bool:
    base = _GRAFT_HASH.sub("", member.rsplit("/", 1)[-1])
    return any(fnmatch.fnmatchcase(base, p) for p in exclude)


def is_grafted(member: str) -> bool:
    """A library a repair tool copied in: in its graft directory, or renamed with its hash."""
    return bool(_GRAFT_DIR.search(member) or _GRAFT_HASH.search(member.rsplit("/", 1)[-1]))


@dataclass
class NativeScanner:
    """Visits every wheel member in the single read pass (like ContentScanner)."""

    exclude: tuple[str, ...]
    needed: dict[str, list[str]] = field(default_factory=dict)
    # member -> the mangled torch C++ symbols it imports (the stable-ABI rule reads them: stable_abi.py)
    torch_cxx: dict[str, list[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def fresh(self) -> NativeScanner:
        return NativeScanner(self.exclude)

    def merge(self, other: NativeScanner) -> None:
        self.needed.update(other.needed)
        self.torch_cxx.update(other.torch_cxx)
        self.findings += other.findings

    def visit(self, member: Member, data: bytes | memoryview) -> None:
        if len(data) < 64 or not elf.is_elf(data):
            return
        if data[5] == 1 and int.from_bytes(data[18:20], "little") == elf.EM_CUDA:
            return  # a cubin: the CUDA reader's (parsing it here too doubled the cost of cubin-only wheels)
        try:
            parsed = elf.parse(data, member.name)
        except CudaFormatError:
            return  # 32-bit or big-endian: not a binary this checks
        if parsed.machine == elf.EM_CUDA:
            return
        self.needed[member.name] = elf.needed(parsed)
        imported = [n for n in elf.undefined_dynamic_symbols(parsed, "_Z") if torch_symbols.is_torch_cxx(n)]
        if imported:
            self.torch_cxx[member.name] = imported
        private_runtime = cxx_runtime.check(member.name, parsed, self.needed[member.name])
        if private_runtime:
            self.findings.append(private_runtime)
        if not is_excluded(member.name, self.exclude):
            return
        if is_grafted(member.name):
            self.findings.append(
                Finding(
                    "grafted-runtime",
                    "error",
                    member.name,
                    "a repair tool grafted a torch/CUDA runtime library into the wheel; it must come from the user's "
                    "torch or CUDA install: keep it in build.exclude (auditwheel --exclude) and rebuild",
                )
            )
        else:
            self.findings.append(
                Finding(
                    "bundled-runtime",
                    "info",
                    member.name,
                    "the wheel ships this torch/CUDA runtime library itself (no repair tool grafted it), as the "
                    "package providing it does (nvidia-curand, torch); if this package is not its provider, drop it",
                )
            )


def check_wheel(path: Path, tags: list[str], min_glibc: str, audit_abi3: bool = True) -> tuple[list[Finding], dict]:
    """Wheel-level native checks: the abi3 audit and the configured glibc floor. Returns (findings, facts)."""
    facts: dict = {"glibc_floor": None, "installs_on": [], "abi3": any("-abi3-" in t for t in tags)}
    out: list[Finding] = []
    floor = glibc_floor(tags)
    if floor is not None:
        facts["glibc_floor"] = f"{floor[0]}.{floor[1]}"
        facts["installs_on"] = installs_on(floor)[0]
        if min_glibc and floor > tuple(int(p) for p in min_glibc.split(".")):
            out.append(
                Finding(
                    "glibc-floor",
                    "error",
                    "",
                    f"the wheel needs glibc {floor[0]}.{floor[1]}, above build.min_glibc {min_glibc} "
                    f"({floor_text(floor)}): rebuild in a manylinux image (e.g. PyTorch's "
                    "manylinux_2_28 builders) or with an older toolchain",
                )
            )
    if facts["abi3"] and audit_abi3:
        from kestrel_release.adapters import abi3audit

        problems, skipped = abi3audit.audit(path)
        out += [
            Finding(
                "abi3", "error", "", f"{p}: build with Py_LIMITED_API and only limited-API calls, or drop the abi3 tag"
            )
            for p in problems
        ]
        if skipped:
            out.append(Finding("abi3", "warning", "", skipped))
    return out, facts


def summary_lines(native: dict) -> list[str]:
    """Human lines for one wheel: each binary's DT_NEEDED, then the glibc floor and who can install it."""
    lines = [f"{member} needs: {', '.join(libs) or '(nothing)'}" for member, libs in native.get("needed", {}).items()]
    floor = native.get("glibc_floor")
    if floor:
        major, minor = (int(p) for p in floor.split("."))
        lines.append(floor_text((major, minor)))
    return lines
