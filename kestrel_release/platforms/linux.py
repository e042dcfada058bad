"""Linux: manylinux (glibc) and musllinux wheels, repaired by auditwheel, built on any glibc or
musl host at or above the tag's floor; GPU runners build CUDA wheels in CI."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

from kestrel_release.platforms import arches
from kestrel_release.platforms.base import OSPlatform, Platform

if TYPE_CHECKING:
    from kestrel_release.platforms.base import Host

# The CPUs Linux wheel tags name (PEP 599/600/656 and PyPI's linux_armv6l/armv7l).
ARCHES = ("x86_64", "aarch64", "i686", "armv7l", "armv6l", "ppc64le", "ppc64", "s390x", "riscv64")
# sysconfig's linux-<cpu> means "any glibc" (the repair picks the tag) for these CPUs only; other
# CPUs' plain linux_<cpu> stays a linux_ tag, which PyPI refuses.
ANY_GLIBC = ("x86_64", "aarch64", "i686")
# What PyPI accepts (warehouse): manylinux/musllinux for these CPUs, and plain linux_ only for these two.
PYPI_ARCHES = ("x86_64", "i686", "aarch64", "armv7l", "ppc64le", "s390x", "riscv64", "ppc64")
PYPI_PLAIN = ("armv6l", "armv7l")
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_TAG = re.compile(r"^(manylinux|musllinux)_(\d+)_(\d+)_(\w+)$")
_TAG_LEGACY = re.compile(r"^(manylinux1|manylinux2010|manylinux2014)_(\w+)$")
_SYSCONFIG = re.compile(r"^linux[-_](\w+)$")  # linux-x86_64 (sysconfig), linux_x86_64 (tag)


class Linux(OSPlatform):
    system = "linux"
    repair = "auditwheel"
    binary_format = "elf"
    examples = ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "musllinux_1_2_x86_64")
    ci_examples = ("manylinux_2_34_x86_64", "manylinux_2_28_aarch64")
    runners: ClassVar[dict[str, str]] = {"x86_64": "ubuntu-latest", "aarch64": "ubuntu-24.04-arm"}
    pypi_tags = (
        f"{'|'.join(f'linux_{a}' for a in PYPI_PLAIN)}|manylinux1_(x86_64|i686)|manylinux2010_(x86_64|i686)"
        f"|manylinux2014_({'|'.join(PYPI_ARCHES)})|(many|musl)linux_\\d+_\\d+_({'|'.join(PYPI_ARCHES)})"
    )
    sys_platform = "linux"
    host_floor = "libc"
    variant_abi = True
    ci_containers = True

    def parse(self, name: str) -> Platform | None:
        m = _TAG.match(name)
        if m and m.group(4) in ARCHES:
            return Platform(name, m.group(1), (m.group(4),), (int(m.group(2)), int(m.group(3))), self.system)
        m = _TAG_LEGACY.match(name)
        if m and m.group(2) in ARCHES:
            return Platform(name, "manylinux", (m.group(2),), LEGACY[m.group(1)], self.system)
        m = _SYSCONFIG.match(name)
        cpu = arches.canonical(m.group(1)) if m else None
        if cpu in ANY_GLIBC:
            return Platform(name, "manylinux", (cpu,), None, self.system)
        if name.startswith("linux_") and name[6:] in ARCHES:
            return Platform(name, "linux", (name[6:],), None, self.system)
        return None

    def host_problem(self, p: Platform, host: Host) -> str | None:
        if p.family == "manylinux" and host.libc != "glibc":
            return "needs a glibc host"
        if p.family == "musllinux" and host.libc != "musl":
            return "needs a musl host"
        if p.family == "manylinux" and p.floor and host.libc_version and host.libc_version < p.floor:
            # Same rule as build's preflight: the tag is never above the glibc the wheel was linked on.
            have = ".".join(map(str, host.libc_version))
            return f"needs glibc {p.floor[0]}.{p.floor[1]} or newer (this host has {have})"
        return None

    def host_tag(self, host: Host) -> str:
        if host.libc == "glibc" and host.libc_version:
            return manylinux(host.libc_version, host.arch)
        if host.libc == "musl":
            return f"musllinux_1_2_{host.arch}"
        return f"linux_{host.arch}"

    def repair_target(self, p: Platform) -> str | None:
        # auditwheel retags to exactly this floor (ci init's jobs pass it as build.plat).
        return p.name if p.family in ("manylinux", "musllinux") and p.floor else None

    def ci_runner(self, arch: str, cuda: bool, gpu_labels: tuple[str, ...]) -> str | list[str]:
        if not cuda:
            return self.runners[arch]
        return list(gpu_labels) if arch == arches.X86_64 else [*gpu_labels, "ARM64"]

    def ci_plat(self, p: Platform) -> str | None:
        # Two glibc flavours of one CPU are two jobs, each repairing to its own tag.
        return p.name if p.family in ("manylinux", "musllinux") and _TAG.match(p.name) else None


def glibc_floor(tag: str) -> tuple[int, int] | None:
    """The glibc a manylinux tag asks for (manylinux_2_28_x86_64 -> (2, 28), manylinux2014_* -> (2, 17));
    None for any other tag. The CPU word is not judged: auditwheel's policies name CPUs this tool
    does not list (loongarch64), and their floor is still the tag's."""
    m = _TAG.match(tag)
    if m and m.group(1) == "manylinux":
        return int(m.group(2)), int(m.group(3))
    m = _TAG_LEGACY.match(tag)
    return LEGACY[m.group(1)] if m else None


def manylinux(glibc: tuple[int, int], arch: str) -> str:
    """The manylinux tag of a glibc and CPU: (2, 34), 'x86_64' -> 'manylinux_2_34_x86_64'."""
    return f"manylinux_{glibc[0]}_{glibc[1]}_{arch}"


PLATFORM = Linux()
