"""SIGTERM while a command waits for its worker threads: it ends at once with exit 130, one line, no traceback.

The worker is made to hang (a wrapper replaces verify's per-wheel read, or publish's upload, with a 120 s sleep that
SIGTERMs its own process after 1 s), so the signal lands while the main thread waits on the pool, on a busy machine
too. Before pools.py, the pools waited for that worker: the process ended 120 s later.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project, write_wheel
from tests.reliability import killpoints

_WRAPPER = r"""
import importlib, os, runpy, signal, sys, threading, time

def hang(*args, **kwargs):  # the signal a moment later: the main thread is then waiting for this worker
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    time.sleep(120)

module, _, name = sys.argv.pop(1).rpartition(".")
owner, _, attr = name.partition(":")
target = importlib.import_module(module)
setattr(getattr(target, owner) if attr else target, attr or owner, hang)
sys.argv = ["kestrel-release", *sys.argv[1:]]
runpy.run_module("kestrel_release", run_name="__main__", alter_sys=True)
"""


def _hung(where: str, args: list[str], cwd: Path, extra_env: dict[str, str]) -> tuple[int, str, float]:
    """Run the CLI with `where` (module.function, or module.Class:method) replaced by a 120 s hang that SIGTERMs the process after 1 s:
    (exit status, stderr, seconds from start to exit)."""
    env = killpoints.env({"KESTREL_RELEASE_CACHE_DIR": str(cwd / "cache"), **extra_env})
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRAPPER, where, *args],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _out, err = proc.communicate(timeout=300)
    return proc.returncode, err, time.monotonic() - started


def _interrupted(code: int, err: str, took: float) -> None:
    assert code == 130, err
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: interrupted; nothing was left half-written"
    ]
    assert took < 60, took  # start-up included, on a busy machine; the hung worker alone takes 120 s


def test_sigterm_while_verify_waits_for_a_worker_ends_it_at_once(tmp_path: Path) -> None:
    wheels = [write_wheel(tmp_path / "dist", version=v) for v in ("0.1.0", "0.2.0")]
    _interrupted(*_hung("kestrel_release.stages.verify._verify_one", ["verify", *map(str, wheels)], tmp_path, {}))


def test_sigterm_while_publish_uploads_ends_it_at_once(tmp_path: Path) -> None:
    """Before: the upload pool waited for the upload in flight (a slow index: up to the upload deadline)."""
    project = make_project(tmp_path / "kernels", pythons=("3.12", "3.13"))
    make_dist(project / "dist-all", pythons=("3.12", "3.13"))
    with PypiSandbox(directory=tmp_path / "index") as box:
        args = ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", box.upload_url]
        creds = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password}
        _interrupted(*_hung("kestrel_release.adapters.pypi.upload.Uploader:upload", [*args, "--yes"], tmp_path, creds))
        assert box.files() == []
