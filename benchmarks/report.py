"""Turning sections into the terminal table and benchmarks/RESULTS.md.

RESULTS.md is regenerated on each run except its `## Analysis` section, which
is written by hand (why a target was missed, what would close it) and carried
over from the previous file.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

from benchmarks.common import ROOT, Comparison, Figure, Section

ANALYSIS = "## Analysis"
PACKAGES = (
    "kestrel-release",
    "twine",
    "check-wheel-contents",
    "auditwheel",
    "pypiserver",
    "uv",
    "scikit-build-core",
    "cmake",
)


def fmt_s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def fmt_fig(fig: Figure) -> str:
    if not fig.samples:
        return "n/a"
    return f"{fmt_s(fig.median)} (min {fmt_s(fig.low)}, max {fmt_s(fig.high)}, n={len(fig.samples)})"


def verdict(c: Comparison) -> str:
    if c.max_ratio is None and c.max_seconds is None:
        return "info"
    return "met" if c.met else "MISSED"


def fmt_ratio(c: Comparison) -> str:
    if c.ratio is None:
        return "-"
    pairs = c.ratios
    return f"{c.ratio:.2f}x (min {min(pairs):.2f}, max {max(pairs):.2f})" if pairs else f"{c.ratio:.2f}x"


def _sh(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    return (out.stdout or out.stderr).strip()


def load() -> str:
    """The 1/5/15-minute load averages, as /proc/loadavg shows them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine() -> dict[str, str]:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        platform.processor(),
    )
    mem = next(
        (ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")), "0"
    )
    os_name = next(
        (
            ln.split("=", 1)[1].strip('"')
            for ln in Path("/etc/os-release").read_text().splitlines()
            if ln.startswith("PRETTY_NAME=")
        ),
        platform.system(),
    )
    return {
        "CPU": f"{cpu}, {os.cpu_count()} cores",
        "memory": f"{int(mem) / 1024 / 1024:.1f} GiB",
        "OS": f"{os_name}, Linux {platform.release()}",
        "git commit": _sh(["git", "-C", str(ROOT), "describe", "--always", "--dirty"]),
    }


def versions() -> dict[str, str]:
    found = {"Python (tool venv)": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    nvcc = _sh(["nvcc", "--version"])
    found["nvcc"] = (re.search(r"V\d+\.\d+\.\d+", nvcc) or [nvcc[-40:]])[0]
    found["sha256sum"] = _sh(["sha256sum", "--version"]).splitlines()[0]
    return found


def table(sections: list[Section]) -> str:
    """The plain-text summary printed at the end of a run."""
    rows = [("claim", "kestrel-release", "baseline", "ratio", "target", "result")]
    for s in sections:
        if s.unavailable:
            rows.append((s.title, "not available: " + s.unavailable, "", "", "", ""))
        for c in s.comparisons:
            rows.append(
                (
                    c.claim,
                    fmt_s(c.subject.median),
                    fmt_s(c.baseline.median) if c.baseline else "-",
                    fmt_ratio(c),
                    c.target,
                    verdict(c),
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _md_section(s: Section) -> list[str]:
    out = [f"## {s.title}", ""]
    if s.unavailable:
        return [*out, f"Not available: {s.unavailable}", ""]
    out += ["| what | median | min | max | runs | nvcc calls (compiles) |", "|---|---|---|---|---|---|"]
    for f in s.figures:
        if not f.samples:
            continue
        nvcc = ", ".join(
            f"{a} ({b})" for a, b in zip(f.extra.get("nvcc", []), f.extra.get("nvcc_compiles", []), strict=False)
        )
        out.append(
            f"| {f.name} | {fmt_s(f.median)} | {fmt_s(f.low)} | {fmt_s(f.high)} | {len(f.samples)} | {nvcc or '-'} |"
        )
    out += [""] + [f"- {n}" for n in s.notes] + [""]
    return out


def markdown(sections: list[Section], meta: dict[str, str], analysis: str) -> str:
    flag = " --quick" if meta.get("mode") == "quick" else ""
    intro = (
        f"Written by `uv run python benchmarks/run.py{flag}` on {meta['date']} ({meta['mode']} run, "
        f"{meta['duration']}). Each figure is the median of its runs, with min and max; a ratio is the median "
        "of the per-round ratios (both sides measured in turn in each round, so load hits both), with their "
        "min and max (a ratio without them divides two medians of this same run)."
    )
    lines = ["# Benchmark results", "", intro, "", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in {**machine(), **{k: meta[k] for k in ("load before", "load after")}}.items()]
    lines += ["", "## Versions", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in versions().items()]
    lines += [
        "",
        "## Claims",
        "",
        "| claim | kestrel-release | baseline | ratio | target | result |",
        "|---|---|---|---|---|---|",
    ]
    for s in sections:
        if s.unavailable:
            lines.append(f"| {s.title} | not available: {s.unavailable} | | | | |")
        for c in s.comparisons:
            lines.append(
                f"| {c.claim} | {fmt_fig(c.subject)} | {fmt_fig(c.baseline) if c.baseline else '-'} "
                f"| {fmt_ratio(c)} | {c.target} | {verdict(c)} |"
            )
    lines.append("")
    for s in sections:
        lines += _md_section(s)
    return "\n".join(lines) + "\n" + (analysis or f"{ANALYSIS}\n\n(not written yet)\n")


def kept_analysis(path: Path) -> str:
    """The hand-written `## Analysis` section of an existing RESULTS.md, or ''."""
    if not path.is_file():
        return ""
    text = path.read_text(encoding="utf-8")
    at = text.find("\n" + ANALYSIS)
    return text[at + 1 :] if at >= 0 else ""


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
