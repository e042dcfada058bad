"""Does this host fit the build: a GPU of the configured arch, a glibc at least the target's.

One answer for the two places that ask: build's preflight (stages/build/plan.py turns a misfit
into a problem or a warning) and `doctor` (shows it as a check row). Each words it for its reader.
"""

from __future__ import annotations

from kestrel_release.adapters import gpu, toolchain


def gpu_fit(cfg) -> tuple[bool, list, str | None]:
    """(a GPU of sm_<cfg.cuda_arch> is here, the GPUs seen, why none was seen)."""
    gpus, why = gpu.detect()
    return gpu.has_arch(gpus, cfg.cuda_arch), gpus, why


def glibc_fit(cfg) -> tuple[tuple[int, int] | None, str | None, bool]:
    """(glibc the target build.plat needs, this host's glibc, the host's is older); None where unknown."""
    need, have = toolchain.plat_glibc(cfg.build.plat), toolchain.glibc_version()
    older = bool(need and have and tuple(int(p) for p in have.split(".")[:2]) < need)
    return need, have, older
