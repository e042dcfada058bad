"""Writing the version: tomlkit round-trip, version_files, all-or-nothing, dry run, lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.errors import UsageError
from kestrel_release.stages import version
from tests.factories import make_version_project, version_snapshot


@pytest.fixture
def cfg(tmp_path: Path):
    return config.load(make_version_project(tmp_path), env={})


def test_second_run_refused_while_locked(cfg) -> None:
    before = version_snapshot(cfg.project_dir)
    holder = subprocess.Popen(  # another process holds the project lock
        [
            sys.executable,
            "-c",
            "import sys; from kestrel_release.files import fsutil\n"
            "with fsutil.project_lock(sys.argv[1], 'release'):\n print('held', flush=True); sys.stdin.read()",
            str(cfg.project_dir),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(UsageError, match=r"another kestrel-release release is running on .* \(pid [0-9]+\)"):
            version.change(cfg, "bump", "patch")
    finally:
        holder.communicate("")
    assert version_snapshot(cfg.project_dir) == before
