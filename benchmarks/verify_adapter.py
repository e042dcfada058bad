"""Verify: the verify engineer's `bench_verify.run(quick)` turned into a report section.

bench_verify generates four wheels whose shared objects embed real nvcc-built
fatbins (about 250 MB each; quick: about 40 MB) and times `kestrel-release
verify`, `check-wheel-contents`, `twine check --strict` and `sha256sum` on
them. This module only maps its result onto figures and the two claims, so it
accepts any dict whose timing entries are named after the command they time:
a list of seconds, or a dict with `samples` (or `median`/`min`/`max`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from benchmarks.common import BenchFailed, Comparison, Figure, NotAvailable, Section

FLOOR_TARGET = 1.5
EXPECTED_QUICK, EXPECTED_FULL = 40_000_000, 250_000_000  # bytes per wheel the issue asks for
# First match wins: a combined peers entry names both tools, so it is tried first.
ROLES = (
    ("peers", ("peers", "combined", "+")),
    ("cwc", ("check-wheel-contents", "check_wheel_contents", "cwc")),
    ("twine", ("twine",)),
    ("floor", ("sha256",)),
    ("tool", ("kestrel", "verify")),
)
# What bench_verify derives from its samples: recomputed here from the samples themselves.
DERIVED = {
    "median",
    "peers_median",
    "ratio_to_sha256sum",
    "ratio_to_peers",
    "floor_target",
    "met_floor",
    "met_peers",
    "quick",
}
NAMES = {
    "tool": "kestrel-release verify",
    "cwc": "check-wheel-contents",
    "twine": "twine check --strict",
    "floor": "sha256sum (floor)",
    "peers": "check-wheel-contents + twine check --strict",
}


def _load():
    if importlib.util.find_spec("benchmarks.bench_verify") is None:
        raise NotAvailable("benchmarks/bench_verify.py does not exist yet")
    if importlib.util.find_spec("kestrel_release.stages.verify") is None:
        raise NotAvailable("kestrel_release.stages.verify does not exist yet")
    from benchmarks import bench_verify

    return bench_verify


def run(quick: bool, work: Path) -> Section:
    """Delegate the measuring to bench_verify.run and state the claims on its figures."""
    import subprocess

    bench_verify = _load()
    try:
        result = bench_verify.run(quick)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
        raise BenchFailed(f"bench_verify: {' '.join(str(exc).split())[:300]}") from None
    return to_section(result, expected_wheel_bytes=EXPECTED_QUICK if quick else EXPECTED_FULL)


def _samples(value) -> list[float] | None:
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, (int, float)) for x in value):
        return [float(x) for x in value]
    if isinstance(value, dict):
        if "samples" in value:
            return _samples(value["samples"])
        if "median" in value:  # only summary numbers: keep min/median/max as three stand-in samples
            return [float(value.get(k, value["median"])) for k in ("min", "median", "max")]
    return None


def _role(key: str) -> str | None:
    low = key.lower()
    return next((role for role, needles in ROLES if any(n in low for n in needles)), None)


def figures(result: dict) -> tuple[dict[str, Figure], list[str]]:
    """Timing entries by role, and every other entry as a note line."""
    flat = {k: v for k, v in result.items() if k not in DERIVED}
    for nest in ("samples", "timings", "figures", "results", "seconds"):
        if isinstance(flat.get(nest), dict):
            flat.update(flat.pop(nest))
    found: dict[str, Figure] = {}
    notes = []
    if isinstance(flat.get("total_bytes"), int):
        notes.append(
            f"{flat.pop('wheels', '?')} wheels, {flat.pop('total_bytes') / 1e6:.0f} MB in all"
            f" ({', '.join(f'{b / 1e6:.0f}' for b in flat.pop('wheel_bytes', []))} MB)."
        )
    for key, value in flat.items():
        samples, role = _samples(value), _role(str(key))
        if samples is not None and role is not None and role not in found:
            found[role] = Figure(NAMES[role], samples)
        else:
            notes.append(f"{key}: {value}")
    if "peers" not in found and {"cwc", "twine"} <= found.keys():
        pairs = zip(found["cwc"].samples, found["twine"].samples, strict=False)
        found["peers"] = Figure(NAMES["peers"], [a + b for a, b in pairs])
        notes.append("peers combined = per-round sum of check-wheel-contents and twine check --strict.")
    return found, notes


def size_problem(result: dict, expected: int | None) -> str | None:
    """A warning when the generated wheels are far smaller than the benchmark calls for."""
    sizes = result.get("wheel_bytes") or []
    if not expected or not sizes or min(sizes) >= expected / 2:
        return None
    return (
        f"wheels are {min(sizes) / 1e6:.1f} MB, not ~{expected / 1e6:.0f} MB: these figures do not "
        "measure large wheels (bench_verify's repeated content deflates away)"
    )


def to_section(result: dict, expected_wheel_bytes: int | None = None) -> Section:
    """Figures and the two claims; a size warning is carried into the claim names and notes."""
    found, notes = figures(result)
    warning = size_problem(result, expected_wheel_bytes)
    tag = " [UNDERSIZED WHEELS]" if warning else ""
    if warning:
        notes.insert(0, "WARNING: " + warning)
    missing = [NAMES[r] for r in ("tool", "floor", "peers") if r not in found]
    if missing:
        raise NotAvailable(f"bench_verify.run gave no timing for {', '.join(missing)} (keys: {sorted(result)})")
    order = [found[r] for r in ("tool", "floor", "cwc", "twine", "peers") if r in found]
    tool = found["tool"]
    return Section(
        "Verify",
        figures=order,
        notes=notes,
        comparisons=[
            Comparison("verify vs sha256sum (floor)" + tag, tool, found["floor"], max_ratio=FLOOR_TARGET),
            Comparison("verify vs check-wheel-contents + twine check" + tag, tool, found["peers"], max_ratio=1.0),
        ],
    )
