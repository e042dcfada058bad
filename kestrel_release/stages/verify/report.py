"""verify's report: what each wheel and the set were found to hold, and the error a failing report ends in.

The records (WheelReport, VerifyReport) are what run returns, render draws and `--json` prints;
raise_for turns a failing one into its one error line (exit 5). The package re-exports them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.artifacts.cuda_binary import CudaInfo
from kestrel_release.errors import VerifyError
from kestrel_release.records import documents
from kestrel_release.stages.verify.finding import Finding
from kestrel_release.ui import console


@dataclass
class WheelReport:
    path: Path
    filename: str
    sha256: str
    size: int
    name: str | None = None
    version: str | None = None
    tags: list[str] = field(default_factory=list)
    cuda: list[CudaInfo] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # cubin/fatbin member -> RECORD digest
    native: dict = field(default_factory=dict)  # DT_NEEDED per binary, glibc floor, abi3 (verify_native)
    binaries: dict = field(default_factory=dict)  # host binary -> (digest, compressed size), for verify_dedupe
    cuda_sizes: list[dict] = field(default_factory=list)  # {toolkit, arch, bytes}: each one's share (size_forecast)
    coverage: dict = field(default_factory=dict)  # cuda_matrix: {"matrix": [...], "driver_floor": "580.65.06"}

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def document(self) -> documents.WheelDocument:
        return documents.WheelDocument(
            path=str(self.path),
            filename=self.filename,
            sha256=self.sha256,
            size=self.size,
            name=self.name,
            version=self.version,
            tags=self.tags,
            cuda=[c.to_json() for c in self.cuda],
            native=self.native,
            cuda_sizes=self.cuda_sizes,
            coverage=self.coverage,
            findings=[f.document() for f in self.findings],
        )

    def to_json(self) -> dict:
        return documents.to_json(self.document())


@dataclass
class VerifyReport:
    target: str
    wheels: list[WheelReport]
    findings: list[Finding] = field(default_factory=list)  # set-level
    mode: str = "project"  # "standalone": no kernel project, so integrity, PyPI's rules and the CUDA report only

    @property
    def ok(self) -> bool:
        return all(w.ok for w in self.wheels) and not any(f.severity == "error" for f in self.findings)

    def errors(self) -> int:
        return sum(f.severity == "error" for w in self.wheels for f in w.findings) + sum(
            f.severity == "error" for f in self.findings
        )

    def document(self) -> documents.VerifyDocument:
        return documents.VerifyDocument(
            ok=self.ok,
            mode=self.mode,
            target=self.target,
            wheels=[w.document() for w in self.wheels],
            findings=[f.document() for f in self.findings],
        )

    def to_json(self) -> dict:
        return documents.to_json(self.document())


def raise_for(report: VerifyReport, show: bool = False) -> None:
    """VerifyError (exit 5) when any error was found.

    `show`: the caller did not render the report (publish, release): list the findings it stops on
    first (the errors; every finding with -v), so "listed above" is true."""
    if not report.ok:
        _raise_for_version(report)
        stale = next((f for f in report.findings if f.rule == "stale-output" and f.severity == "error"), None)
        if stale is not None:  # the one cause worth the error line: every other finding follows from it
            raise VerifyError(stale.message.removesuffix(f" — {stale.hint}"), stale.hint)
        bad = sum(not w.ok for w in report.wheels)
        where = _show_findings(report) if show else "listed above"
        left = any(f.severity == "error" and "`kestrel-release assemble`" in f.message for f in report.findings)
        hint = (
            "configured platforms have no wheels: build them on their machines and `kestrel-release assemble` "
            "the outputs; to check one machine's build alone, `verify --partial`"
            if left
            else f"fix them and rebuild; the findings are {where}"
        )
        raise VerifyError(
            f"verify found {report.errors()} error(s) in {bad} of {len(report.wheels)} wheel(s) for {report.target}",
            hint,
        )
    console.debug(f"verified {len(report.wheels)} wheel(s) for {report.target}")


def _raise_for_version(report: VerifyReport) -> None:
    """A wheel that says another version than the release's is the one error line: which wheel, which
    file in it, both versions, and what to do (publish and release stop on it before any upload)."""
    from kestrel_release.stages.verify.versions import RULE

    hits = [(w.filename, f) for w in report.wheels for f in w.findings if f.rule == RULE and f.severity == "error"]
    if not hits:
        return
    wheel, first = hits[0]
    facts = first.message.removesuffix(f": {first.hint}") if first.hint else first.message
    more = report.errors() - 1
    raise VerifyError(
        f"{wheel}: {first.member} {facts}"
        + (f" (and {more} more error(s); `kestrel-release verify` lists them)" if more else ""),
        first.hint or "rebuild the wheel",
    )


def _show_findings(report: VerifyReport) -> str:
    """Print the findings publish/release stop on; returns where the user finds them."""
    if console.json_mode():
        first = next((f for w in report.wheels for f in w.findings if f.severity == "error"), None)
        first = first or next((f for f in report.findings if f.severity == "error"), None)
        detail = f"first: [{first.rule}] {first.member or '-'}: {first.message}; " if first else ""
        return f"{detail}all of them: kestrel-release verify --json"
    everything = console.verbose()
    for scope, findings in [(w.filename, w.findings) for w in report.wheels] + [("the set of wheels", report.findings)]:
        for f in findings:
            if everything or f.severity == "error":
                member = f" {f.member}:" if f.member else ""
                console.info(f"  {f.severity} [{f.rule}] {scope}:{member} {f.message}")
    return "listed above" + ("" if everything else " (errors only; -v lists every finding)")
