"""verify's report for a CI job's summary page and annotations (ci_output writes them; nothing outside CI).

The same facts as the terminal tables (display.py), as Markdown: one row per wheel (size, verdict, the
CUDA architectures it carries), the findings, the release's total size. Each warning finding is also an
annotation pointing at its wheel.
"""

from __future__ import annotations

from typing import Any

from kestrel_release.stages.verify.finding import Finding
from kestrel_release.ui import ci_output, sizes

VerifyReport = Any  # stages.verify's VerifyReport, which imports this module (no cycle)


def publish(report: VerifyReport) -> None:
    """Hand the report to the CI job: the summary section and one annotation per warning."""
    if not ci_output.active():
        return
    ci_output.summary(markdown(report))
    for wheel in report.wheels:
        for f in wheel.findings:
            if f.severity == "warning":
                ci_output.annotate("warning", _finding_text(f), title=f"verify {f.rule}", file=str(wheel.path))
    for f in report.findings:
        if f.severity == "warning":
            ci_output.annotate("warning", _finding_text(f), title=f"verify {f.rule}")


def _finding_text(f: Finding) -> str:
    return f"{f.member}: {f.message}" if f.member else f.message


def markdown(report: VerifyReport) -> str:
    verdict = "pass" if report.ok else f"FAIL ({report.errors()} error(s))"
    total = sum(w.size for w in report.wheels)
    rows = [
        (
            w.filename,
            sizes.size(w.size),
            "ok" if w.ok else "FAIL",
            len(w.cuda),
            " ".join(sorted({a for c in w.cuda for a in c.sass})) or "-",
            " ".join(sorted({a for c in w.cuda for a in c.ptx})) or "-",
        )
        for w in report.wheels
    ]
    parts = [
        f"### kestrel-release verify: {len(report.wheels)} wheel(s) for {report.target}: {verdict}",
        ci_output.table(("wheel", "size", "verify", "CUDA binaries", "SASS", "PTX"), rows),
        f"Release size: {sizes.size(total)} in {len(report.wheels)} file(s).",
    ]
    findings = [(w.filename, f) for w in report.wheels for f in w.findings] + [
        ("the set of wheels", f) for f in report.findings
    ]
    if findings:
        parts.append(
            ci_output.table(
                ("severity", "rule", "wheel", "member", "what to do"),
                [(f.severity, f.rule, where, f.member or "-", f.message) for where, f in findings],
            )
        )
    return "\n\n".join(parts)
