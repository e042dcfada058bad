"""Verify: the verify engineer's `bench_verify.run(quick)` turned into a report section.

bench_verify generates four wheels whose shared objects embed real nvcc-built
fatbins (about 250 MB each; quick: about 40 MB) and times `kestrel-release
verify`, `check-wheel-contents` + `twine check --strict`, and `sha256sum` on
them. This module only maps its result onto figures and the two claims.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from benchmarks.common import Comparison, Figure, NotAvailable, Section

FLOOR_TARGET = 1.5


def _load():
    if importlib.util.find_spec("benchmarks.bench_verify") is None:
        raise NotAvailable("benchmarks/bench_verify.py does not exist yet")
    if importlib.util.find_spec("kestrel_release.stages.verify") is None:
        raise NotAvailable("kestrel_release.stages.verify does not exist yet")
    from benchmarks import bench_verify

    return bench_verify


def run(quick: bool, work: Path) -> Section:
    """Delegate the measuring to bench_verify.run and state the claims on its figures."""
    result = _load().run(quick)
    return to_section(result)


def to_section(result: dict) -> Section:
    raise NotAvailable(f"bench_verify.run returned keys {sorted(result)} that this adapter does not know")
