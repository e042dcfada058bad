"""The size plan on real cubins (tests/data/cuda/release) in factory wheels: each limit with its numbers,
and each lever measured on the wheels (dropping an arch, merging identical payload) or estimated (compression)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.adapters import fatbinary
from kestrel_release.stages.build_wheels import size_plan, size_plan_text
from tests.factories import make_wheel

CUDA = Path(__file__).resolve().parents[3] / "data" / "cuda" / "release"
PKG = "kestrel_kernels"
SM90 = (CUDA / "cu130-sm90a.cubin").read_bytes()
SM100 = (CUDA / "cu130-sm100a.cubin").read_bytes()


@pytest.fixture(autouse=True)
def _no_toolkit(monkeypatch):
    """No CUDA toolkit: the compression lever is the zstd estimate (tests/integration/build_wheels/test_size_plan_repack.py
    measures it with the toolkit's fatbinary)."""
    monkeypatch.setattr(fatbinary, "find", lambda: None)


def _wheels(tmp_path: Path, pythons=("312", "313")) -> list[Path]:
    files = {f"{PKG}/__init__.py": b"", f"{PKG}/cubins/k_sm90a.cubin": SM90, f"{PKG}/cubins/k_sm100a.cubin": SM100}
    return [
        make_wheel(
            tmp_path, {**files, f"{PKG}/_ops.cpython-{py}.txt": py.encode()}, tag=f"cp{py}-cp{py}-manylinux_2_28_x86_64"
        )
        for py in pythons
    ]


def _limits(file_limit: int = 100 * 2**20, project: int = 10 * 2**30) -> list[size_plan.Limit]:
    return size_plan.limits_for(file_limit, project)


def test_a_release_within_its_limits_fits_and_lists_each_lever(tmp_path):
    wheels = _wheels(tmp_path)
    plan = size_plan.plan(wheels, _limits())
    assert plan.fits and plan.over() == []
    assert plan.total == sum(w.stat().st_size for w in wheels)
    kinds = [(lv.kind, lv.basis) for lv in plan.levers]
    assert kinds == [
        ("drop-arch", "measured"),
        ("drop-arch", "measured"),
        ("merge-identical", "measured"),
        ("compress-size", "estimated"),
    ]
    names = {lv.name for lv in plan.levers}
    assert {"drop sm_90a (CUDA 13.0)", "drop sm_100a (CUDA 13.0)"} <= names
    assert plan.levers[-1].detail.startswith("no CUDA toolkit's fatbinary found: zstd level")


def test_dropping_an_arch_saves_its_share_of_every_wheel(tmp_path):
    plan = size_plan.plan(_wheels(tmp_path), _limits())
    drops = {lv.name: lv for lv in plan.levers if lv.kind == "drop-arch"}
    one = drops["drop sm_100a (CUDA 13.0)"]
    # Two wheels each carry the cubin: the release saves twice what the largest wheel does.
    assert 0 < one.file_saving < len(SM100) and one.release_saving == 2 * one.file_saving


def test_merging_identical_payload_saves_all_but_one_copy(tmp_path):
    wheels = _wheels(tmp_path, pythons=("311", "312", "313"))
    plan = size_plan.plan(wheels, _limits())
    (merge,) = [lv for lv in plan.levers if lv.kind == "merge-identical"]
    import zipfile

    with zipfile.ZipFile(wheels[0]) as zf:
        shared = sum(
            i.compress_size for i in zf.infolist() if "/cubins/" in i.filename or i.filename.endswith("__init__.py")
        )
    assert merge.release_saving == 2 * shared and merge.file_saving == 0
    assert "3 wheels" in merge.detail


def test_a_release_over_the_per_file_limit_says_by_how_much_and_which_lever_fits(tmp_path):
    wheels = _wheels(tmp_path)
    largest = max(w.stat().st_size for w in wheels)
    plan = size_plan.plan(wheels, _limits(file_limit=largest - 100))
    assert not plan.fits
    (over,) = plan.over()
    assert over.startswith(f"{wheels[0].name} is ") or over.startswith(f"{wheels[1].name} is ")
    assert "over the" in over and "per-file limit (verify.max_file_size)" in over and "(2 wheels are)" in over
    drop = next(lv for lv in plan.levers if lv.kind == "drop-arch")
    assert drop.fits  # an arch's share is far more than 100 bytes
    merge = next(lv for lv in plan.levers if lv.kind == "merge-identical")
    assert not merge.fits  # merging never shrinks the largest file
    text = size_plan_text.problem(plan)
    assert text.startswith("the release does not fit: ") and "[measured]" in text and "[estimated]" in text


def test_a_release_over_the_project_limit(tmp_path):
    wheels = _wheels(tmp_path)
    total = sum(w.stat().st_size for w in wheels)
    plan = size_plan.plan(wheels, _limits(project=total - 1))
    assert plan.over() == [
        f"the release is {size_plan_text.sizes.size(total)} in 2 files, over the "
        f"{size_plan_text.sizes.size(total - 1)} project limit (verify.project_size_budget)"
    ]
    assert next(lv for lv in plan.levers if lv.kind == "merge-identical").fits


def test_the_markdown_has_the_limits_and_levers(tmp_path):
    plan = size_plan.plan(_wheels(tmp_path), _limits())
    md = size_plan_text.markdown(plan)
    assert md.startswith("### kestrel-release size plan: fits")
    assert "| GitHub release asset limit | 2.0 GiB |" in md
    assert "| nvcc --compress-mode=size |" in md and "| estimated |" in md


def test_a_wheel_without_cuda_has_no_arch_or_compress_lever(tmp_path):
    wheel = make_wheel(tmp_path)
    plan = size_plan.plan([wheel], _limits())
    assert plan.fits and plan.levers == []


def test_rejudged_against_a_release_targets_limits_without_reading_again(tmp_path):
    wheels = _wheels(tmp_path)
    measured = size_plan.plan(wheels, _limits())
    largest = max(w.stat().st_size for w in wheels)
    github_only = [size_plan.Limit("GitHub release asset limit", largest - 1, "file")]
    again = size_plan.rejudge(measured, github_only)
    assert measured.fits and not again.fits
    assert [lv.fits for lv in again.levers if lv.kind == "drop-arch"] == [True, True]
    assert all(lv.fits for lv in measured.levers)  # the measured plan is left as it was
