"""Finding: one rule's verdict on one wheel member, what every verify rule returns."""

from __future__ import annotations

from dataclasses import dataclass

from kestrel_release.records import serde
from kestrel_release.records.documents import FindingDocument
from kestrel_release.stages.verify.rule_table import BY_ID


@dataclass
class Finding:
    rule: str
    severity: str  # "error", "warning" or "info" (reported only)
    member: str
    message: str
    hint: str = ""  # the message's advice alone (its tail), where an error line needs it apart

    def __post_init__(self) -> None:
        # Every rule id is documented in one table (the reference page is generated from it).
        if self.rule not in BY_ID:
            raise ValueError(f"verify rule {self.rule!r} is not in stages/verify/rule_table.py")

    def document(self) -> FindingDocument:
        return FindingDocument(self.rule, self.severity, self.member, self.message)

    def to_json(self) -> dict:
        return serde.to_json(self.document())
