"""Find a repair tool's console script: the tool's own bin dir first (where its dependencies
install it), then PATH."""

from __future__ import annotations

import importlib.metadata
import os
import shutil

from kestrel_release.adapters import toolchain


def which(script: str) -> str | None:
    return shutil.which(script, path=f"{toolchain.tool_bin()}{os.pathsep}{os.environ.get('PATH', '')}")


def version(distribution: str, script: str) -> str | None:
    """The installed distribution's version; "unknown" for a script found on PATH without one."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown" if which(script) else None
