"""Human output of verify: a Rich table per wheel, the findings, the verdict (stderr)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from kestrel_release import console


def render(report) -> None:
    for wheel in report.wheels:
        console.console.print(_wheel_table(wheel))
        if wheel.findings:
            console.console.print(_findings_table(wheel.findings))
    if report.findings:
        console.console.print(_findings_table(report.findings, title="the set of wheels"))
    if report.ok:
        warnings = sum(f.severity == "warning" for w in report.wheels for f in w.findings + report.findings)
        note = f" ({warnings} warning(s))" if warnings else ""
        console.ok(f"{len(report.wheels)} wheel(s) pass verify for {report.target}{note}")


def _wheel_table(wheel) -> Table:
    size = f"{wheel.size / 2**20:.1f} MiB"
    verdict = Text("ok", style="green") if wheel.ok else Text("FAIL", style="bold red")
    table = Table(title=Text.assemble(wheel.filename, f"  {size}  ", verdict), title_justify="left")
    table.add_column("member", overflow="fold")
    table.add_column("SASS")
    table.add_column("PTX / LTO-IR")
    table.add_column("debug")
    for info in wheel.cuda:
        table.add_row(info.member, " ".join(info.sass) or "-", " ".join(info.ptx + info.lto_ir) or "-",
                      "yes" if info.debug else "no")
    if not wheel.cuda:
        table.add_row("(no CUDA binaries)", "-", "-", "-")
    return table


def _findings_table(findings, title: str = "findings") -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("severity", "rule", "member", "what to do"):
        table.add_column(column, overflow="fold")
    for f in findings:
        style = "red" if f.severity == "error" else "yellow"
        table.add_row(Text(f.severity, style=style), f.rule, f.member or "-", f.message)
    return table
