"""Windows: win_amd64, win_arm64 and win32 wheels, repaired by delvewheel, built on a Windows
machine of the same CPU (hosted runners in CI, also for CUDA builds)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from kestrel_release.platforms import arches
from kestrel_release.platforms.base import OSPlatform, Platform

if TYPE_CHECKING:
    from kestrel_release.platforms.base import Host

TAGS = {"win_amd64": "x86_64", "win32": "i686", "win_arm64": "aarch64"}
SYSCONFIG = {"win-amd64": "x86_64", "win-arm64": "aarch64"}  # sysconfig.get_platform(), any case


class Windows(OSPlatform):
    system = "windows"
    repair = "delvewheel"
    binary_format = "pe"
    examples = ("win_amd64",)
    ci_examples = ("win_amd64",)
    runners: ClassVar[dict[str, str]] = {"x86_64": "windows-latest", "aarch64": "windows-11-arm"}
    pypi_tags = "|".join([*TAGS, "win_ia64"])  # PyPI still takes Itanium wheels, which nothing here builds
    sys_platform = "win"

    def parse(self, name: str) -> Platform | None:
        cpu = TAGS.get(name) or SYSCONFIG.get(name.lower())
        return Platform(name, "windows", (cpu,), None, self.system) if cpu else None

    def arch_word(self, arch: str) -> str:
        return "arm64" if arch == arches.AARCH64 else arch

    def host_tag(self, host: Host) -> str:
        return next((tag for tag, cpu in TAGS.items() if cpu == host.arch), "win32")


PLATFORM = Windows()
