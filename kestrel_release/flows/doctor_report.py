"""doctor's report: one Check per row (ok, warn or fail, with a fix) and the report they make.

Kept apart from doctor.py so its sibling check modules (doctor_cuda) build rows without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kestrel_release.records import documents


@dataclass
class Check:
    name: str
    status: str  # "ok", "warn", "fail"
    detail: str
    fix: str = ""


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def document(self) -> documents.DoctorDocument:
        checks = [documents.CheckDocument(c.name, c.status, c.detail, c.fix) for c in self.checks]
        return documents.DoctorDocument(self.ok, checks)

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())
