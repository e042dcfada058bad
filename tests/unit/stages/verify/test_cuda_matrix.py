"""verify's CUDA coverage matrix: every configured (toolkit, arch) served by NVIDIA's rules; the driver floor."""

from __future__ import annotations

import dataclasses

import pytest

from kestrel_release.artifacts.cuda_binary import CudaInfo
from kestrel_release.config.model import Config
from kestrel_release.stages.verify import cuda_matrix

CFG = Config(
    project_dir=__import__("pathlib").Path("."),
    name="k",
    version="1",
    cuda_arch=("80", "90a", "100f", "120f"),
    cuda=("12.9", "13.0"),
)


def _wheel(*images: tuple[str, str, str], compressed: bool = False) -> list[CudaInfo]:
    return [
        CudaInfo(
            f"pkg/{cuda}/{arch}.fatbin",
            entries=[{"kind": kind, "arch": arch, "bytes": 1, "compressed": compressed, "cuda": cuda}],
        )
        for kind, arch, cuda in images
    ]


FULL = [("sass", a, c) for c in ("12.9", "13.0") for a in ("sm_80", "sm_90a", "sm_100f", "sm_120f")]


def test_a_full_wheel_serves_every_cell_and_reports_the_driver_floor():
    findings, facts = cuda_matrix.check(CFG, _wheel(*FULL))
    assert findings == []
    assert len(facts["matrix"]) == 8 and all(c["sass"] for c in facts["matrix"])
    assert facts["driver_floor"] == "580.65.06"  # CUDA 13 code: r580


@pytest.mark.parametrize(
    ("replace", "missing"),
    [
        (("sass", "sm_100f", "12.9"), None),  # present: fine
        (("sass", "sm_100a", "12.9"), "CUDA 12.9 SASS that serves sm_100f"),  # 100a misses 10.3
        (("sass", "sm_100", "12.9"), "CUDA 12.9 SASS that serves sm_100f"),  # no family features
        (("sass", "sm_100f", "12.8"), "CUDA 12.9 SASS that serves sm_100f"),  # another toolkit's
        (("ptx", "compute_100f", "12.9"), "CUDA 12.9 SASS that serves sm_100f"),  # PTX is not SASS
    ],
)
def test_a_missing_pair_is_an_error_naming_it(replace, missing):
    images = [i for i in FULL if i != ("sass", "sm_100f", "12.9")] + [replace]
    findings, _facts = cuda_matrix.check(CFG, _wheel(*images))
    messages = [f.message for f in findings if f.severity == "error"]
    if missing is None:
        assert messages == []
    else:
        assert len(messages) == 1 and f"no binary carries {missing}" in messages[0], messages


def test_served_by_the_rules_not_by_name():
    cfg = dataclasses.replace(CFG, cuda_arch=("86", "89"), cuda=("13.0",))
    findings, facts = cuda_matrix.check(cfg, _wheel(("sass", "sm_80", "13.0")))
    assert findings == [] and facts["matrix"][0]["sass"] == ["pkg/13.0/sm_80.fatbin"]  # sm_80 runs on 8.6 and 8.9


def test_configured_ptx_must_be_there():
    cfg = dataclasses.replace(CFG, cuda_arch=("80",), cuda=("12.9",), cuda_ptx=("80",))
    findings, _ = cuda_matrix.check(cfg, _wheel(("sass", "sm_80", "12.9")))
    assert findings[0].message.startswith("no binary carries CUDA 12.9 PTX for sm_80")
    findings, facts = cuda_matrix.check(cfg, _wheel(("sass", "sm_80", "12.9"), ("ptx", "compute_80", "12.9")))
    assert findings == [] and facts["driver_floor"] == "575.51.03"  # 12.9 PTX JITs on 12.9's driver


def test_driver_floor_counts_compression_and_no_matrix_without_toolkits():
    cfg = dataclasses.replace(CFG, cuda=())
    findings, facts = cuda_matrix.check(cfg, _wheel(("sass", "sm_90a", "12.4"), compressed=True))
    assert findings == [] and facts == {"driver_floor": "550.54.14"}
