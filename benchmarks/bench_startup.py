"""Start-up: `kestrel-release --help` and `kestrel-release verify --help` against `twine --help`.

The venv's console-script entry points are timed as a user runs them (a fresh
process each time); one untimed run first so the page cache is warm for all of them.
`--help` is also timed with the help cache out of reach (its cache dir is a file, so
nothing is replayed nor recorded): what the lazy command registry alone gives, the
figure that says whether the replay is still worth its code.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.common import (
    VENV_BIN,
    Comparison,
    Figure,
    NotAvailable,
    Section,
    bench_env,
    timed,
)

MAX_SECONDS = 0.12
MAX_RATIO = 0.6  # of twine --help


def _figure(name: str, argv: list[str], runs: int, env: dict[str, str]) -> Figure:
    timed(argv, env=env, what=name)  # warm-up, not counted
    return Figure(name, [timed(argv, env=env, what=name) for _ in range(runs)])


def run(quick: bool) -> Section:
    """Median of 10 fresh-process runs of each command (quick: 5)."""
    runs = 5 if quick else 10
    tool, twine = VENV_BIN / "kestrel-release", VENV_BIN / "twine"
    for exe in (tool, twine):
        if not exe.is_file():
            raise NotAvailable(f"{exe} is missing (run `uv sync`)")
    env = bench_env()
    help_fig = _figure("kestrel-release --help", [str(tool), "--help"], runs, env)
    verify_fig = _figure("kestrel-release verify --help", [str(tool), "verify", "--help"], runs, env)
    with tempfile.TemporaryDirectory() as tmp:
        blocked = Path(tmp) / "not-a-dir"
        blocked.write_text("")  # the cache dir is a file: no help entry can be read or written
        cold_env = {**env, "KESTREL_RELEASE_CACHE_DIR": str(blocked)}
        cold_fig = _figure("kestrel-release --help, no help cache", [str(tool), "--help"], runs, cold_env)
    twine_fig = _figure("twine --help", [str(twine), "--help"], runs, env)
    section = Section("Start-up", figures=[help_fig, verify_fig, cold_fig, twine_fig])
    section.comparisons.append(
        Comparison("--help without the help cache vs twine --help", cold_fig, twine_fig, max_ratio=1.0)
    )
    for fig in (help_fig, verify_fig):
        section.comparisons.append(
            Comparison(f"{fig.name} vs twine --help", fig, twine_fig, max_ratio=MAX_RATIO, max_seconds=MAX_SECONDS)
        )
    section.notes.append(f"{runs} fresh processes each after one warm-up run; entry points from {VENV_BIN}.")
    return section
