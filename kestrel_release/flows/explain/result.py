"""explain's report: the wheel chosen for the machine and, per GPU, each binary's image (or why none)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kestrel_release.flows.explain.images import Choice
from kestrel_release.records import documents
from kestrel_release.records.explain_documents import ExplainDocument, GpuDocument


@dataclass
class GpuResult:
    gpu: str  # sm_89
    name: str  # "NVIDIA L4" (--gpu auto) or ""
    driver: str  # "" when not given
    choices: list[Choice] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.choices)

    def document(self) -> GpuDocument:
        return GpuDocument(self.gpu, self.name, self.driver, self.ok, [c.document() for c in self.choices])

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


@dataclass
class ExplainReport:
    python: str
    platform: str
    source: str
    wheel: str = ""  # the chosen wheel's file name; "" when none fits
    why: str = ""  # when no wheel: why
    fix: str = ""
    candidates: list[str] = field(default_factory=list)
    gpus: list[GpuResult] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # binaries the CUDA reader refused, one line each
    no_cuda: bool = False  # the wheel carries no CUDA code

    @property
    def ok(self) -> bool:
        return bool(self.wheel) and not self.unreadable and all(g.ok for g in self.gpus)

    def document(self) -> ExplainDocument:
        return ExplainDocument(
            ok=self.ok,
            python=self.python,
            platform=self.platform,
            source=self.source,
            wheel=self.wheel or None,
            why=self.why,
            fix=self.fix,
            candidates=self.candidates,
            no_cuda=self.no_cuda,
            unreadable=self.unreadable,
            gpus=[g.document() for g in self.gpus],
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())
