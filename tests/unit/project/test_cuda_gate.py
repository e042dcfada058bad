"""cuda_gate: a setup.py that compiles CUDA only where torch sees a GPU, read before any build."""

from __future__ import annotations

import pytest

from kestrel_release.project import cuda_gate

CHAMFERDIST = """\
import os
import torch
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

def get_extensions():
    force_cuda = os.getenv("FORCE_CUDA", "0") == "1"
    if (torch.cuda.is_available() and CUDA_HOME is not None) or force_cuda:
        extension = CUDAExtension
"""
SPLINE_CONV = """\
WITH_CUDA = False
if torch.cuda.is_available():
    WITH_CUDA = CUDA_HOME is not None or torch.version.hip
if os.getenv('FORCE_ONLY_CUDA', '0') == '1':
    suffices = ['cuda']
if os.getenv('FORCE_CUDA', '0') == '1':
    suffices = ['cuda', 'cpu']
"""
WARP_RNNT = 'import torch\nif not torch.cuda.is_available():\n    raise Exception("CPU version is not implemented")\n'


@pytest.mark.parametrize(
    ("text", "gate"),
    [
        (CHAMFERDIST, cuda_gate.Gate(7, "FORCE_CUDA")),
        (SPLINE_CONV, cuda_gate.Gate(2, "FORCE_CUDA")),  # not FORCE_ONLY_CUDA, which drops the CPU extension
        (WARP_RNNT, cuda_gate.Gate(2, "")),  # no way to force it: a GPU host only
        ("CUDAExtension('a._C', ['a.cu'])\n", None),  # compiles CUDA whatever the host has
        (
            'x = os.environ["MY_FORCE_CUDA_BUILD"]\nif torch.cuda.is_available(): pass\n',
            cuda_gate.Gate(2, "MY_FORCE_CUDA_BUILD"),
        ),
    ],
)
def test_the_gate_and_the_variable_that_opens_it(text, gate):
    assert cuda_gate.read(text) == gate


def test_doctor_row_names_the_setting_that_fixes_a_gpu_less_build_host():
    gate = cuda_gate.Gate(7, "FORCE_CUDA")
    status, detail, fix = cuda_gate.check(gate, {}, has_gpu=False)
    assert status == "fail" and "setup.py:7 compiles CUDA only where torch sees a GPU" in detail
    assert "the wheel would carry no CUDA code" in detail
    assert fix.startswith('set FORCE_CUDA = "1" in build.env')
    assert cuda_gate.check(gate, {"FORCE_CUDA": "1"}, has_gpu=False)[0] == "ok"
    assert cuda_gate.check(gate, {"FORCE_CUDA": "0"}, has_gpu=False)[0] == "fail"
    assert cuda_gate.check(gate, {}, has_gpu=True)[0] == "warn"  # built here; not on a GPU-less runner
    assert cuda_gate.check(cuda_gate.Gate(2, ""), {}, has_gpu=False)[2].startswith("build on a GPU host")
