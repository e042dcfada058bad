"""Two runs on one project at once: the second refuses with one clear line, outputs never mix."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests import factories
from tests.helpers import ROOT, assert_one_line_error, run_cli
from tests.reliability.conftest import FAST, local_wheels, sha256s

HOLD = """
import sys, time
from pathlib import Path
from kestrel_release.files import fsutil
with fsutil.project_lock(Path(sys.argv[1]), "build"):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(project: Path, seconds: float = 30) -> subprocess.Popen:
    """Another kestrel-release holding the project lock (as a long build would)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(project), str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.parametrize(
    "command", [["build", "--no-gpu-check"], ["version", "bump", "patch"]], ids=["build", "version"]
)
def test_second_run_refuses_while_the_project_is_locked(tmp_path: Path, command: list[str]) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    holder = _holder(project)
    try:
        result = run_cli([*command, "--project", str(project)], timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert_one_line_error(result, 2, "another kestrel-release", "is running")
    after = {p: p.read_bytes() for p in project.rglob("*") if p.is_file() and p.name != ".kestrel-release.lock"}
    assert after == {p: d for p, d in before.items() if p.name != ".kestrel-release.lock"}
    assert not (project / "dist-all").exists()


@pytest.mark.slow
def test_two_builds_at_once_never_interleave(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    args = [sys.executable, "-m", "kestrel_release", "build", "--project", str(project), "--no-gpu-check"]
    procs = [
        subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    results = [(p.wait(300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    # Either the second waited its turn and both succeeded, or it refused with one clear line.
    assert codes in ([0, 0], [0, 2]), results
    for code, err in results:
        if code == 2:
            assert "another kestrel-release" in err and "is running" in err and "Traceback" not in err
    wheels = sha256s((project / "dist-all").glob("*.whl"))
    assert len(wheels) == 1
    sums = (project / "dist-all" / "SHA256SUMS").read_text().split()
    assert sums == [next(iter(wheels.values())), next(iter(wheels))]


def test_second_publish_refuses_while_one_is_running(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index") as box:
        holder = _holder(dist_project)
        try:
            result = run_cli(
                [
                    "publish",
                    "--project",
                    str(dist_project),
                    "--target",
                    "sandbox",
                    "--repository-url",
                    box.upload_url,
                    "--yes",
                ],
                env={"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST},
            )
        finally:
            holder.kill()
            holder.wait()
        assert_one_line_error(result, 2, "another kestrel-release")
        assert box.files() == []


def test_two_publishes_at_once_end_with_exactly_the_intended_files(dist_project: Path, tmp_path: Path) -> None:
    """Whatever the locking, two racing publishes must not corrupt the index or the manifest."""
    import json
    import os

    with PypiSandbox(directory=tmp_path / "index") as box:
        env = {
            **os.environ,
            "TWINE_USERNAME": box.username,
            "TWINE_PASSWORD": box.password,
            **FAST,
            "TWINE_NON_INTERACTIVE": "1",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        }
        args = [
            sys.executable,
            "-m",
            "kestrel_release",
            "publish",
            "--project",
            str(dist_project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
        ]
        procs = [
            subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        results = [(p.wait(300), p.stderr.read()) for p in procs]
        assert all(code in (0, 2, 6) and "Traceback" not in err for code, err in results), results
        assert 0 in [code for code, _ in results], results
        assert sha256s(p for p in box.directory.iterdir() if p.is_file()) == local_wheels(dist_project)
        json.loads((dist_project / "dist-all" / "release-manifest.json").read_text())  # still valid JSON
        time.sleep(0)
