"""What a variant's build gets besides its torch and toolkit: a stable-ABI build's TORCH_TARGET_VERSION,
and whether PyTorch's own index serves its torch at all (variant_build asks both before building)."""

from __future__ import annotations

import os

from kestrel_release.config.model import Config
from kestrel_release.config.variants import Variant, VariantsConfig
from kestrel_release.errors import BuildError
from kestrel_release.project.build_env import TorchPin


def stable_abi_env(cfg: Config, v: Variant) -> dict[str, str]:
    """A stable-ABI build's TORCH_TARGET_VERSION, as kernel-builder passes it (a compile definition):
    torch's stable headers then offer only what the target minor has, so the binary loads on it. Added
    to the flags every build route reads: setuptools and torch's cpp_extension (CPPFLAGS, CXXFLAGS),
    nvcc itself (NVCC_APPEND_FLAGS), CMake (CXXFLAGS, CUDAFLAGS); a project that defines it too with the
    same value is unaffected."""
    if not v.stable_abi:
        return {}
    env = {**os.environ, **cfg.build.env}
    flag = f"-DTORCH_TARGET_VERSION={v.target_version}"
    out = {}
    for name in ("CPPFLAGS", "CXXFLAGS", "CUDAFLAGS", "NVCC_APPEND_FLAGS"):
        out[name] = f"{env[name]} {flag}" if env.get(name, "").strip() else flag
    return out


def unserved(vcfg: VariantsConfig, v: Variant, pins: dict[str, TorchPin]) -> str:
    """Why PyTorch's own index cannot give this variant its torch ("" when it can, or cannot tell): the
    CUDAs it serves the minor for, read from the index itself (adapters/pytorch_index.py, cached). Asked
    only for a torch that comes from PyTorch's index (not PyPI, the interpreter or a configured index)."""
    from kestrel_release.adapters import pytorch_index
    from kestrel_release.files import statedir

    default_index = v.cuda not in vcfg.index
    if not default_index or not any(p.index and not p.reuse for p in pins.values()):
        return ""
    served = pytorch_index.index_cudas([v.torch], statedir.cache_dir(), pytorch_index.root()).get(v.torch)
    if served is None or v.cuda in served:
        return ""
    return (
        f"PyTorch's index serves torch {v.torch} for CUDA {', '.join(served)}, not {v.cuda} "
        f"(read from {pytorch_index.root()}/torch/)"
    )


# What torch's non-stable headers say when TORCH_TARGET_VERSION is defined (ATen/ATen.h, torch/extension.h, ...).
_UNSTABLE = "TORCH_TARGET_VERSION is defined"


def raise_unstable(exc: BuildError, v: Variant) -> None:
    """A stable-ABI build that failed because the sources include torch headers outside the stable ABI:
    the same error, with what it means and the two ways out."""
    if not v.stable_abi or _UNSTABLE not in f"{exc.message} {exc.hint or ''}":
        return
    raise BuildError(
        f"{exc.message}; {exc.hint or ''} (variant {v.name}: the sources include torch headers outside the "
        "stable ABI, which refuse to compile in a stable-ABI build)",
        "write the extension against torch/csrc/stable and torch/headeronly (STABLE_TORCH_LIBRARY), or remove "
        "[tool.kestrel-release.variants] stable_abi to build one wheel per torch minor",
    ) from None
