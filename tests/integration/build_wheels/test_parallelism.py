"""Compiles fitted to the machine (stages/build_wheels/fit.py) and the plan's forecast (stages/build_wheels/history.py):
what a user sees before a real build starts, and what the build leaves for the next one."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from kestrel_release.ui.sizes import size
from tests import factories
from tests.helpers import run_cli

pytestmark = pytest.mark.slow
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
HUGE = 64 * 2**40  # bytes: more than any machine running this has free


def _build(project: Path, tmp_path: Path, **extra: str) -> str:
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1700000000", **extra}
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=env, timeout=600)
    assert result.code == 0, result.output
    return result.stderr


def test_the_plan_fits_memory_says_when_it_may_not_and_forecasts_from_the_last_build(tmp_path: Path) -> None:
    project = factories.make_kernel_ext_project(tmp_path / "p", pythons=(PY,))
    # A first build: no forecast, and a compile counted at more than any machine has free: one warning line.
    first = _build(project, tmp_path, KESTREL_RELEASE_BUILD_MEMORY_PER_JOB=f"{HUGE // 2**30}GiB")
    assert re.search(rf"parallelism: 1 Python build at once, 1 compile each \(\d+ cores, .* free, {size(HUGE)}", first)
    assert "forecast: none yet (no build of this project measured on this machine" in first
    (warning,) = [line for line in first.splitlines() if "may run out of memory" in line]
    assert f"one compile took {size(HUGE)} (build.memory_per_job)" in warning
    # What it measured is kept in the project's state dir ...
    (record,) = (tmp_path / "cache" / "projects").glob("*/build-history.json")
    row = json.loads(record.read_text())["pythons"][PY]
    assert row["wall_s"] > 0 and row["peak_rss"] >= row["peak_compile"] > 0
    # ... and the next build (a .py edit: the wheel cache misses) forecasts from it and counts its compiles at it.
    (project / "src" / "mini_ext" / "__init__.py").write_text('__version__ = "0.1.0"\n# edited\n')
    second = _build(project, tmp_path)
    assert re.search(r"forecast: about \d+ s, [\d.]+ MiB peak \(the last build here\)", second)
    assert "per compile: measured in the last build)" in second and "may run out of memory" not in second
