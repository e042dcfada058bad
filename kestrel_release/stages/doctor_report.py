"""doctor's report: one Check per row (ok, warn or fail, with a fix) and the report they make.

Kept apart from doctor.py so its sibling check modules (doctor_cuda) build rows without importing it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


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

    def to_json(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks]}
