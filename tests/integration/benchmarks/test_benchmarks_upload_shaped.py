"""The shaped-link upload benchmark in quick mode, as a user runs it, and the link's shaping itself."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from benchmarks.shaped_link import ShapedLink
from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.helpers import ROOT


def test_quick_run_prints_a_results_line_per_claim():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_upload_shaped.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    shaped = [ln for ln in lines if ln.startswith("result: publish vs twine upload, shaped link: ")]
    rerun = [ln for ln in lines if ln.startswith("result: publish re-run, shaped link (all identical): ")]
    assert len(shaped) == 1 and "ratio" in shaped[0] and shaped[0].endswith(("met", "MISSED"))
    assert len(rerun) == 1 and "(target <= 5 s)" in rerun[0]
    assert any(ln.startswith("4 wheels x 1 MiB") for ln in lines)
    assert "sbx-" not in done.stdout + done.stderr  # the sandbox password never reaches the output


def test_the_link_holds_a_connection_to_its_rate():
    body = b" " * 600_000  # JSON whitespace: the control endpoint parses it
    with (
        PypiSandbox(strict=True) as box,
        ShapedLink(("127.0.0.1", box.port), rate=1.5e6, aggregate=12e6, rtt=0.04) as link,
    ):
        start = time.monotonic()
        request = urllib.request.Request(
            link.url + "/_sandbox/faults",
            data=b"{}" + body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200
        elapsed = time.monotonic() - start
    # 600 kB at 1.5 MB/s cannot pass in less than 0.4 s, however fast the machine (a lower bound only)
    assert elapsed >= 0.35, elapsed
