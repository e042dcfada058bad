"""build.cuda_compress reaches every nvcc the precompile step runs (NVCC_APPEND_FLAGS, after the user's own
flags) and the precompile cache key; unset, nothing is added."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kestrel_release.config.model import BuildConfig, Config
from kestrel_release.stages.build_wheels import precompile


def _cfg(mode: str) -> Config:
    return Config(Path("/p"), "k", "1.0", build=dataclasses.replace(BuildConfig(), cuda_compress=mode))


def test_the_mode_is_appended_to_nvccs_flags_and_keys_the_cache():
    env = {"NVCC_APPEND_FLAGS": "-lineinfo"}
    added = precompile.compress_env(_cfg("size"), env)
    assert added == {"NVCC_APPEND_FLAGS": "-lineinfo --compress-mode=size", "KESTREL_CUDA_COMPRESS": "size"}
    assert precompile.step_env(_cfg("size"), {**env, **added})["NVCC_APPEND_FLAGS"] == "-lineinfo --compress-mode=size"
    assert precompile.cache_key(_cfg("size"), "13.0", {**env, **added}) != precompile.cache_key(
        _cfg("size"), "13.0", env
    )
    assert precompile.compress_env(_cfg(""), env) == {}
