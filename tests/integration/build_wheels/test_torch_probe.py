"""torch's version, CUDA and C++ ABI are read in a child of the build Python (never imported here)."""

from __future__ import annotations

import sys
from pathlib import Path

from kestrel_release.adapters import torch_probe

FAKE_TORCH = """__version__ = "2.9.1+cu130"
class version:
    cuda = "13.0"
class _C:
    _GLIBCXX_USE_CXX11_ABI = True
"""


def test_probe_reads_version_cuda_and_cxx11_abi_from_a_child(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    info = torch_probe.probe(Path(sys.executable))
    assert info == {"version": "2.9.1+cu130", "cuda": "13.0", "cxx11_abi": True}
    assert torch_probe.describe(info) == "torch 2.9.1+cu130 (CUDA 13.0, cxx11 ABI)"


def test_no_torch_is_none(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('broken install')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert torch_probe.probe(Path(sys.executable)) is None
    assert torch_probe.probe(None) is None
