"""The build benchmark's plumbing on the real kernels/: the nvcc counter sees the real compiles.

Slow (two real builds of four wheels): it proves a cold build is counted and a
warm one (one Python file edited) runs no nvcc compile, which the report relies on.
"""

from __future__ import annotations

import pytest

from benchmarks import bench_build
from tests.helpers import kernels_pythons, need_pythons

pytestmark = pytest.mark.slow


def test_cold_build_counts_nvcc_and_warm_build_compiles_nothing(tmp_path):
    need_pythons(*kernels_pythons())  # it builds every configured Python
    bench = bench_build.prepare(tmp_path)
    assert not bench.outputs.exists()  # the copy starts cold
    assert (bench.project / ".git").is_dir()
    out = tmp_path / "out"

    bench.nvcc_calls()
    assert bench_build.tool_build(bench, out) > 0
    calls, compiles = bench.nvcc_calls()
    cubins = sorted(p for p in bench.outputs.rglob("*") if p.suffix in (".cubin", ".fatbin"))
    assert compiles == len(cubins) > 0 and calls >= compiles
    assert len(sorted(out.glob("*.whl"))) == len(bench.pythons)

    bench_build.touch_python(bench.project, 1)
    bench_build.tool_build(bench, out)
    assert bench.nvcc_calls()[1] == 0
