"""The size plan's nvcc --compress-mode=size lever measured with the CUDA toolkit's own fatbinary: each wheel's
uncompressed SASS re-packed with --compress-mode=size (the release's own cubins, tests/data/cuda/release)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from kestrel_release.adapters import fatbinary
from kestrel_release.stages.build_wheels import size_plan
from tests.unit.stages.build_wheels.test_size_plan import CUDA, _limits, _wheels


@pytest.fixture
def exe() -> str:
    found = fatbinary.find()
    if found is None:
        pytest.fail("fatbinary (the CUDA toolkit's) is not on PATH: install the CUDA toolkit (nvcc) here")
    return found


def _repacked(exe: str, tmp_path: Path, sm: str, cubin: Path) -> int:
    out = tmp_path / f"{sm}.fatbin"
    subprocess.run(
        [exe, f"--create={out}", "--compress-mode=size", f"--image3=kind=elf,sm={sm},file={cubin}"], check=True
    )
    return out.stat().st_size


def test_the_compression_lever_is_measured_with_fatbinary(exe: str, tmp_path: Path) -> None:
    wheels = _wheels(tmp_path / "w")
    plan = size_plan.plan(wheels, _limits())
    (lever,) = [lv for lv in plan.levers if lv.kind == "compress-size"]
    assert lever.basis == "measured"
    assert lever.detail.startswith("the SASS re-packed with fatbinary --compress-mode=size (release 13")
    # Each cubin member: its deflated bytes in the wheel against the fat binary fatbinary makes of it (a cubin
    # member is all image: nothing else of it is kept, deflate of nothing is 8 bytes).
    packed = {"90a": _repacked(exe, tmp_path, "90a", CUDA / "cu130-sm90a.cubin")}
    packed["100a"] = _repacked(exe, tmp_path, "100a", CUDA / "cu130-sm100a.cubin")
    with zipfile.ZipFile(wheels[0]) as zf:
        stored = {
            i.filename.rsplit("_sm", 1)[1][:-6]: i.compress_size for i in zf.infolist() if i.filename.endswith(".cubin")
        }
    assert lever.file_saving == sum(max(0, stored[sm] - (8 + packed[sm])) for sm in packed) > 0
    assert lever.release_saving == 2 * lever.file_saving


def test_without_the_toolkit_the_plan_says_it_estimated(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fatbinary, "find", lambda: None)
    (lever,) = [lv for lv in size_plan.plan(_wheels(tmp_path), _limits()).levers if lv.kind == "compress-size"]
    assert lever.basis == "estimated" and "no CUDA toolkit's fatbinary found" in lever.detail
