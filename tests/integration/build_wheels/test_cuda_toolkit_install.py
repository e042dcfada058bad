"""A toolkit this machine lacks is installed from PyPI into the tool's cache, once (uv's cache keeps the
downloads: .ci/run fills it). CUDA 12 from PyPI is NVRTC: it compiles the bundled kernels' device code."""

from __future__ import annotations

import ctypes

import pytest

from kestrel_release.adapters import cuda_toolkit

pytestmark = pytest.mark.slow


def test_cuda_12_9_from_pypi_is_nvrtc_and_installs_once(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    tk = cuda_toolkit.install("12.9")
    assert tk.version.startswith("12.9.") and tk.nvcc is None and tk.nvrtc is not None and tk.source == "PyPI"
    assert (tmp_path / "cache" / "toolkits" / "cuda-12.9" / cuda_toolkit.MARKER).is_file()
    assert any((d / "cuda_fp16.h").is_file() for d in tk.include)
    lib = ctypes.CDLL(str(tk.nvrtc))
    major, minor = ctypes.c_int(), ctypes.c_int()
    assert lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0 and (major.value, minor.value) == (12, 9)
    # Found in the cache afterwards: no second install is even allowed.
    assert cuda_toolkit.resolve(("12.9",), allow_install=False, env={"PATH": "/usr/bin:/bin"})["12.9"] == tk
