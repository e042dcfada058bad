"""What the build caches key on besides the sources: the toolchain (stages/build_wheels/cachekey.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kestrel_release.adapters import toolchain
from kestrel_release.config_loader import load as config
from kestrel_release.stages.build_wheels import cachekey, precompile
from tests.conftest import copy_kernels


def test_keyed_env_holds_what_changes_the_output_and_not_parallelism_or_noise() -> None:
    env = {
        "CC": "clang", "CXX": "/usr/bin/g++", "CUDAHOSTCXX": "g++-12", "CUDACXX": "/opt/cuda/bin/nvcc",
        "CFLAGS": "-O0", "CXXFLAGS": "-g", "CPPFLAGS": "-DX", "LDFLAGS": "-s", "NVCC_APPEND_FLAGS": "-G",
        "NVCC_PREPEND_FLAGS": "-lineinfo", "CUDA_HOME": "/opt/cuda", "CUDA_PATH": "/opt/cuda",
        "TORCH_CUDA_ARCH_LIST": "9.0a", "CMAKE_ARGS": "-DFOO=1", "SKBUILD_CMAKE_BUILD_TYPE": "Debug",
        "MAX_JOBS": "4", "CMAKE_BUILD_PARALLEL_LEVEL": "8", "MAKEFLAGS": "-j8", "NVCC_THREADS": "4",
        "PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0", "TERM": "xterm",
        # the compile cache's wiring (stages/build_wheels/compile_cache.py): how fast, not what
        "CMAKE_C_COMPILER_LAUNCHER": "ccache", "CMAKE_CXX_COMPILER_LAUNCHER": "ccache",
        "CMAKE_CUDA_COMPILER_LAUNCHER": "ccache", "CCACHE_DIR": "/c", "CCACHE_BASEDIR": "/s", "PYTORCH_NVCC": "x",
    }  # fmt: skip
    keyed = cachekey.keyed_env(env)
    assert set(keyed) == {
        "CC", "CXX", "CUDAHOSTCXX", "CUDACXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "NVCC_APPEND_FLAGS",
        "NVCC_PREPEND_FLAGS", "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "CMAKE_ARGS",
        "SKBUILD_CMAKE_BUILD_TYPE",
    }  # fmt: skip


def _fake_compilers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("cc", "c++", "gcc-13", "ccache"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(toolchain, "compiler_version", lambda path: f"{path.name} 1.0")
    return bin_dir


def test_compilers_resolve_defaults_overrides_and_launchers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _fake_compilers(tmp_path, monkeypatch)
    plain = cachekey.compilers({"PATH": str(bin_dir)})
    assert set(plain) == {"CC", "CXX"}  # cc and c++, as CMake and meson pick them when CC/CXX are unset
    assert plain["CC"].startswith(f"{bin_dir / 'cc'} (cc 1.0;")
    other = cachekey.compilers({"PATH": str(bin_dir), "CC": "ccache gcc-13 -m64"})
    assert other["CC"].startswith(f"{bin_dir / 'gcc-13'} (gcc-13 1.0;") and other["CXX"] == plain["CXX"]
    host = cachekey.compilers({"PATH": str(bin_dir), "CUDAHOSTCXX": "nowhere-g++"}, {"CC": "gcc-13", "CXX": "c++"})
    assert host["CUDAHOSTCXX"] == "nowhere-g++ (not found)"
    assert host["sysconfig CC"].startswith(str(bin_dir / "gcc-13"))
    # Editing a wrapper script (same --version output) changes what is recorded.
    before = cachekey.compilers({"PATH": str(bin_dir)})["CC"]
    (bin_dir / "cc").write_text('#!/bin/sh\nexec gcc -O0 "$@"\n')
    os.utime(bin_dir / "cc", ns=(1, 1))
    assert cachekey.compilers({"PATH": str(bin_dir)})["CC"] != before


def test_precompile_key_covers_the_host_toolchain(tmp_path: Path) -> None:
    project = copy_kernels(tmp_path / "k")
    cfg = config.load(project, env={})
    key = precompile.cache_key(cfg, "13.0.88", {})
    for change in (
        {"CXXFLAGS": "-O0"},
        {"CUDAHOSTCXX": "/usr/bin/g++-12"},
        {"CC": "clang"},
        {"CUDA_HOME": "/x"},
        {"NVCC_CCBIN": "g++-13"},
    ):
        assert precompile.cache_key(cfg, "13.0.88", change) != key, change
    assert precompile.cache_key(cfg, "13.0.88", {"MAX_JOBS": "2"}) == key
    compilers = {"CXX": "/usr/bin/c++ (g++ 12.2.0)"}
    assert precompile.cache_key(cfg, "13.0.88", {}, compilers) != key
    assert precompile.cache_key(cfg, "13.0.88", {}, {"CXX": "/usr/bin/c++ (g++ 13.1.0)"}) != precompile.cache_key(
        cfg, "13.0.88", {}, compilers
    )


def test_every_version_tools_pretend_variable_is_keyed() -> None:
    """A pretend version is the wheel's version: hatch-vcs, pdm, poetry and versioneer as setuptools-scm."""
    env = {
        "SETUPTOOLS_SCM_PRETEND_VERSION": "1.0",
        "PDM_BUILD_SCM_VERSION": "1.0",
        "POETRY_DYNAMIC_VERSIONING_BYPASS": "1.0",
        "HATCH_VCS_PRETEND_VERSION": "1.0",
        "VERSIONEER_OVERRIDE": "1.0",
    }
    assert cachekey.keyed_env(env) == env
