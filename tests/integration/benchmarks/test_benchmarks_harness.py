"""The benchmark harness's own logic: statistics, claims, timing, the nvcc counter, the project copy."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmarks import bench_build, report
from benchmarks.common import BenchFailed, Comparison, Figure, Section, timed


def test_timed_returns_seconds_and_fails_with_the_error_line(tmp_path):
    assert timed([sys.executable, "-c", "pass"]) > 0
    with pytest.raises(BenchFailed, match="step exited 3: error: disk on fire"):
        timed(
            [sys.executable, "-c", "import sys; print('noise'); print('error: disk on fire'); sys.exit(3)"],
            what="step",
            log=tmp_path / "log",
        )
    assert "disk on fire" in (tmp_path / "log").read_text()


def test_nvcc_wrapper_counts_calls_and_runs_the_real_compiler(tmp_path):
    real = tmp_path / "real-nvcc"
    real.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/seen\nexit 7\n')
    real.chmod(0o755)
    log = tmp_path / "calls.log"
    wrapper = bench_build.write_nvcc_wrapper(tmp_path / "bin", real, log)
    bench = bench_build.Workbench(tmp_path, tmp_path, log, {}, {}, "", (), tmp_path, tmp_path / "l")
    assert subprocess.run([str(wrapper), "-cubin", "a b.cu"], check=False).returncode == 7  # exit code passes through
    assert (tmp_path / "seen").read_text().strip() == "-cubin a b.cu"
    subprocess.run([str(wrapper), "--version"], check=False)
    assert bench.nvcc_calls() == (2, 1)
    assert bench.nvcc_calls() == (0, 0)  # reading resets


def _sections() -> list[Section]:
    fast = Figure("tool", [1.0, 2.0, 3.0], {"nvcc": [0, 0, 0], "nvcc_compiles": [0, 0, 0]})
    slow = Figure("loop", [10.0, 11.0, 12.0])
    return [
        Section(
            "Build matrix",
            figures=[fast, slow],
            notes=["a note"],
            comparisons=[Comparison("tool vs loop", fast, slow, max_ratio=0.1)],
        ),
        Section("Verify", unavailable="bench_verify.py does not exist yet"),
    ]


def test_markdown_holds_claims_figures_and_keeps_the_analysis(tmp_path):
    meta = {
        "date": "2026-01-01 00:00 UTC",
        "mode": "full",
        "duration": "1.0 min",
        "load before": "0.1 0.2 0.3",
        "load after": "0.4 0.5 0.6",
    }
    path = tmp_path / "RESULTS.md"
    path.write_text("# old\n\n## Analysis\n\nWhy the build missed.\n")
    text = report.markdown(_sections(), meta, report.kept_analysis(path))
    assert (
        "| tool vs loop | 2.00 s (min 1.00 s, max 3.00 s, n=3) | 11.00 s (min 10.00 s, max 12.00 s, n=3) "
        "| 0.18x (min 0.10, max 0.25) | <= 0.1x | MISSED |" in text
    )
    assert "| tool | 2.00 s | 1.00 s | 3.00 s | 3 | 0 (0), 0 (0), 0 (0) |" in text
    assert "Not available: bench_verify.py does not exist yet" in text
    assert "| load before | 0.1 0.2 0.3 |" in text
    assert text.endswith("## Analysis\n\nWhy the build missed.\n")
