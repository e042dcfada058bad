"""The publish benchmark against real sandboxes with the real built wheels (slow: needs a build)."""

from __future__ import annotations

import shutil

import pytest

from benchmarks import bench_publish
from benchmarks.common import NotAvailable

pytestmark = pytest.mark.slow


def test_publish_benchmark_times_tool_rerun_and_twine(built_wheels, tmp_path):
    wheels = shutil.copytree(built_wheels, tmp_path / "wheels")
    section = bench_publish.run(True, wheels, tmp_path / "publish.log")
    assert [len(f.samples) for f in section.figures] == [2, 2, 2]
    assert all(s > 0 for f in section.figures for s in f.samples)
    assert [c.claim for c in section.comparisons] == ["publish vs twine upload", "publish re-run (all identical)"]
    log = (tmp_path / "publish.log").read_text()
    assert "4 skipped" in log  # the re-run really found every file identical
    assert "TWINE_PASSWORD" not in log and "sbx-" not in log  # the sandbox password never reaches the log


def test_publish_benchmark_without_wheels_is_not_available(tmp_path):
    with pytest.raises(NotAvailable, match="no wheels from the build benchmark"):
        bench_publish.run(True, tmp_path, tmp_path / "publish.log")
