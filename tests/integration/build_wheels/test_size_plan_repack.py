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


def _counting(monkeypatch) -> list[str]:
    """Each fatbinary re-pack the plan runs, by the executable that ran it."""
    calls: list[str] = []
    real = fatbinary.compressed_size

    def counted(exe: str, images: list[tuple[str, bytes]]) -> int:
        calls.append(exe)
        return real(exe, images)

    monkeypatch.setattr(fatbinary, "compressed_size", counted)
    return calls


def test_a_second_plan_of_the_same_binaries_repacks_nothing_and_says_the_same(
    exe: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    calls = _counting(monkeypatch)
    wheels = _wheels(tmp_path / "w")
    first = size_plan.plan(wheels, _limits())
    # Two wheels with the same two cubins: two re-packs (the second wheel's members are the same bytes).
    assert len(calls) == 2
    again = size_plan.plan(wheels, _limits())
    assert len(calls) == 2  # every answer from the cache
    assert [vars(lv) for lv in again.levers] == [vars(lv) for lv in first.levers]
    # A damaged entry is measured again (and right), never trusted.
    for entry in (tmp_path / "cache" / "size-repack").rglob("*.json"):
        entry.write_text('{"size": "lots"}')
    third = size_plan.plan(wheels, _limits())
    assert len(calls) == 4
    assert [vars(lv) for lv in third.levers] == [vars(lv) for lv in first.levers]


def test_another_fatbinary_is_never_served_the_answers_of_the_first(exe: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    calls = _counting(monkeypatch)
    wheels = _wheels(tmp_path / "w")
    size_plan.plan(wheels, _limits())
    other = tmp_path / "bin" / "fatbinary"  # other bytes (a wrapper): another toolkit, as far as the cache knows
    other.parent.mkdir()
    other.write_text(f'#!/bin/sh\nexec "{exe}" "$@"\n')
    other.chmod(0o755)
    monkeypatch.setattr(fatbinary, "find", lambda: str(other))
    size_plan.plan(wheels, _limits())
    assert calls == [exe] * 2 + [str(other)] * 2
