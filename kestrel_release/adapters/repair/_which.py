"""Find a repair tool's console script: the tool's own bin dir first (where its dependencies
install it), then PATH."""

from __future__ import annotations

import importlib.metadata
import os
import shutil

from kestrel_release.adapters import toolchain
from kestrel_release.adapters.repair._check import ToolCheck


def which(script: str) -> str | None:
    return shutil.which(script, path=f"{toolchain.tool_bin()}{os.pathsep}{os.environ.get('PATH', '')}")


def version(distribution: str, script: str) -> str | None:
    """The installed distribution's version; "unknown" for a script found on PATH without one."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown" if which(script) else None


class ScriptTool:
    """A repair tool run as one console script per wheel (delocate on macOS, delvewheel on Windows):
    its version, the preflight line when it is missing and doctor's row; subclasses add `command`."""

    name: str  # the distribution, as users install it
    script: str  # its console script
    system: str  # where kestrel-release depends on it ("macOS")
    not_found: str  # doctor's detail when the script is missing
    persistent = False

    def version(self) -> str | None:
        return version(self.name, self.script)

    def missing(self) -> list[str]:
        if which(self.script) is None:
            return [
                f"{self.script} not found — reinstall kestrel-release on this {self.system} machine "
                f"(it depends on {self.name} there), or python -m pip install {self.name}"
            ]
        return []

    def checks(self) -> list[ToolCheck]:
        path = which(self.script)
        return [
            ToolCheck(
                self.name,
                path and f"{self.version()} at {path}",
                self.not_found,
                f"python -m pip install {self.name} (kestrel-release depends on it on {self.system})",
            )
        ]
