"""Finding: one rule's verdict on one wheel member, what every verify rule returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Finding:
    rule: str
    severity: str  # "error", "warning" or "info" (reported only)
    member: str
    message: str
    hint: str = ""  # the message's advice alone (its tail), where an error line needs it apart

    def to_json(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "member": self.member, "message": self.message}
