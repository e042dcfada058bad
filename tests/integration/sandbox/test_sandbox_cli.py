"""`kestrel-release sandbox github` as a user runs it: it serves, then stops cleanly on SIGTERM.

(`sandbox pypi` is covered in test_sandbox_pypi.py.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.helpers import ROOT


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_url(proc: subprocess.Popen, pattern: str) -> str:
    deadline = time.monotonic() + 60
    seen = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen += line
        match = re.search(pattern, line)
        if match:
            return match.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"no URL announced: {seen}")


def test_sandbox_github_serves_and_stops_on_sigterm() -> None:
    proc = _start(["sandbox", "github", "--repo", "acme/kernels"])
    api = _wait_for_url(proc, r"at (http://127\.0\.0\.1:\d+/api/v3)")
    request = urllib.request.Request(api + "/repos/acme/kernels", headers={"Authorization": "token wrong"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped" in err and "error:" not in err and "Traceback" not in err
