"""Import needs no GPU; every missing piece is one clear error (run against the built wheel)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import KERNELS

FAKE_ARRAY = """
class FakeDeviceArray:  # anything speaking __cuda_array_interface__
    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0x7F0000000000, False), "version": 3, "strides": None}
"""


def run_py(site: Path, code: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KESTREL_KERNELS")}
    env.update(PYTHONPATH=str(site), **env_extra)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=site, env=env, capture_output=True, text=True, check=False
    )


def call_with_fake(site: Path, call: str, **env_extra: str) -> subprocess.CompletedProcess:
    code = f"""
import kestrel_kernels as kk
{FAKE_ARRAY}
try:
    {call}
except kk.KestrelKernelsError as exc:
    print("KestrelKernelsError:", exc)
"""
    return run_py(site, code, **env_extra)


@pytest.fixture(scope="module")
def fake_libcuda(tmp_path_factory):
    """Build fake driver libraries: mode 0 sees no GPU, mode 1 an sm_80 GPU."""
    d = tmp_path_factory.mktemp("fakecuda")
    libs = {}
    for mode in (0, 1):
        out = d / f"libcuda_mode{mode}.so"
        proc = subprocess.run(
            [
                "gcc",
                "-shared",
                "-fPIC",
                f"-DFAKE_CUDA_MODE={mode}",
                "-o",
                str(out),
                str(Path(__file__).with_name("fake_libcuda.c")),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode:
            pytest.skip(f"gcc could not build the fake driver: {proc.stderr}")
        libs[mode] = out
    return libs


def test_import_without_gpu(installed_wheel):
    proc = run_py(
        installed_wheel,
        """
        import kestrel_kernels as kk, kestrel_kernels._C as C
        print(kk.__version__, kk.silu_and_mul.__module__, kk.topk.__module__, kk.moe_align_block_size.__module__)
    """,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [
        "0.1.0",
        "kestrel_kernels.silu_and_mul.dispatch",
        "kestrel_kernels.topk.dispatch",
        "kestrel_kernels.moe_align.dispatch",
    ]


def test_no_driver_is_a_clear_error(installed_wheel):
    proc = call_with_fake(
        installed_wheel,
        "kk.silu_and_mul(FakeDeviceArray((4, 8), '<f2'))",
        KESTREL_KERNELS_LIBCUDA="/nonexistent/libcuda.so.1",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("KestrelKernelsError: no CUDA driver: could not load /nonexistent/libcuda.so.1")
    assert "NVIDIA GPU" in proc.stdout


def test_no_gpu_is_a_clear_error(installed_wheel, fake_libcuda):
    proc = call_with_fake(
        installed_wheel, "kk.topk(FakeDeviceArray((4, 100), '<f4'), 5)", KESTREL_KERNELS_LIBCUDA=str(fake_libcuda[0])
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("KestrelKernelsError: no CUDA GPU found")


def test_wrong_architecture_is_a_clear_error(installed_wheel, fake_libcuda):
    # sm_75: no configured arch serves it, whichever pairs the wheel carries (a plain `uv build` makes one).
    proc = call_with_fake(
        installed_wheel,
        "kk.moe_align_block_size(FakeDeviceArray((3, 2), '<i4'), 8, 16)",
        KESTREL_KERNELS_LIBCUDA=str(fake_libcuda[1]),
        FAKE_CUDA_MAJOR="7",
        FAKE_CUDA_MINOR="5",
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("KestrelKernelsError: no precompiled kernels for this GPU: sm_75 with a CUDA 13.0 driver"), (
        out
    )
    assert "; this wheel carries CUDA 1" in out and "sm_90a" in out  # what is there, by toolkit
    assert out.rstrip().endswith("build for sm_75 (add it to cuda_arch) (Fake A100, device 0)"), out


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (
            "kk.silu_and_mul(FakeDeviceArray((4, 7), '<f4'))",
            "ValueError: silu_and_mul: x must have an even last dimension",
        ),
        (
            "kk.silu_and_mul(FakeDeviceArray((4, 8), '<i4'))",
            "TypeError: silu_and_mul: x has dtype int32; supported: float32, float16, bfloat16",
        ),
        (
            "kk.topk(FakeDeviceArray((4, 8), '<f4'), 9)",
            "ValueError: topk: k=9 is larger than the last dimension of x (8)",
        ),
        ("kk.topk(FakeDeviceArray((4, 100), '<f4'), 65)", "ValueError: topk: k must be in [1, 64], got 65"),
        (
            "kk.topk(FakeDeviceArray((4, 100), '<f2'), 5)",
            "TypeError: topk: x has dtype float16; supported: float32, bfloat16",
        ),
        (
            "kk.moe_align_block_size(FakeDeviceArray((6,), '<i4'), 8, 16)",
            "ValueError: moe_align_block_size: topk_ids must be 2-D",
        ),
        (
            "kk.moe_align_block_size(FakeDeviceArray((6, 2), '<f4'), 8, 16)",
            "TypeError: moe_align_block_size: topk_ids has dtype float32",
        ),
        (
            "kk.silu_and_mul([1.0, 2.0])",
            "TypeError: silu_and_mul: x must be a torch CUDA tensor or an object with __cuda_array_interface__",
        ),
    ],
)
def test_bad_inputs_fail_before_any_gpu_work(installed_wheel, call, error):
    code = f"""
import kestrel_kernels as kk
{FAKE_ARRAY}
try:
    {call}
except (TypeError, ValueError) as exc:
    print(f"{{type(exc).__name__}}: {{exc}}")
"""
    proc = run_py(installed_wheel, code, KESTREL_KERNELS_LIBCUDA="/nonexistent/libcuda.so.1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(error), proc.stdout


def test_non_contiguous_input_is_rejected(installed_wheel):
    code = f"""
import kestrel_kernels as kk
{FAKE_ARRAY}
x = FakeDeviceArray((4, 8), '<f4')
x.__cuda_array_interface__["strides"] = (4, 16)  # a transposed view
try:
    kk.silu_and_mul(x)
except ValueError as exc:
    print(exc)
"""
    proc = run_py(installed_wheel, code, KESTREL_KERNELS_LIBCUDA="/nonexistent/libcuda.so.1")
    assert "silu_and_mul: x must be C-contiguous (shape (4, 8), strides (4, 16))" in proc.stdout, (
        proc.stdout + proc.stderr
    )


def test_host_arrays_are_rejected(installed_wheel):
    pytest.importorskip("numpy")
    proc = run_py(
        installed_wheel,
        """
        import numpy as np, kestrel_kernels as kk
        try:
            kk.topk(np.zeros((2, 8), np.float32), 2)
        except TypeError as exc:
            print(exc)
    """,
    )
    assert "topk: x is a host array (numpy.ndarray); kestrel_kernels needs GPU memory" in proc.stdout, proc.stderr


def test_source_tree_without_extension_says_how_to_build():
    proc = call_with_fake(KERNELS / "python", "kk.silu_and_mul(FakeDeviceArray((4, 8), '<f4'))")
    assert proc.returncode == 0, proc.stderr
    assert "kestrel_kernels._C is not available" in proc.stdout and "uv build --wheel" in proc.stdout
