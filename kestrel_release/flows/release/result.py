"""What a release run reports: each step's outcome, and the run's (ReleaseResult.to_json is --json's document)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kestrel_release.records import documents


@dataclass
class StepResult:
    name: str
    status: str  # done | resumed | failed
    seconds: float = 0.0
    detail: str = ""


@dataclass
class ReleaseResult:
    version: str | None
    rehearse: bool
    targets: tuple[str, ...]
    steps: list[StepResult] = field(default_factory=list)
    pythons: list[str] = field(default_factory=list)  # the Pythons this run built, verified and installed
    skipped_pythons: list[str] = field(default_factory=list)  # configured, missing here (rehearsal only)
    not_checked: list[str] = field(default_factory=list)  # what only the real world can check (rehearsal)
    restored: str = ""  # a rehearsal's bump, undone in the project: "X -> Y restored to X"

    def document(self) -> documents.ReleaseDocument:
        return documents.ReleaseDocument(
            version=self.version,
            rehearse=self.rehearse,
            targets=list(self.targets),
            ok=all(s.status != "failed" for s in self.steps),
            steps=[documents.ReleaseStepDocument(s.name, s.status, s.seconds, s.detail) for s in self.steps],
            pythons=self.pythons,
            skipped_pythons=self.skipped_pythons,
            not_checked=self.not_checked,
            restored=self.restored,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())
