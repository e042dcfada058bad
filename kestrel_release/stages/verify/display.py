"""Human output of verify: a Rich table per wheel, the findings, the verdict (stderr)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.stages.verify.finding import Finding
    from kestrel_release.stages.verify.report import VerifyReport, WheelReport

MODES = {
    "project": "project mode: the kernel project's rules, integrity and PyPI's rules",
    "standalone": "standalone mode (no kernel project here): integrity, PyPI's rules and secrets, CUDA binaries "
    "reported; no project rules (matrix, architectures, forbid lists)",
}


def render(report: VerifyReport) -> None:
    console.info(f"verify: {MODES.get(report.mode, report.mode)}")
    shown: dict[tuple, str] = {}  # CUDA rows already printed -> the wheel that showed them
    for wheel in report.wheels:
        rows = _cuda_rows(wheel)
        if rows and rows in shown:  # the usual case: every Python's wheel carries the same kernels
            console.console.print(_title(wheel, f"{len(wheel.cuda)} CUDA binaries, as in {shown[rows]}"))
        else:
            shown.setdefault(rows, wheel.filename)
            console.console.print(_wheel_table(wheel, rows))
        from kestrel_release.stages.verify.native import summary_lines

        for line in summary_lines(getattr(wheel, "native", {})):
            console.info(f"  {line}")
        for line in coverage_lines(getattr(wheel, "coverage", {})):
            console.info(f"  {line}")
        if wheel.findings:
            console.console.print(_findings_table(wheel.findings))
    if report.findings:
        console.console.print(_findings_table(report.findings, title="the set of wheels"))
    if report.ok:
        warnings = sum(f.severity == "warning" for w in report.wheels for f in w.findings + report.findings)
        note = f" ({warnings} warning(s))" if warnings else ""
        console.ok(f"{len(report.wheels)} wheel(s) pass verify for {report.target}{note}")


def coverage_lines(coverage: dict) -> list[str]:
    """The CUDA matrix in one line per toolkit, and the driver floor."""
    lines = []
    by_toolkit: dict[str, list[str]] = {}
    for cell in coverage.get("matrix", []):
        mark = "ok" if cell["sass"] and (cell["ptx"] or not cell["ptx_required"]) else "MISSING"
        ptx = "+PTX" if cell["ptx"] else ""
        by_toolkit.setdefault(cell["cuda"], []).append(f"{cell['arch']}{ptx} {mark}")
    for toolkit, cells in by_toolkit.items():
        lines.append(f"CUDA {toolkit}: {', '.join(cells)}")
    if coverage.get("driver_floor"):
        lines.append(f"needs NVIDIA driver >= {coverage['driver_floor']}")
    return lines


def _cuda_rows(wheel: WheelReport) -> tuple:
    return tuple(
        (
            info.member,
            " ".join(info.sass) or "-",
            " ".join(info.ptx + info.lto_ir) or "-",
            "yes" if info.debug else "no",
        )
        for info in wheel.cuda
    )


# A wheel of thousands of cubins (flashinfer-cubin: 16,000) is a table nobody reads and seconds to draw.
MAX_ROWS = 200


def grouped(rows: tuple) -> tuple:
    """One row per (SASS, PTX / LTO-IR, debug): how many members have it and the folder they share."""
    groups: dict[tuple, list[str]] = {}
    for member, *rest in rows:
        groups.setdefault(tuple(rest), []).append(member)
    out = []
    for rest, members in groups.items():
        folder = posixpath.commonpath(members) if len(members) > 1 else posixpath.dirname(members[0])
        where = f"under {folder}/" if folder else "in the wheel"
        out.append((f"{len(members)} files {where}", *rest))
    return tuple(out)


def _title(wheel: WheelReport, detail: str = "") -> Text:
    size = console.size(wheel.size, "MiB")  # one unit down the column
    verdict = Text("ok", style="green") if wheel.ok else Text("FAIL", style="bold red")
    return Text.assemble(console.safe(wheel.filename), f"  {size}  ", verdict, f"  {detail}" if detail else "")


def _wheel_table(wheel: WheelReport, rows: tuple) -> Table:
    table = Table(title=_title(wheel), title_justify="left")
    table.add_column("member", overflow="fold")
    table.add_column("SASS")
    table.add_column("PTX / LTO-IR")
    table.add_column("debug")
    if len(rows) > MAX_ROWS and not console.verbose():
        rows = grouped(rows)
        table.caption = f"{len(wheel.cuda)} CUDA binaries in {len(rows)} groups; -v or --json lists each"
    for member, *rest in rows:
        table.add_row(Text(console.safe(member)), *rest)
    if not wheel.cuda:
        table.add_row("(no CUDA binaries)", "-", "-", "-")
    return table


def _findings_table(findings: Iterable[Finding], title: str = "findings") -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("severity", "rule", "member", "what to do"):
        table.add_column(column, overflow="fold")
    for f in findings:
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "cyan")  # cyan: info, reported only
        cells = (Text(console.safe(text)) for text in (f.rule, f.member or "-", f.message))  # names: not markup
        table.add_row(Text(f.severity, style=style), *cells)
    return table
