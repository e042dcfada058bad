"""macOS: macosx_<version>_<cpu> wheels (arm64, x86_64, or both slices in universal2), repaired by
delocate; the deployment target and CPUs are set for the build so the wheel carries the
configured tag, as cibuildwheel does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from kestrel_release.platforms import arches
from kestrel_release.platforms.base import OSPlatform, Platform

if TYPE_CHECKING:
    from kestrel_release.platforms.base import Host

ARCHES = ("x86_64", "aarch64", "i686")
# Words naming several slices in one binary (a fat Mach-O).
MULTI = {"universal2": ("x86_64", "aarch64"), "intel": ("x86_64", "i686"), "universal": ("x86_64", "i686")}
# What delocate-wheel --require-archs accepts.
DELOCATE_ARCHS = ("arm64", "x86_64", "universal2", "intel")
_TAG = re.compile(r"^macosx_(\d+)_(\d+)_(\w+)$")
_SYSCONFIG = re.compile(r"^macosx-(\d+)\.(\d+)-(\w+)$")


class MacOS(OSPlatform):
    system = "macos"
    repair = "delocate"
    binary_format = "macho"
    examples = ("macosx_14_0_arm64",)
    ci_examples = ("macosx_14_0_arm64",)
    runners: ClassVar[dict[str, str]] = {"aarch64": "macos-14", "x86_64": "macos-13"}
    pypi_tags = r"macosx_\d+_\d+_(x86_64|arm64|universal2|intel|fat3|fat64|universal|i386|ppc|ppc64)"
    sys_platform = "darwin"
    host_floor = "os"
    variant_word = "darwin"  # kernel-builder writes macOS variants as `...-aarch64-darwin`

    def parse(self, name: str) -> Platform | None:
        m = _TAG.match(name) or _SYSCONFIG.match(name)
        if not m:
            return None
        cpu = arches.canonical(m.group(3))
        found = MULTI.get(m.group(3)) or ((cpu,) if cpu in ARCHES else None)
        return Platform(name, "macos", found, (int(m.group(1)), int(m.group(2))), self.system) if found else None

    def arch_word(self, arch: str) -> str:
        return "arm64" if arch == arches.AARCH64 else arch

    def runs_on(self, p: Platform, arch: str) -> bool:
        # A universal2 wheel builds on either Mac CPU (the compiler makes both slices).
        return arch in p.arches or len(p.arches) > 1

    def host_tag(self, host: Host) -> str:
        major, minor = host.libc_version or (11, 0)
        return f"macosx_{major}_{minor if major < 11 else 0}_{self.arch_word(host.arch)}"

    def build_env(self, p: Platform, environ: Mapping[str, str]) -> dict[str, str]:
        """setuptools and scikit-build tag the wheel from MACOSX_DEPLOYMENT_TARGET / _PYTHON_HOST_PLATFORM
        and compile for ARCHFLAGS, so macosx_11_0_arm64 is built for macOS 11 on arm64 even on a newer
        Mac or with a universal2 Python."""
        if p.floor is None:
            return {}
        version = f"{p.floor[0]}.{p.floor[1]}"
        wanted = {
            "MACOSX_DEPLOYMENT_TARGET": version,
            "_PYTHON_HOST_PLATFORM": f"macosx-{version}-{word(p.name)}",
            "ARCHFLAGS": " ".join(f"-arch {self.arch_word(a)}" for a in sorted(p.arches)),
        }
        return {k: v for k, v in wanted.items() if k not in environ}


def word(name: str) -> str:
    """The CPU word of a macOS platform name as written (arm64, x86_64, universal2); arm64 if none."""
    m = _TAG.match(name) or _SYSCONFIG.match(name)
    return m.group(3) if m else "arm64"


def delocate_archs(wheel_name: str) -> str | None:
    """delocate's --require-archs for a wheel file name ('..._macosx_14_0_arm64.whl' -> 'arm64')."""
    m = re.search(r"[-.]macosx_\d+_\d+_([a-z0-9_]+)\.whl$", wheel_name)
    return m.group(1) if m and m.group(1) in DELOCATE_ARCHS else None


PLATFORM = MacOS()
