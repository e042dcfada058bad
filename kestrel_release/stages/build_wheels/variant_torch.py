"""Where a variant's torch comes from for a build env: the interpreter's own torch when it is the variant's
minor and CUDA, else PyPI's `torch==X.Y.*` when PyPI's torch of that minor is that CUDA build, else the
variant's per-CUDA index (variant_build.py pins each build env with it and checks the env got it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kestrel_release.config.model import Config
from kestrel_release.config.variants import Variant, VariantError, VariantsConfig, same_cuda, torch_minor
from kestrel_release.project.build_env import TorchPin


def pin_source(pin: TorchPin, python: Path) -> str:
    return f"interpreter {python}" if pin.reuse else pin.index or "PyPI"


def torch_pin(cfg: Config, vcfg: VariantsConfig, v: Variant, python: Path) -> tuple[TorchPin | None, str]:
    """Where variant `v`'s torch comes from for this interpreter, or (None, why it cannot be built here)."""
    from kestrel_release.adapters import torch_probe

    have = _probe(python, torch_probe.probe)
    if have and matches(v, have):
        return TorchPin(v.build_requirement, reuse=True), ""
    if not cfg.build.isolation:
        what = torch_probe.describe(have) if have else "no torch"
        return (
            None,
            f"--no-isolation builds with {python}'s own torch, and it has {what}, not {v.torch} + CUDA {v.cuda}",
        )
    if v.cuda not in vcfg.index and _pypi_cuda(v.torch) == v.cuda:
        return TorchPin(v.build_requirement), ""
    return TorchPin(v.build_requirement, index=vcfg.index_url(v.cuda)), ""


def _pypi_cuda(torch: str) -> str | None:
    """The CUDA of PyPI's torch wheels of this minor (read from PyPI, cached); None when unknown."""
    from kestrel_release.adapters.pypi import torch_cuda
    from kestrel_release.files import statedir

    minor = ".".join(map(str, torch_minor(torch)))
    return torch_cuda.pypi_cuda([minor], statedir.cache_dir(), torch_cuda.root()).get(minor)


_probed: dict[Path, dict | None] = {}


def _probe(python: Path, probe: Any) -> dict | None:
    if python not in _probed:
        _probed[python] = probe(python)
    return _probed[python]


def matches(v: Variant, info: dict) -> bool:
    try:
        minor = torch_minor(str(info.get("version") or ""))
    except VariantError:
        return False
    return minor == torch_minor(v.torch) and same_cuda(str(info.get("cuda") or ""), v.cuda)
