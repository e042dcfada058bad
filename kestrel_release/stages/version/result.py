"""VersionResult, what `version` show/bump/set did; its own module so resume.py needs no import of the package."""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def to_json(self) -> dict:
        return {
            "action": self.action,
            "name": self.name,
            "old": self.old,
            "new": self.new,
            "files": self.files,
            "dry_run": self.dry_run,
            "diff": self.diff,
            "commit": self.commit,
            "tag": self.tag,
            "warnings": self.warnings,
        }
