"""The 25-wheel release benchmark in quick mode, as a user runs it: its result lines, not its times."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def test_quick_run_prints_figures_reads_and_a_result_per_claim():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_upload_scale.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for prefix in (
        "result: publish vs twine upload, 25 wheels: ",
        "result: publish re-run, 25 wheels (all identical): ",
        "result: peak RSS while uploading: ",
    ):
        found = [ln for ln in lines if ln.startswith(prefix)]
        assert len(found) == 1 and found[0].endswith(("met", "MISSED")), (prefix, done.stdout)
    assert any(ln.startswith("25 wheels x 0.0625 MiB") for ln in lines)
    assert any(ln.startswith("peak RSS of kestrel-release publish (MB): median ") for ln in lines)
    # the identical re-run reads the project's simple page once and sends nothing
    rerun = [ln for ln in lines if ln.startswith("index reads, re-run: ")]
    assert rerun == ["index reads, re-run: GET /simple/kestrel-kernels/ x1"], done.stdout
    assert "sbx-" not in done.stdout + done.stderr  # the sandbox password never reaches the output
