"""Reading ccache's per-build stats log (kestrel_release/adapters/ccache.py)."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.adapters import ccache

# As ccache 4.7 writes it: a miss, a direct hit, a preprocessed hit and a link it passed through.
STATSLOG = """# src/kernel.c
cache_miss
direct_cache_miss
local_storage_miss
local_storage_write
preprocessed_cache_miss
# src/kernel.c
direct_cache_hit
local_storage_hit
# src/c.c
direct_cache_miss
preprocessed_cache_hit
local_storage_hit
# build/temp.linux-x86_64-cpython-312/src/c.o
called_for_link
"""


def test_a_stats_log_counts_hits_misses_and_calls_passed_through(tmp_path: Path) -> None:
    log = tmp_path / "ccache-3.12.log"
    log.write_text(STATSLOG)
    assert ccache.log_counts(log) == (2, 1, 1)


def test_a_build_that_compiled_nothing_has_no_log(tmp_path: Path) -> None:
    assert ccache.log_counts(tmp_path / "missing.log") == (0, 0, 0)
