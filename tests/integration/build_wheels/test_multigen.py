"""The bundled kernels as one multi-generation wheel: built with CUDA 12.9 (NVRTC from PyPI) and 13.0 for
sm_80, sm_90a, sm_100f and sm_120f; verify proves the (toolkit, arch) matrix per wheel from the fat-binary
entries, reports the driver floor, and a wheel missing one pair is exit 5 naming it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.conftest import KERNELS
from tests.helpers import assert_one_line_error, run_cli

pytestmark = pytest.mark.slow
CELLS = {(c, a) for c in ("12.9", "13.0") for a in ("sm_80", "sm_90a", "sm_100f", "sm_120f")}


def _one_wheel(built_wheels: Path, tmp_path: Path) -> Path:
    wheel = sorted(built_wheels.glob("*cp312*.whl"))[0]
    out = tmp_path / "one"
    out.mkdir()
    (out / wheel.name).write_bytes(wheel.read_bytes())
    return out / wheel.name


def _verify(path: Path, *extra: str):
    return run_cli(["verify", str(path), "--project", str(KERNELS), "--python", "3.12", *extra])


def test_the_wheel_serves_every_toolkit_and_arch_and_names_its_driver_floor(built_wheels, tmp_path):
    wheel = _one_wheel(built_wheels, tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[2] for n in names if "/precompiled/cu" in n} == {"cu12.9", "cu13.0"}
    result = _verify(wheel.parent, "--json")
    assert result.code == 0, result.output
    [report] = json.loads(result.stdout)["wheels"]
    cells = {(c["cuda"], c["arch"]): c for c in report["coverage"]["matrix"]}
    assert set(cells) == CELLS and all(c["sass"] for c in cells.values())
    assert report["coverage"]["driver_floor"] == "580.65.06"  # CUDA 13 code: r580
    images = {(i["arch"], i["cuda"]) for b in report["cuda"] for i in b["entries"]}
    assert ("sm_100f", "12.9") in images and ("sm_120f", "13.0") in images  # the `f` from the entries
    human = _verify(wheel.parent)
    assert "CUDA 12.9: sm_80 ok, sm_90a ok, sm_100f ok, sm_120f ok" in human.stderr
    assert "needs NVIDIA driver >= 580.65.06" in human.stderr


def test_a_wheel_missing_one_pair_is_exit_5_naming_it(built_wheels, tmp_path):
    wheel = _one_wheel(built_wheels, tmp_path)
    gone = "/precompiled/cu12.9/sm_100f/"
    with zipfile.ZipFile(wheel) as src:
        members = {i.filename: src.read(i) for i in src.infolist() if gone not in i.filename}
    record = next(n for n in members if n.endswith(".dist-info/RECORD"))
    rows = [r for r in members[record].decode().splitlines() if gone not in r]
    members[record] = ("\n".join(rows) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data in members.items():
            dst.writestr(name, data)
    result = _verify(wheel.parent)
    assert_one_line_error(result, 5)
    assert "no binary carries CUDA 12.9 SASS that serves sm_100f" in result.stderr
