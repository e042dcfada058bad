"""What every OS family provides (linux.py, macos.py, windows.py): the protocol and the parsed
platform record. The defaults here are what an OS with nothing special needs, so a new one
overrides only where it differs (cibuildwheel's platforms/ share one shape the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Host:
    """A machine as wheel platforms see it (adapters/host.current reads the running one)."""

    system: str  # "linux", "windows", "macos"
    arch: str  # a CPU of platforms/arches.py (x86_64, aarch64, ...), else platform.machine() as given
    libc: str = ""  # "glibc" or "musl" on Linux
    libc_version: tuple[int, int] | None = None  # glibc (2, 36); for macOS the OS version (14, 0)

    def describe(self) -> str:
        version = ".".join(map(str, self.libc_version)) if self.libc_version else ""
        libc = f" {self.libc} {version}" if self.libc else f" {version}" if version else ""
        return f"{self.system}-{self.arch}{libc}"


@dataclass(frozen=True)
class Platform:
    """One wheel platform: `family` (manylinux, musllinux, linux, windows, macos...), its CPU(s),
    its floor (glibc, musl or OS version; None = any), and the OS family module it belongs to."""

    name: str
    family: str
    arches: tuple[str, ...]
    floor: tuple[int, int] | None = None
    system: str = ""  # the registry key: "linux", "windows", "macos"


class OSPlatform:
    """One OS family. Subclasses set the attributes and override what differs."""

    system: str  # the registry key, as adapters.host.Host.system spells it
    repair: str = ""  # the repair tool's name (adapters/repair: auditwheel, delvewheel, delocate); "" = none
    binary_format: str = ""  # what its extensions are (artifacts/binformat: "elf", "pe", "macho")
    examples: tuple[str, ...] = ()  # tags shown in "e.g." hints
    ci_examples: tuple[str, ...] = ()  # tags shown where ci init refuses a platform
    runners: ClassVar[dict[str, str]]  # CPU -> the GitHub-hosted runner that builds it (ci init)
    ci_containers: bool = False  # its CI jobs run in build.container's image (GitHub runs containers on Linux)
    # The platform tags PyPI accepts for this OS's wheels (warehouse's list), as regex alternatives; "" = none.
    pypi_tags: str = ""
    sys_platform: str = ""  # how `sys.platform` starts on this OS (adapters/host reads the running system)
    # Where a host's floor comes from: "libc" (glibc's version, else musl), "os" (the OS release), "" (none).
    host_floor: str = ""
    # How kernel-builder names this OS in a variant (torch213-cxx11-cu130-x86_64-linux; "" = `system`),
    # and whether that name carries the C++ ABI word (cxx11/cxx98).
    variant_word: str = ""
    variant_abi: bool = False

    def parse(self, name: str) -> Platform | None:
        """A wheel platform tag or sysconfig platform name of this OS; None if it is not one."""
        raise NotImplementedError

    def arch_word(self, arch: str) -> str:
        """How this OS's tags and runners spell a CPU (Windows and macOS say arm64)."""
        return arch

    def runs_on(self, p: Platform, arch: str) -> bool:
        """Can a machine of CPU `arch` build wheels for `p`?"""
        return arch in p.arches

    def host_problem(self, p: Platform, host: Host) -> str | None:
        """Beyond OS and CPU: why this host cannot build `p` (one phrase), None when it can."""
        return None

    def host_tag(self, host: Host) -> str:
        """The most specific platform tag a host of this OS installs (explain's default machine)."""
        raise NotImplementedError

    def repair_target(self, p: Platform) -> str | None:
        """The tag a repair of wheels built for `p` is asked for (build.plat); None = its default."""
        return None

    def build_env(self, p: Platform, environ: Mapping[str, str]) -> dict[str, str]:
        """Environment a build for `p` needs so the wheel gets `p`'s tag (what the user set is kept)."""
        return {}

    def ci_runner(self, arch: str, cuda: bool, gpu_labels: tuple[str, ...]) -> str | list[str]:
        """The runs-on of a CI job building CPU `arch` (cuda: the build needs the GPU runners)."""
        return self.runners[arch]

    def ci_plat(self, p: Platform) -> str | None:
        """The tag a CI job passes as build.plat (and names itself after); None = the runner's own."""
        return None
