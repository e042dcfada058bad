"""The benchmark harness's own logic: statistics, claims, timing, the nvcc counter, the project copy."""

from __future__ import annotations

import pytest

from benchmarks import bench_build, report
from benchmarks.common import Comparison, Figure, Section


def test_figure_reports_median_min_max():
    fig = Figure("x", [3.0, 1.0, 10.0])
    assert (fig.median, fig.low, fig.high) == (3.0, 1.0, 10.0)
    assert fig.to_json()["n"] == 3


@pytest.mark.parametrize(
    ("subject", "baseline", "max_ratio", "max_seconds", "met"),
    [
        ([6.0], [10.0], 0.6, None, True),
        ([6.1], [10.0], 0.6, None, False),
        ([0.2], [0.5], 1.0, 0.25, True),
        ([0.3], [0.5], 1.0, 0.25, False),  # ratio fine, absolute bound missed
        ([1.9], None, None, 2.0, True),
    ],
)
def test_comparison_meets_its_targets(subject, baseline, max_ratio, max_seconds, met):
    base = Figure("b", baseline) if baseline else None
    c = Comparison("c", Figure("s", subject), base, max_ratio=max_ratio, max_seconds=max_seconds)
    assert c.met is met
    assert report.verdict(c) == ("met" if met else "MISSED")


def test_comparison_without_target_is_information_only():
    c = Comparison("c", Figure("s", [2.0]), Figure("b", [4.0]))
    assert c.ratio == 0.5 and report.verdict(c) == "info"


def test_copy_project_leaves_outputs_and_build_dirs_behind(tmp_path):
    src = tmp_path / "src"
    for rel in (
        "pyproject.toml",
        "python/pkg/__init__.py",
        "python/pkg/precompiled/a.cubin",
        "dist/x.whl",
        "build/obj.o",
        "python/pkg/__pycache__/m.pyc",
        "csrc/k.cuh",
    ):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    dst = bench_build.copy_project(src, tmp_path / "dst", "python/pkg/precompiled")
    copied = sorted(p.relative_to(dst).as_posix() for p in dst.rglob("*"))
    assert copied == ["csrc", "csrc/k.cuh", "pyproject.toml", "python", "python/pkg", "python/pkg/__init__.py"]


def test_touch_changes_one_python_file(tmp_path):
    target = tmp_path / bench_build.TOUCHED
    target.parent.mkdir(parents=True)
    target.write_text('__version__ = "0.1.0"\n')
    bench_build.touch_python(tmp_path, 1)
    assert target.read_text() == '__version__ = "0.1.0"\n# benchmark edit 1\n'


def _sections() -> list[Section]:
    fast = Figure("tool", [1.0, 2.0, 3.0], {"nvcc": [0, 0, 0], "nvcc_compiles": [0, 0, 0]})
    slow = Figure("loop", [10.0, 11.0, 12.0])
    return [
        Section(
            "Build matrix",
            figures=[fast, slow],
            notes=["a note"],
            comparisons=[Comparison("tool vs loop", fast, slow, max_ratio=0.1)],
        ),
        Section("Verify", unavailable="bench_verify.py does not exist yet"),
    ]


def test_terminal_table_lists_each_claim():
    lines = report.table(_sections()).splitlines()
    assert lines[0].split() == ["claim", "kestrel-release", "baseline", "ratio", "target", "result"]
    assert lines[2].split()[-1] == "MISSED" and "0.18x" in lines[2]
    assert "not available: bench_verify.py does not exist yet" in lines[3]


def test_verify_adapter_maps_timings_by_command_name():
    from benchmarks import verify_adapter

    section = verify_adapter.to_section(
        {
            "wheel_mb": 250,
            "kestrel-release verify": [3.0, 2.0, 4.0],
            "sha256sum": {"samples": [2.0, 2.0, 2.0]},
            "check-wheel-contents": [5.0, 5.0, 5.0],
            "twine check --strict": [1.0, 2.0, 3.0],
        }
    )
    floor, peers = section.comparisons
    assert (floor.ratio, floor.met) == (1.5, True)
    assert peers.baseline.samples == [6.0, 7.0, 8.0] and peers.met
    assert "wheel_mb: 250" in section.notes


def test_verify_adapter_refuses_a_result_without_the_floor():
    from benchmarks import verify_adapter
    from benchmarks.common import NotAvailable

    with pytest.raises(NotAvailable, match="no timing for sha256sum"):
        verify_adapter.to_section({"verify": [1.0], "twine": [1.0], "check_wheel_contents": [1.0]})


def test_verify_adapter_takes_a_combined_peers_entry_as_given():
    from benchmarks import verify_adapter

    section = verify_adapter.to_section(
        {
            "verify": {"median": 2.0, "min": 1.0, "max": 3.0},
            "sha256sum": [1.0],
            "check-wheel-contents + twine check": [1.5],
        }
    )
    assert section.comparisons[1].baseline.samples == [1.5]
    assert section.comparisons[1].met is False


def test_verify_adapter_reads_bench_verify_result_shape():
    from benchmarks import verify_adapter

    result = {
        "quick": True,
        "wheels": 4,
        "wheel_bytes": [40e6] * 4,
        "total_bytes": 160_000_000,
        "rounds": 2,
        "samples": {
            "verify": [1.0, 1.2],
            "sha256sum": [1.0, 1.0],
            "check_wheel_contents": [3.0, 3.0],
            "twine_check": [1.0, 2.0],
        },
        "median": {"verify": 1.1},
        "peers_median": 4.5,
        "ratio_to_sha256sum": 1.1,
        "ratio_to_peers": 0.2,
        "floor_target": 1.5,
        "met_floor": True,
        "met_peers": True,
    }
    section = verify_adapter.to_section(result)
    assert [f.name for f in section.figures] == [
        "kestrel-release verify",
        "sha256sum (floor)",
        "check-wheel-contents",
        "twine check --strict",
        "check-wheel-contents + twine check --strict",
    ]
    assert section.comparisons[1].baseline.samples == [4.0, 5.0]
    assert "4 wheels, 160 MB in all (40, 40, 40, 40 MB)." in section.notes
    assert "rounds: 2" in section.notes and not any(n.startswith("median") for n in section.notes)


def test_verify_adapter_flags_wheels_far_below_the_asked_size():
    from benchmarks import verify_adapter

    result = {
        "wheel_bytes": [228_314] * 4,
        "total_bytes": 913_256,
        "wheels": 4,
        "samples": {"verify": [1.0], "sha256sum": [1.0], "check_wheel_contents": [1.0], "twine_check": [1.0]},
    }
    section = verify_adapter.to_section(result, expected_wheel_bytes=40_000_000)
    assert section.notes[0].startswith("WARNING: wheels are 0.2 MB, not ~40 MB")
    assert all(c.claim.endswith("[UNDERSIZED WHEELS]") for c in section.comparisons)
    result["wheel_bytes"] = [39_000_000] * 4
    assert not verify_adapter.to_section(result, expected_wheel_bytes=40_000_000).notes[0].startswith("WARNING")


def test_a_ratio_is_taken_per_round_and_shown_with_its_spread():
    # Round 2 ran under load on both sides: per-round ratios stay 0.5; medians over medians would not.
    c = Comparison("c", Figure("s", [1.0, 10.0, 1.2]), Figure("b", [2.0, 20.0, 2.4]), max_ratio=0.5)
    assert c.ratios == [0.5, 0.5, 0.5] and c.ratio == 0.5 and c.met
    assert report.fmt_ratio(c) == "0.50x (min 0.50, max 0.50)"
    unpaired = Comparison("c", Figure("s", [1.0, 3.0]), Figure("b", [4.0]))
    assert unpaired.ratios == [] and unpaired.ratio == 0.5 and report.fmt_ratio(unpaired) == "0.50x"


def test_verify_real_runs_the_tool_where_no_project_is_found(tmp_path, monkeypatch):
    """The benchmark measures standalone verify: run from the repository root, the tool would find kernels/
    and verify the real wheel against that project's rules (another command, 200 findings to render)."""
    from benchmarks import bench_verify_real
    from kestrel_release.config_loader.load import discover_project

    wheel = tmp_path / "w-1.0-py3-none-any.whl"
    wheel.write_bytes(b"x" * 10)
    seen = []

    def fake_wall(argv, env, cwd=None):
        if "verify" in [str(a) for a in argv]:
            seen.append(discover_project(cwd))
        return 1.0

    monkeypatch.chdir(bench_verify_real.READER.parent.parent)  # the repository root: kernels/ is found here
    assert discover_project() is not None
    monkeypatch.setattr(bench_verify_real, "_wall", fake_wall)
    bench_verify_real.run([wheel], rounds=1)
    assert seen == [None, None]
