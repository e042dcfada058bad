"""A stable-ABI variant's build flags, and what its build failure says when the sources are not stable-ABI."""

from __future__ import annotations

import pytest

from kestrel_release.config.model import Config
from kestrel_release.config.variants import Variant
from kestrel_release.errors import BuildError
from kestrel_release.stages.build_wheels import variant_env

STABLE = Variant("2.13", "13.0", stable_abi="2.10")


def test_the_target_version_reaches_every_compiler_route(tmp_path, monkeypatch):
    monkeypatch.delenv("CPPFLAGS", raising=False)
    monkeypatch.setenv("CXXFLAGS", "-O2")
    for name in ("CUDAFLAGS", "NVCC_APPEND_FLAGS"):
        monkeypatch.delenv(name, raising=False)
    env = variant_env.stable_abi_env(Config(project_dir=tmp_path, name="k", version="0.1.0"), STABLE)
    flag = "-DTORCH_TARGET_VERSION=0x020a000000000000"
    assert env == {"CPPFLAGS": flag, "CXXFLAGS": f"-O2 {flag}", "CUDAFLAGS": flag, "NVCC_APPEND_FLAGS": flag}
    assert (
        variant_env.stable_abi_env(Config(project_dir=tmp_path, name="k", version="0.1.0"), Variant("2.13", "13.0"))
        == {}
    )


def test_non_stable_headers_in_a_stable_build_say_what_to_do():
    failed = BuildError(
        "build for Python 3.12 failed with exit code 2 (log: /x/build-3.12.log)",
        'first error: torch/include/ATen/ATen.h:40:2: error: #error "This file should not be included when either '
        'TORCH_STABLE_ONLY or TORCH_TARGET_VERSION is defined."',
    )
    with pytest.raises(BuildError) as info:
        variant_env.raise_unstable(failed, STABLE)
    assert info.value.message.startswith("build for Python 3.12 failed with exit code 2 (log: /x/build-3.12.log); ")
    assert "ATen/ATen.h:40:2" in info.value.message
    assert "(variant torch-stable-abi210-cu130-x86_64-linux: the sources include torch headers outside" in (
        info.value.message
    )
    assert "remove [tool.kestrel-release.variants] stable_abi" in (info.value.hint or "")
    variant_env.raise_unstable(failed, Variant("2.13", "13.0"))  # a plain variant: the error as it was
    variant_env.raise_unstable(BuildError("other", "first error: x.cpp:1: error: y"), STABLE)
