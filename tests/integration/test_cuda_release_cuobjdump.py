"""The CUDA reader on committed release builds of CUDA 11.8, 12.4, 12.8 and 13.0, on a Windows DLL and
an aarch64 shared object (tests/data/cuda/release, made by make_release_builds.sh), against cuobjdump."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.inspect.cuda_binary import inspect_bytes
from tests.data.cuda.builders import cuobjdump_report

RELEASE = Path(__file__).resolve().parents[1] / "data" / "cuda" / "release"

# file -> (format, machine, sass, ptx, debug): what each recipe in make_release_builds.sh produces.
EXPECTED = {
    "cu118-sm90.cubin": ("cubin", "cuda", ["sm_90"], [], False),
    "cu118-sm90-rdc.cubin": ("cubin", "cuda", ["sm_90"], [], False),
    "cu118-sm90-lineinfo.cubin": ("cubin", "cuda", ["sm_90"], [], True),
    "cu124-sm90a.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu124-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu124-sm90a-g.cubin": ("cubin", "cuda", ["sm_90a"], [], True),
    "cu128-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu128-sm100a.cubin": ("cubin", "cuda", ["sm_100a"], [], False),
    "cu130-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu130-sm90a-ptx.fatbin": ("fatbin", "cuda", ["sm_90a"], ["compute_90a"], False),
    "aarch64_sm90a.so": ("elf", "aarch64", ["sm_90a"], ["compute_90a"], False),
    "kernel_sm90a.dll": ("pe", "x86_64", ["sm_90a"], ["compute_90a"], False),
    "rdata_sm90a.dll": ("pe", "x86_64", ["sm_90a"], ["compute_90a"], False),
}
# cuobjdump (Linux) reads no PE file: a DLL is compared with the fat binary it embeds.
EMBEDDED = {"kernel_sm90a.dll": "cu130-sm90a-ptx.fatbin", "rdata_sm90a.dll": "cu130-sm90a-ptx.fatbin"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reader_equals_cuobjdump_on_release_builds(name):
    info = inspect_bytes((RELEASE / name).read_bytes(), name)
    truth = cuobjdump_report(RELEASE / EMBEDDED.get(name, name))
    if truth is None:
        pytest.skip("cuobjdump not installed (uv sync installs nvidia-cuda-cuobjdump)")
    assert truth[0], "cuobjdump found no SASS: the comparison would prove nothing"
    assert (info.sass, info.ptx, info.debug) == truth



