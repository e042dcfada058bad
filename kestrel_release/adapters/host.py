"""What this machine is, as wheel platforms see it: OS, CPU architecture, libc and its version.

Kept in an adapter because it reads the running system; the decisions made from it
(which configured platforms this host can build) are pure (kestrel_release/platforms).
"""

from __future__ import annotations

import platform
import sys

from kestrel_release import platforms
from kestrel_release.adapters import toolchain
from kestrel_release.platforms import arches
from kestrel_release.platforms.base import Host

__all__ = ["Host", "current"]  # Host is the platforms' record (platforms/base.py); read here


def current() -> Host:
    machine = platform.machine().lower()
    arch = arches.canonical(machine) or machine  # AMD64, arm64 -> the names wheel tags use on Linux
    os_ = platforms.for_sys_platform(sys.platform)  # the registry's: each OS says what its floor is read from
    if os_.host_floor == "os":
        release = platform.mac_ver()[0] or "0.0"
        parts = [int(p) for p in release.split(".")[:2] if p.isdigit()] + [0, 0]
        return Host(os_.system, arch, libc_version=(parts[0], parts[1]))
    if os_.host_floor != "libc":
        return Host(os_.system, arch)
    glibc = toolchain.glibc_version()
    if glibc:
        major, minor = (int(p) for p in glibc.split(".")[:2])
        return Host(os_.system, arch, "glibc", (major, minor))
    return Host(os_.system, arch, "musl")
