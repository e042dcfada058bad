"""The size forecast: each (toolkit, arch)'s share of the wheel from the CUDA reader's per-image sizes, and
the wheel against the per-file limit (an error over it, a warning within 10%), naming the arch and the fix."""

from __future__ import annotations

import zipfile
from pathlib import Path

from kestrel_release.artifacts import cuda_binary
from kestrel_release.artifacts.wheel import read_wheel
from kestrel_release.stages.verify import size_forecast
from tests.factories import make_wheel

DATA = Path(__file__).resolve().parents[3] / "data" / "cuda" / "release"


def _wheel(tmp_path):
    files = {
        "kk/cu13.0/sm_90a/attn.cubin": (DATA / "cu130-sm90a.cubin").read_bytes(),
        "kk/cu12.9/sm_100a/attn.cubin": (DATA / "cu129-sm100a-g.cubin").read_bytes(),
        "kk/_ops.so": (DATA / "aarch64_sm90a.so").read_bytes(),
    }
    path = make_wheel(tmp_path, {**files, "kk/__init__.py": b""}, name="kk", compression=zipfile.ZIP_STORED)
    infos = [cuda_binary.inspect_bytes(data, name) for name, data in files.items()]
    wheel = read_wheel(path)
    return wheel, infos, size_forecast.per_arch(infos, wheel.members)


def test_each_toolkit_and_arch_gets_its_share(tmp_path):
    _, _, rows = _wheel(tmp_path)
    got = {(r["toolkit"], r["arch"]): r["bytes"] for r in rows}
    # the CUDA 12.9 sm_100a cubin (ABI V2) says 12.9 in its .note.nv.tkinfo (ptxas' version line)
    assert got[("12.9", "sm_100a")] == 25056 and rows[0]["arch"] == "sm_100a"
    assert got[("13.0", "sm_90a")] == 4840 + 6872 and got[("13.0", "compute_90a")] == 500


def test_over_the_limit_is_an_error_naming_the_arch_and_the_fix(tmp_path):
    wheel, infos, rows = _wheel(tmp_path)
    (finding,) = size_forecast.check(wheel.filename, wheel.size, wheel.size - 1, rows, infos)
    assert finding.severity == "error" and finding.rule == "size-forecast"
    assert "sm_100a (CUDA 12.9) adds 24.5 KiB" in finding.message, finding.message
    assert 'compress (build.cuda_compress = "size", needs driver >= 550) or drop an arch' in finding.message


def test_within_ten_percent_is_a_warning_and_below_nothing(tmp_path):
    wheel, infos, rows = _wheel(tmp_path)
    (finding,) = size_forecast.check(wheel.filename, wheel.size, int(wheel.size * 1.05), rows, infos)
    assert finding.severity == "warning" and "within 10% of the limit" in finding.message
    assert size_forecast.check(wheel.filename, wheel.size, wheel.size * 2, rows, infos) == []
    assert size_forecast.check(wheel.filename, wheel.size, 1, [], []) == []  # no CUDA code: nothing to say
