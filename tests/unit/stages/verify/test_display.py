"""verify's table of CUDA binaries: every member when there are a few hundred, one row per (SASS, PTX, debug)
with a count and the shared folder for a wheel of thousands of cubins (flashinfer-cubin ships 16,000); -v
lists every one again."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rich.console import Console

from kestrel_release.artifacts.cuda_binary import CudaInfo
from kestrel_release.stages.verify import display
from kestrel_release.ui import console


def _wheel(n: int) -> SimpleNamespace:
    cuda = [
        CudaInfo(f"fi/cubins/{'gemm' if i % 3 else 'fmha/gen'}/k{i}.cubin", sass=["sm_100a" if i % 3 else "sm_90a"])
        for i in range(n)
    ]
    return SimpleNamespace(filename="fi-1.0-py3-none-any.whl", size=2**20, ok=True, cuda=cuda)


def _text(table) -> str:
    out = Console(width=200, record=True)
    out.print(table)
    return out.export_text()


@pytest.fixture
def quiet():
    before = console.verbose()
    console.configure(verbose=False)
    yield
    console.configure(verbose=before)


def test_a_few_hundred_binaries_are_listed_one_by_one(quiet):
    wheel = _wheel(display.MAX_ROWS)
    text = _text(display._wheel_table(wheel, display._cuda_rows(wheel)))
    assert text.count(".cubin") == display.MAX_ROWS and "groups" not in text


def test_thousands_of_binaries_are_one_row_per_architecture_set(quiet):
    wheel = _wheel(3000)
    text = _text(display._wheel_table(wheel, display._cuda_rows(wheel)))
    assert ".cubin" not in text
    assert "2000 files under fi/cubins/gemm/" in text and "1000 files under fi/cubins/fmha/gen/" in text
    assert "3000 CUDA binaries in 2 groups; -v or --json lists each" in text


def test_verbose_lists_every_binary_again(quiet):
    console.configure(verbose=True)
    wheel = _wheel(3000)
    assert _text(display._wheel_table(wheel, display._cuda_rows(wheel))).count(".cubin") == 3000
