"""What this machine is, as wheel platforms see it: OS, CPU architecture, libc and its version.

Kept in an adapter because it reads the running system; the decisions made from it
(which configured platforms this host can build) are pure (kestrel_release/platforms).
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass

from kestrel_release.adapters import toolchain
from kestrel_release.platforms import arches


@dataclass(frozen=True)
class Host:
    system: str  # "linux", "windows", "macos"
    arch: str  # a CPU of platforms/arches.py (x86_64, aarch64, ...), else platform.machine() as given
    libc: str = ""  # "glibc" or "musl" on Linux
    libc_version: tuple[int, int] | None = None  # glibc (2, 36); for macOS the OS version (14, 0)

    def describe(self) -> str:
        version = ".".join(map(str, self.libc_version)) if self.libc_version else ""
        libc = f" {self.libc} {version}" if self.libc else f" {version}" if version else ""
        return f"{self.system}-{self.arch}{libc}"


def current() -> Host:
    machine = platform.machine().lower()
    arch = arches.canonical(machine) or machine  # AMD64, arm64 -> the names wheel tags use on Linux
    if sys.platform.startswith("win"):
        return Host("windows", arch)
    if sys.platform == "darwin":
        release = platform.mac_ver()[0] or "0.0"
        parts = [int(p) for p in release.split(".")[:2] if p.isdigit()] + [0, 0]
        return Host("macos", arch, libc_version=(parts[0], parts[1]))
    glibc = toolchain.glibc_version()
    if glibc:
        major, minor = (int(p) for p in glibc.split(".")[:2])
        return Host("linux", arch, "glibc", (major, minor))
    return Host("linux", arch, "musl")
