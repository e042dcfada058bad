"""A run killed with SIGKILL runs no cleanup: the next run that makes such dirs collects what it left.

Killed for real (SIGKILL to a child CLI), then run again as a user would:
- `assemble` killed mid-copy leaves `.kestrel-staging-<pid>-*` (a full copy of the wheels) beside --out;
- a `release --rehearse` killed once its stand-in indexes are up leaves `kestrel-pypi-<pid>-*` (their
  htpasswd) in the temp dir;
- `sandbox pypi` killed while serving leaves both its `kestrel-pypi-*` dir and its session dir (with the
  `password` file) under the cache dir.

Before: nothing collected any of them; a second run left the first's debris (secrets included) forever.
After: every such dir names its owner (pid, start time, boot id) and the next run removes those whose
owner is dead; a live run's dirs and the user's files are never touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import ROOT, run_cli
from tests.reliability import killpoints


def _debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(("kestrel-", ".kestrel-")))


def _wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"never saw {what} (exit {proc.returncode}):\n{out}{err}")
        time.sleep(0.05)


# --- assemble ------------------------------------------------------------------------------------


def _machine(root: Path, python: str) -> Path:
    out = root / f"machine-{python}"
    factories.make_dist(out, pythons=(python,), payload_size=64 * 1024)
    return out


def test_assemble_killed_mid_copy_leaves_a_staging_copy_the_next_assemble_collects(tmp_path: Path) -> None:
    project = factories.make_project(tmp_path / "kernels")
    inputs = [str(_machine(tmp_path, py)) for py in ("3.12", "3.13")]
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "notes.txt").write_text("the user's\n")

    def assemble(out: str) -> list[str]:
        return ["assemble", *inputs, "--out", str(releases / out), "--project", str(project)]

    total = killpoints.count_ops(assemble("r1"), tmp_path)
    killpoints.run_killed_at(total // 2, assemble("r2"))
    left = _debris(releases)
    assert len(left) == 1 and left[0].startswith(".kestrel-staging-"), left  # the kill landed while it staged
    assert any(p.suffix == ".whl" for p in (releases / left[0]).rglob("*")), "the killed run had copied a wheel"
    again = run_cli(assemble("r2"))
    assert again.code == 0, again.output
    assert _debris(releases) == [], _debris(releases)
    assert sorted(p.name for p in releases.iterdir()) == ["notes.txt", "r1", "r2"]
    assert len(list((releases / "r2").glob("*.whl"))) == 2


# --- sandbox pypi: its state dir and its session dir (password file) -------------------------------


def _sandbox(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "sandbox", "pypi"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sandbox_pypi_killed_leaves_its_password_and_htpasswd_the_next_sandbox_collects(tmp_path: Path) -> None:
    temp, cache = tmp_path / "tmp", tmp_path / "cache"
    temp.mkdir()
    env = killpoints.env({"TMPDIR": str(temp), "KESTREL_RELEASE_CACHE_DIR": str(cache)})
    sessions = cache / "sessions"
    first = _sandbox(env)
    _wait_for(lambda: any(sessions.glob("*/password")), first, "the password file")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    assert [p.name for p in sessions.glob("*/password")] == ["password"]
    assert [p.name for p in temp.glob("kestrel-pypi-*/htpasswd")] == ["htpasswd"]
    assert killpoints.wait_gone(str(temp)) == []  # its pypiserver died with it
    (temp / "kestrel-pypi-notes").mkdir()  # a user's dir of a similar name: never touched

    killed = [*sessions.iterdir(), *temp.glob("kestrel-pypi-*-*")]

    second = _sandbox(env)
    _wait_for(lambda: any(p.parent not in killed for p in sessions.glob("*/password")), second, "a new session")
    assert not any(p.exists() for p in killed), killed  # collected before the new ones were made
    second.send_signal(signal.SIGTERM)
    _, err = second.communicate(timeout=30)
    assert second.returncode == 0, err
    assert list(sessions.iterdir()) == []
    assert _debris(temp) == ["kestrel-pypi-notes"]


# --- a rehearsal's stand-in indexes -----------------------------------------------------------------


@pytest.mark.slow
def test_rehearsal_killed_with_its_stand_ins_up_then_the_next_rehearsal_collects_them(tmp_path: Path) -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter running the tests
    project = factories.make_c_ext_project(tmp_path / "p", pythons=(python,))
    temp = tmp_path / "tmp"
    temp.mkdir()
    extra = {"TMPDIR": str(temp), "SOURCE_DATE_EPOCH": "1700000000", "KESTREL_RELEASE_GITHUB_REPO": "m87-labs/mini-ext"}
    args = ["release", "--rehearse", "--yes", "--targets", "github", "--no-gpu-check", "--project", str(project)]
    first = killpoints.start(args, extra)
    # Once the last stand-in is announced, every server is up and watched (killed with the tool).
    _wait_for(lambda: "stand-in github" in first.stderr.readline(), first, "the stand-ins announced")
    assert len(list(temp.glob("kestrel-pypi-*/htpasswd"))) == 2
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    # The two stand-ins' dirs; the run may also have got as far as its GitHub scratch dir before the kill landed.
    debris = _debris(temp)
    assert len([d for d in debris if d.startswith("kestrel-pypi-")]) == 2, debris
    assert all(d.startswith(("kestrel-pypi-", "kestrel-gh-")) for d in debris), debris
    assert killpoints.wait_gone(str(project)) == []

    again = run_cli([*args, "--json"], env=extra, timeout=600)
    assert again.code == 0, again.output
    assert json.loads(again.stdout)["ok"] is True
    assert _debris(temp) == [], _debris(temp)
    assert not any(name.startswith("kestrel-") for name in os.listdir(temp))
