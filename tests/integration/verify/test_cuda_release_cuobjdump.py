"""The CUDA reader on committed release builds of CUDA 11.8, 12.4, 12.8 and 13.0, on a Windows DLL and
an aarch64 shared object (tests/data/cuda/release, made by make_release_builds.sh), against cuobjdump."""

from __future__ import annotations

import pytest

from kestrel_release.artifacts.cuda_binary import inspect_bytes
from tests.data.cuda.builders import cuobjdump_report
from tests.data.cuda.release_builds import EMBEDDED, EXPECTED, RELEASE


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reader_equals_cuobjdump_on_release_builds(name):
    info = inspect_bytes((RELEASE / name).read_bytes(), name)
    truth = cuobjdump_report(RELEASE / EMBEDDED.get(name, name))
    if truth is None:
        pytest.skip("cuobjdump not installed (uv sync installs nvidia-cuda-cuobjdump)")
    assert truth[0], "cuobjdump found no SASS: the comparison would prove nothing"
    assert (info.sass, info.ptx, info.debug) == truth
