"""explain's report: the wheel chosen for the machine and, per GPU, each binary's image (or why none)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kestrel_release.stages.explain.images import Choice


@dataclass
class GpuResult:
    gpu: str  # sm_89
    name: str  # "NVIDIA L4" (--gpu auto) or ""
    driver: str  # "" when not given
    choices: list[Choice] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.choices)

    def to_json(self) -> dict:
        return {
            "gpu": self.gpu,
            "name": self.name,
            "driver": self.driver,
            "ok": self.ok,
            "binaries": [c.to_json() for c in self.choices],
        }


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

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "python": self.python,
            "platform": self.platform,
            "source": self.source,
            "wheel": self.wheel or None,
            "why": self.why,
            "fix": self.fix,
            "candidates": self.candidates,
            "no_cuda": self.no_cuda,
            "unreadable": self.unreadable,
            "gpus": [g.to_json() for g in self.gpus],
        }
