"""Repair per platform, where it runs: one small interface, one module per platform (like
cibuildwheel's platforms/): auditwheel on Linux (linux.py), delvewheel on Windows (windows.py),
delocate on macOS (macos.py).

A repair tool vendors the non-system libraries a wheel links into it and retags it; the
exclude list (build.exclude, written as Linux sonames: libtorch*, libcudart*) names what must
never be vendored (torch and the CUDA runtime come from the user's install), and each module
translates it into its tool's flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from kestrel_release.adapters.repair import linux, macos, windows
from kestrel_release.adapters.repair._check import ToolCheck

__all__ = ["RepairTool", "ToolCheck", "for_platform_tag", "for_system"]


class RepairTool(Protocol):
    name: str  # the tool, as users know it ("auditwheel")
    persistent: bool  # True: build repairs through one long-lived child (stages/build/repair.py)

    def version(self) -> str | None: ...

    def missing(self) -> list[str]:
        """Preflight problems (a missing tool), each one line with its remedy."""
        ...

    def checks(self) -> list[ToolCheck]:
        """Every tool the repair needs, found or not, for doctor's table."""
        ...

    def command(self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
        """argv that repairs `wheel` into `out_dir` (exactly one wheel there afterwards)."""
        ...


_TOOLS: dict[str, RepairTool] = {"linux": linux.TOOL, "windows": windows.TOOL, "macos": macos.TOOL}


def for_system(system: str) -> RepairTool:
    """The repair tool for wheels built on `system` ("linux", "windows", "macos")."""
    try:
        return _TOOLS[system]
    except KeyError:
        raise ValueError(f"no repair tool for {system!r}") from None


def for_platform_tag(platform: str) -> RepairTool:
    """The repair tool for a wheel platform tag: win_* -> delvewheel, macosx_* -> delocate,
    manylinux/musllinux/linux -> auditwheel."""
    if platform.startswith("win"):
        return windows.TOOL
    if platform.startswith("macosx"):
        return macos.TOOL
    if "linux" in platform:
        return linux.TOOL
    raise ValueError(f"no repair tool for the platform tag {platform!r}")
