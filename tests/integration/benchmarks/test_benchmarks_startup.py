"""The start-up benchmark end to end: real processes, a real results file (about 10-30 s)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def test_startup_benchmark_end_to_end(tmp_path):
    out = tmp_path / "R.md"
    argv = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--only", "startup", "--out", str(out)]
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    for needle in (
        "| kestrel-release --help |",
        "| kestrel-release verify --help |",
        "| twine --help |",
        "| load before |",
        "## Analysis",
    ):
        assert needle in text
    assert "kestrel-release --help vs twine --help" in proc.stdout
