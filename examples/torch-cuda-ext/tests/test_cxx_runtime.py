"""The extension shares torch's C++ runtime, so a TORCH_CHECK failure is a Python RuntimeError.

Linked against a private (static) libstdc++, the same failure killed the process with SIGSEGV:
the subprocess below shows that as a failed test instead of a crashed test run.
"""

import os
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
        reason="needs an sm_90 GPU: the wheel carries sm_90a code only",
    ),
]

ODD_LAST_DIMENSION = """
import torch, torch_cuda_ext
try:
    torch_cuda_ext.silu_mul(torch.randn(4, 5, device="cuda"))
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
"""


def test_a_failed_torch_check_raises_in_a_fresh_process():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # this run's torch_cuda_ext
    run = subprocess.run(
        [sys.executable, "-c", ODD_LAST_DIMENSION], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"exit {run.returncode} (-11 is SIGSEGV): {run.stderr[-2000:]}"
    assert run.stdout.startswith("RuntimeError: silu_mul: the last dimension must be even, got [4, 5]")


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs binutils' readelf")
def test_the_library_uses_the_shared_cxx_runtime():
    import torch_cuda_ext

    path = torch_cuda_ext._C.__file__
    dynamic = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
    assert "[libstdc++.so.6]" in dynamic, f"{path} does not load libstdc++.so.6"
    symbols = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True, text=True, check=True).stdout
    own = [
        f[7] for f in map(str.split, symbols.splitlines()) if len(f) >= 8 and f[6] != "UND" and f[7] == "__cxa_throw"
    ]
    assert own == [], f"{path} carries its own C++ runtime"
