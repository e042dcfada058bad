"""VersionResult, what `version` show/bump/set did; its own module so resume.py needs no import of the package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kestrel_release.records import documents


@dataclass
class VersionResult:
    """What `show`/`change` did: `old` -> `new` in `files` (relative to the project)."""

    action: str  # show | bump | set
    name: str
    old: str
    new: str
    files: list[str] = field(default_factory=list)
    dry_run: bool = False
    diff: str = ""
    commit: str | None = None
    tag: str | None = None
    warnings: list[str] = field(default_factory=list)

    def document(self) -> documents.VersionDocument:
        return documents.VersionDocument(
            self.action,
            self.name,
            self.old,
            self.new,
            self.files,
            self.dry_run,
            self.diff,
            self.commit,
            self.tag,
            self.warnings,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())
