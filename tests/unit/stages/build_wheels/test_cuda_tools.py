"""When the configured build needs nvcc, and which nvcc preflight accepts (no process is started)."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import pytest

from kestrel_release.config_loader.load import Config
from kestrel_release.errors import PreflightError
from kestrel_release.stages.build_wheels import cuda_tools


def _cfg(project: Path, precompile: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Config:
    cfg = Config(project_dir=project, name="k", version="0.1.0", precompile=precompile)
    return dataclasses.replace(cfg, build=dataclasses.replace(cfg.build, env=env or {}))


def _nvcc(home: Path) -> Path:
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(nvcc.stat().st_mode | stat.S_IXUSR)
    return nvcc


def test_why_needed_reads_the_configuration(tmp_path):
    assert cuda_tools.why_needed(_cfg(tmp_path)) == ""
    assert cuda_tools.why_needed(_cfg(tmp_path, precompile=("make",))) == "the precompile step"
    assert (
        cuda_tools.why_needed(_cfg(tmp_path, env={"TORCH_CUDA_ARCH_LIST": "9.0a"})) == "build.env TORCH_CUDA_ARCH_LIST"
    )
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "attn.cu").write_text("")
    assert cuda_tools.why_needed(_cfg(tmp_path)) == "the CUDA source csrc/attn.cu"


def test_sources_in_envs_build_trees_and_hidden_dirs_do_not_count(tmp_path):
    for where in (".venv/lib", "build/temp", "dist-all", "env"):
        (tmp_path / where).mkdir(parents=True)
        (tmp_path / where / "k.cu").write_text("")
    (tmp_path / "env" / "pyvenv.cfg").write_text("")
    assert cuda_tools.why_needed(_cfg(tmp_path)) == ""


def test_precompile_needs_nvcc_on_the_path_it_sees(tmp_path, monkeypatch):
    nvcc = _nvcc(tmp_path / "cuda")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDACXX", raising=False)
    with pytest.raises(PreflightError) as caught:
        cuda_tools.find(_cfg(tmp_path, precompile=("make",)))
    assert "nvcc is not on PATH" in caught.value.message
    assert f"export PATH={nvcc.parent}" in (caught.value.hint or "")
    # torch's cpp_extension finds it through CUDA_HOME: fine without a precompile step
    assert cuda_tools.find(_cfg(tmp_path, env={"CUDA_HOME": str(tmp_path / "cuda")})) == nvcc
    # CUDACXX is what the step reads: then it is found
    monkeypatch.setenv("CUDACXX", str(nvcc))
    assert cuda_tools.find(_cfg(tmp_path, precompile=("make",))) == nvcc


def test_torchs_cuda_library_headers_come_from_its_nvidia_wheels_when_the_toolkit_lacks_them(tmp_path, monkeypatch):
    """chamferdist's knn.cu includes ATen/cuda headers that include cusparse.h; this machine's CUDA 13.0 toolkit
    has nvcc and cudart only, the build env's torch brought nvidia/cu13/include with it: CPATH names it."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "setup.py").write_text("from torch.utils.cpp_extension import CUDAExtension\n")
    toolkit = tmp_path / "cuda"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime_api.h").write_text("")
    env_root = tmp_path / "env"
    (env_root / "bin").mkdir(parents=True)
    python = env_root / "bin" / "python"
    python.write_text("")
    wheel_include = env_root / "lib" / "python3.13" / "site-packages" / "nvidia" / "cu13" / "include"
    wheel_include.mkdir(parents=True)
    (wheel_include / "cusparse.h").write_text("")
    (env_root / "lib" / "python3.13" / "site-packages" / "nvidia" / "nccl" / "include").mkdir(parents=True)
    env = {"CUDA_HOME": str(toolkit), "CPATH": "/mine"}
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    shared, mine = cuda_tools.library_headers_env(python, project, env)["CPATH"].split(os.pathsep)
    # read at the copy named by its bytes (one path for every Python's env: shared_include.py), the user's after
    assert Path(shared).parent == tmp_path / "cache" / "shared-include" and mine == "/mine"
    assert sorted(p.name for p in Path(shared).iterdir()) == ["cusparse.h"]
    for name in cuda_tools.TORCH_LIBRARY_HEADERS:  # a full toolkit: nothing added
        (toolkit / "include" / name).write_text("")
    assert cuda_tools.library_headers_env(python, project, env) == {}
    (project / "setup.py").write_text("from torch.utils.cpp_extension import CppExtension\n")  # no CUDA compiled
    (toolkit / "include" / "cusparse.h").unlink()
    assert cuda_tools.library_headers_env(python, project, env) == {}
