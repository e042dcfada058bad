"""Toolkits: PyPI layouts read as toolkits, the packages each version installs, which one a config gets."""

from __future__ import annotations

import json

import pytest

from kestrel_release.adapters import cuda_toolkit
from kestrel_release.adapters.cuda_toolkit import Toolkit
from kestrel_release.errors import PreflightError


def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    return path


def test_pypi_requirements_per_major():
    assert cuda_toolkit.pypi_requirements("12.9") == [
        "nvidia-cuda-nvrtc-cu12==12.9.*",
        "nvidia-cuda-nvcc-cu12==12.9.*",
        "nvidia-cuda-runtime-cu12==12.9.*",
        "nvidia-cuda-cccl-cu12==12.9.*",
    ]
    assert cuda_toolkit.pypi_requirements("13")[0] == "nvidia-cuda-nvcc==13.*"
    assert "nvidia-cuda-crt==13.0.*" in cuda_toolkit.pypi_requirements("13.0")


def test_a_cuda13_wheel_layout_is_a_whole_nvcc(tmp_path):
    nvcc = _touch(tmp_path / "nvidia" / "cu13" / "bin" / "nvcc")
    tk = cuda_toolkit._from_layout(tmp_path, "13.0.88")
    assert tk is not None and tk.nvcc == nvcc and tk.nvrtc is None and tk.short == "13.0"


def test_a_cuda12_wheel_layout_is_nvrtc_with_its_headers(tmp_path):
    lib = _touch(tmp_path / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12")
    _touch(tmp_path / "nvidia" / "cuda_runtime" / "include" / "cuda_fp16.h")
    tk = cuda_toolkit._from_layout(tmp_path, "12.9.86")
    assert tk is not None and tk.nvcc is None and tk.nvrtc == lib
    assert tk.include == (tmp_path / "nvidia" / "cuda_runtime" / "include",)
    assert cuda_toolkit._from_layout(tmp_path / "empty", "12.9.86") is None


def test_cached_installs_are_found_by_their_marker(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path))
    done = tmp_path / "toolkits" / "cuda-12.9"
    _touch(done / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12")
    (done / cuda_toolkit.MARKER).write_text(json.dumps({"version": "12.9.86"}))
    _touch(tmp_path / "toolkits" / ".cuda-13.0.tmp-1" / "nvidia" / "cu13" / "bin" / "nvcc")  # half-installed
    assert [t.version for t in cuda_toolkit.cached()] == ["12.9.86"]


def test_resolve_prefers_a_local_nvcc_and_refuses_a_missing_one_without_install(monkeypatch, tmp_path):
    rtc = Toolkit("13.0.48", "PyPI", tmp_path, None, tmp_path / "libnvrtc.so.13")
    full = Toolkit("13.0.88", "PATH", tmp_path, tmp_path / "nvcc")
    monkeypatch.setattr(cuda_toolkit, "local", lambda env=None: [rtc, full])
    assert cuda_toolkit.resolve(("13.0",), allow_install=False)["13.0"] is full
    with pytest.raises(PreflightError, match=r"CUDA 12.9 is not on this machine \(found: 13.0.48 \(PyPI\), 13.0.88"):
        cuda_toolkit.resolve(("12.9",), allow_install=False)
    monkeypatch.setattr(cuda_toolkit, "install", lambda want: Toolkit("12.9.86", "PyPI", tmp_path))
    assert cuda_toolkit.resolve(("12.9", "13"), allow_install=True)["12.9"].version == "12.9.86"
