"""One tool a repair needs, as doctor shows it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolCheck:
    name: str  # "auditwheel", "patchelf", "delvewheel", "delocate"
    found: str | None  # what was found (version, path); None when missing
    problem: str = ""  # why it is missing ("not found")
    fix: str = ""
