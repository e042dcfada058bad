"""SIGTERM while a command waits for its worker threads: it ends at once with exit 130, one line, no traceback.

The worker is made to hang (a wrapper replaces verify's per-wheel read with a 120 s sleep after sending SIGTERM to
its own process), so the signal lands exactly while the main thread waits on the pool, on a busy machine too.
Before pools.py, `with ThreadPoolExecutor()` waited for that worker: the process ended 120 s later.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.factories import write_wheel
from tests.reliability import killpoints

_WRAPPER = r"""
import os, runpy, signal, sys, time
import kestrel_release.stages.verify as verify

def hang(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(120)

verify._verify_one = hang
sys.argv = ["kestrel-release", *sys.argv[1:]]
runpy.run_module("kestrel_release", run_name="__main__", alter_sys=True)
"""


def test_sigterm_while_verify_waits_for_a_worker_ends_it_at_once(tmp_path: Path) -> None:
    wheels = [write_wheel(tmp_path / "dist", version=v) for v in ("0.1.0", "0.2.0")]
    env = killpoints.env({"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")})
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, "verify", *map(str, wheels)],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _out, err = proc.communicate(timeout=300)
    took = time.monotonic() - started
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: interrupted; nothing was left half-written"
    ]
    assert took < 60, took  # start-up included, on a busy machine; the hung worker alone takes 120 s
