"""Repair tools behind one small interface: auditwheel (linux.py), delvewheel (windows.py), delocate
(macos.py). Which platform uses which is the platform's own choice (kestrel_release/platforms:
`platforms.for_system(system).repair`, a name); this package runs them: `for_system(system)`.

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

__all__ = ["TOOLS", "RepairTool", "ToolCheck", "for_system", "named"]


class RepairTool(Protocol):
    name: str  # the tool, as users know it ("auditwheel")
    persistent: bool  # True: build repairs through one long-lived child (stages/build_wheels/repair.py)

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


# By the name a platform module gives (kestrel_release/platforms: Linux.repair = "auditwheel").
TOOLS: dict[str, RepairTool] = {t.name: t for t in (linux.TOOL, windows.TOOL, macos.TOOL)}


def named(name: str) -> RepairTool:
    """The repair tool a platform names ("auditwheel", "delvewheel", "delocate")."""
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"no repair tool {name!r}") from None


def for_system(system: str) -> RepairTool:
    """The repair tool for wheels built on `system` (auditwheel, delvewheel, delocate): the one its platform names."""
    from kestrel_release import platforms

    return named(platforms.for_system(system).repair)
