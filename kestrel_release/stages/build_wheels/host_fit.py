"""Does this host fit the build: a GPU of the configured arch, a glibc at least the target's.

One answer for the two places that ask: build's preflight (stages/build_wheels/plan.py turns a misfit
into a problem or a warning) and `doctor` (shows it as a check row). Each words it for its reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kestrel_release.adapters import gpu, toolchain

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


def gpu_fit(cfg: Config) -> tuple[bool, list, str | None]:
    """(a GPU that runs one of cfg.cuda_arch is here, the GPUs seen, why none was seen)."""
    gpus, why = gpu.detect()
    return any(gpu.has_arch(gpus, arch) for arch in cfg.cuda_arch), gpus, why


def arch_words(cfg: Config) -> str:
    """The configured archs as a user reads them: "sm_90a" or "sm_80/sm_90a/sm_100f"."""
    return "/".join("sm_" + a.split("@")[0].strip().lower().removeprefix("sm_") for a in cfg.cuda_arch)


def glibc_fit(cfg: Config) -> tuple[tuple[int, int] | None, str | None, bool]:
    """(glibc the target build.plat needs, this host's glibc, the host's is older); None where unknown."""
    need, have = toolchain.plat_glibc(cfg.build.plat), toolchain.glibc_version()
    older = bool(need and have and tuple(int(p) for p in have.split(".")[:2]) < need)
    return need, have, older
