"""The loader's choice for a (GPU, driver) by NVIDIA's rules: a table, no GPU needed."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import KERNELS

_spec = importlib.util.spec_from_file_location("_kk_select", KERNELS / "python" / "kestrel_kernels" / "_select.py")
select = importlib.util.module_from_spec(_spec)
sys.modules["_kk_select"] = select  # dataclasses look their module up
_spec.loader.exec_module(select)

# What the release config builds: every arch with CUDA 12.9 and 13.0, PTX for sm_80 from 12.9.
INDEX = {
    "pairs": [
        {"cuda": c, "cuda_version": v, "arch": a, "ptx": c == "12.9" and a == "80", "dir": f"cu{c}/sm_{a}"}
        for c, v in (("12.9", "12.9.86"), ("13.0", "13.0.88"))
        for a in ("80", "90a", "100f", "120f")
    ]
}
PAIRS = select.parse_pairs(INDEX)

CASES = [
    # device, driver (cuDriverGetVersion), force, expected dir, kind
    ((9, 0), 13000, None, "cu13.0/sm_90a", "sass"),  # H100, r580: the newest toolkit's exact-arch cubin
    ((9, 0), 12080, None, "cu12.9/sm_90a", "sass"),  # r570 cannot run CUDA 13 code
    ((9, 0), 12020, None, "cu12.9/sm_90a", "sass"),  # minor version compatibility: 12.9 SASS on a 12.2 driver
    ((9, 0), 13000, "12", "cu12.9/sm_90a", "sass"),
    ((9, 0), 13000, "13", "cu13.0/sm_90a", "sass"),
    ((8, 6), 13000, None, "cu13.0/sm_80", "sass"),  # A10: sm_80 SASS runs on 8.6
    ((8, 7), 12060, None, "cu12.9/sm_80", "sass"),  # Orin on CUDA 12
    ((10, 3), 13000, None, "cu13.0/sm_100f", "sass"),  # GB300: the family cubin
    ((12, 1), 12090, None, "cu12.9/sm_120f", "sass"),  # DGX Spark
    ((11, 0), 13000, "12", "cu12.9/sm_80", "ptx"),  # Thor: no SASS, sm_80 PTX JIT (12.9 PTX on a 13.0 driver)
    ((8, 9), 12090, None, "cu12.9/sm_80", "sass"),
]


@pytest.mark.parametrize(("device", "driver", "force", "expected", "kind"), CASES)
def test_the_loader_picks_by_nvidia_rules(device, driver, force, expected, kind):
    pair, got = select.choose(PAIRS, device, driver, force)
    assert (pair.dir, got) == (expected, kind)


@pytest.mark.parametrize(
    ("device", "driver", "force", "words"),
    [
        ((7, 5), 13000, None, "sm_75 with a CUDA 13.0 driver; this wheel carries CUDA 12.9: sm_80 +PTX, sm_90a"),
        ((9, 0), 12080, "13", "keeps only CUDA 13 code"),
        ((9, 0), 12080, "13", "update the NVIDIA driver to one for CUDA 13 (r580+ for CUDA 13)"),
        ((9, 0), 13000, "11", "use 12 or 13"),
        ((11, 0), 12090, "13", "sm_110 with a CUDA 12.9 driver"),
    ],
)
def test_nothing_fits_is_one_error_naming_device_driver_and_contents(device, driver, force, words):
    with pytest.raises(select.NoMatch, match=None) as info:
        select.choose(PAIRS, device, driver, force)
    assert words in str(info.value)


def test_ptx_needs_a_driver_as_new_as_its_toolkit():
    with pytest.raises(select.NoMatch):  # 12.9 PTX on a 12.4 driver: cannot JIT
        select.choose(PAIRS, (11, 0), 12040, None)
