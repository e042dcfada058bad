"""Wheel platform tags (`platforms = [...]`): what each one means, the one parser of them.

Pure, below the stages: config validation (config_parse), build's per-host plan
(stages/build/platforms.py), verify's matrix (`covers`) and ci's runner choice (`runner_key`) all
read platform names through `parse` here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kestrel_release.errors import UsageError

_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_ARCH = {
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "arm64": "aarch64",
    "aarch64": "aarch64",
    "i686": "i686",
    "win32": "i686",
    "x64": "x86_64",
}
_MAC_MULTI = {"universal2": ("aarch64", "x86_64"), "intel": ("i686", "x86_64"), "universal": ("i686", "x86_64")}
_WINDOWS = {"win_amd64": "x86_64", "win32": "i686", "win_arm64": "aarch64"}
_TAG_LINUX = re.compile(r"^(manylinux|musllinux)_(\d+)_(\d+)_(\w+)$")
_TAG_LEGACY = re.compile(r"^(manylinux1|manylinux2010|manylinux2014)_(\w+)$")
_TAG_MAC = re.compile(r"^macosx_(\d+)_(\d+)_(\w+)$")
# sysconfig spellings (what `ci init` also accepts): linux-x86_64, win-amd64, macosx-14.0-arm64
_SYS_LINUX = re.compile(r"^linux[-_](\w+)$")
_SYS_MAC = re.compile(r"^macosx-(\d+)\.(\d+)-(\w+)$")
EXAMPLES = "manylinux_2_28_x86_64, manylinux_2_28_aarch64, musllinux_1_2_x86_64, win_amd64, macosx_14_0_arm64"


@dataclass(frozen=True)
class Platform:
    """One wheel platform: `family` manylinux/musllinux/linux/windows/macos, its CPU(s), and its floor
    (glibc, musl or macOS version; None = any)."""

    name: str
    family: str
    arches: tuple[str, ...]
    floor: tuple[int, int] | None = None

    @property
    def system(self) -> str:
        return "linux" if self.family in ("manylinux", "musllinux", "linux") else self.family


def parse(name: str) -> Platform | None:
    """A wheel platform tag (or a sysconfig platform name) as a Platform; None if it is neither."""
    if name in _WINDOWS:
        return Platform(name, "windows", (_WINDOWS[name],))
    if name.lower() == "win-amd64":
        return Platform(name, "windows", ("x86_64",))
    if name.lower() == "win-arm64":
        return Platform(name, "windows", ("aarch64",))
    m = _TAG_LINUX.match(name)
    if m and m.group(4) in {*_ARCH.values(), "armv7l", "ppc64le", "s390x", "riscv64", "ppc64"}:
        return Platform(name, m.group(1), (m.group(4),), (int(m.group(2)), int(m.group(3))))
    m = _TAG_LEGACY.match(name)
    if m:
        return Platform(name, "manylinux", (m.group(2),), _LEGACY[m.group(1)])
    m = _TAG_MAC.match(name) or _SYS_MAC.match(name)
    if m:
        arch = m.group(3)
        arches = _MAC_MULTI.get(arch) or ((_ARCH[arch],) if arch in _ARCH else None)
        return Platform(name, "macos", arches, (int(m.group(1)), int(m.group(2)))) if arches else None
    m = _SYS_LINUX.match(name)
    if m and m.group(1) in _ARCH:  # any glibc: the repair picks the tag
        return Platform(name, "manylinux", (_ARCH[m.group(1)],))
    if name.startswith("linux_") and name[6:] in {*_ARCH.values(), "armv6l", "armv7l", "ppc64le", "s390x", "riscv64"}:
        return Platform(name, "linux", (name[6:],))
    return None


def problems(names: tuple[str, ...]) -> list[str]:
    """Configuration problems of a `platforms` list (config.load reports them, exit 2)."""
    out = [f"platforms: '{n}' is not a wheel platform tag (e.g. {EXAMPLES})" for n in names if parse(n) is None]
    dupes = sorted({n for n in names if names.count(n) > 1})
    out += [f"platforms: '{n}' is listed twice" for n in dupes]
    return out


def covers(wheel_platform: str, configured: str) -> bool:
    """Does a wheel tagged `wheel_platform` install wherever the configured platform does?

    The same family and CPU, and a floor at or below the configured one: a manylinux_2_17 wheel
    serves a manylinux_2_28 platform, a macosx_11_0_arm64 wheel a macosx_14_0_arm64 one, and a
    universal2 wheel either macOS CPU.
    """
    w, c = parse(wheel_platform), parse(configured)
    if w is None or c is None or w.family != c.family or not set(c.arches) <= set(w.arches):
        return False
    return c.floor is None or w.floor is None or w.floor <= c.floor


def mac_arch(name: str) -> str:
    """The CPU word of a macOS platform name as written (arm64, x86_64, universal2); arm64 if none."""
    m = _TAG_MAC.match(name) or _SYS_MAC.match(name)
    return m.group(3) if m else "arm64"


def runner_key(name: str) -> str:
    """'linux-x86_64', 'windows-arm64', 'macos-arm64'...: the CI runner family that builds `name`
    (a wheel platform tag or a sysconfig platform); UsageError for one no hosted or GPU runner builds."""
    p = parse(name)
    arch = p.arches[0] if p is not None and len(p.arches) == 1 else None
    if p is None or arch not in ("x86_64", "aarch64"):
        raise UsageError(
            f"platforms: '{name}' is not a platform this workflow can build on",
            "use e.g. manylinux_2_34_x86_64, manylinux_2_28_aarch64, win_amd64, macosx_14_0_arm64",
        )
    return f"{p.system}-{'arm64' if arch == 'aarch64' and p.system != 'linux' else arch}"
