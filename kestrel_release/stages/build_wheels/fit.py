"""How many compiles run at once: set from this machine's cores AND its free memory, never more than fits.

A compile of a big CUDA kernel takes gigabytes (two `ptxas` of one real extension: ~1.9 GB each), so a
16-core host with 8 free GB builds 4 of them at once, not 16: more would swap, or the kernel's OOM killer
ends the build an hour in. The memory one compile takes comes from the previous build of the project on
this machine (history.py: the largest process of each Python's build, measured), else a safe guess.

The compile slots (`slots`: cores, and free memory / one compile) are shared out:
- across Pythons: `pythons` builds at once (build.jobs overrides); with the compile cache one Python (the
  lead) builds alone first, so it gets every slot;
- within a build: `jobs` compiles at once, up to twice its share of the cores while memory holds them all (MAX_JOBS for torch's cpp_extension and its ninja,
  CMAKE_BUILD_PARALLEL_LEVEL for CMake; build.compile_jobs overrides), each nvcc compiling `threads` of the
  configured archs at once (`--threads`: several archs of one file in parallel, each its own ptxas).
What the user set in the environment or build.env (MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL, NVCC_THREADS,
`--threads` in NVCC_APPEND_FLAGS) is left as it is. None of this changes what a build writes (cachekey.NOT_KEYED).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from kestrel_release.config.model import Config
from kestrel_release.ui import console
from kestrel_release.ui.sizes import size

GIB = 1024**3
FIRST_GUESS_CUDA = 2 * GIB  # a first build that may run nvcc: one ptxas of a big kernel (~1.9 GB measured)
FIRST_GUESS = GIB // 2  # a C/C++ compile
MARGIN = 1.25  # over the measured peak: a sample every half second misses short spikes


@dataclass(frozen=True)
class Fit:
    cores: int
    available: int | None  # bytes free now (None: unknown)
    per_compile: int  # bytes one compile is counted at
    source: str  # where per_compile comes from: "measured", "build.memory_per_job" or "first build"
    slots: int  # compiles at once in all
    pythons: int  # Python builds at once
    jobs: int  # compiles at once within one build
    lead_jobs: int  # the same for the lead Python, which builds alone first
    threads: int  # nvcc --threads (1: one arch at a time)
    warning: str = ""  # one line when even this may not fit in memory

    def env(self, user: dict[str, str], *, lead: bool) -> dict[str, str]:
        """The variables that set a build's parallelism, minus those `user` (os.environ + build.env) sets."""
        jobs = str(self.lead_jobs if lead else self.jobs)
        out = {"MAX_JOBS": jobs, "CMAKE_BUILD_PARALLEL_LEVEL": jobs}
        if self.threads > 1:
            out["NVCC_THREADS"] = str(self.threads)  # read by vLLM-style setup.py/CMake files
        out = {k: v for k, v in out.items() if k not in user}
        appended = user.get("NVCC_APPEND_FLAGS", "")
        # nvcc reads NVCC_APPEND_FLAGS itself; a later --threads wins over the project's own (a warning).
        if self.threads > 1 and "--threads" not in appended and "-t " not in f"{appended} ":
            out["NVCC_APPEND_FLAGS"] = f"{appended} --threads {self.threads}".strip()
        return out

    def describe(self) -> str:
        """One line of build's plan: what runs at once and why."""
        free = f", {size(self.available)} free" if self.available is not None else ""
        threads = f" x {self.threads} archs (nvcc --threads)" if self.threads > 1 else ""
        lead = f" (the first Python alone: {self.lead_jobs})" if self.lead_jobs != self.jobs else ""
        return (
            f"parallelism: {_n(self.pythons, 'Python build')} at once, {_n(self.jobs, 'compile')} each{lead}"
            f"{threads} ({self.cores} cores{free}, {size(self.per_compile)} per compile: {self.source})"
        )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def arch_count(env: dict[str, str], cuda_arch: tuple[str, ...]) -> int:
    """How many archs each nvcc compiles: TORCH_CUDA_ARCH_LIST ("8.0;9.0a", "8.0 9.0+PTX"), else cuda_arch."""
    listed = env.get("TORCH_CUDA_ARCH_LIST", "")
    if listed.strip():
        return len([a for a in re.split(r"[;\s]+", listed) if a])
    return len(cuda_arch)


def fitted(
    *,
    cores: int,
    available: int | None,
    measured: int | None,
    cuda: bool,
    archs: int,
    pythons: int,
    jobs: int = 0,
    compile_jobs: int = 0,
    memory_per_job: int = 0,
    lead: bool = False,
) -> Fit:
    """The parallelism of one build (module doc). `measured`: the largest compile of the previous build
    (bytes, None: none recorded); `jobs`, `compile_jobs`, `memory_per_job`: the settings (0 = fitted);
    `lead`: one Python builds alone first (the compile cache)."""
    if memory_per_job:
        per, source = memory_per_job, "build.memory_per_job"
    elif measured:
        per, source = max(int(measured * MARGIN), 64 * 1024**2), "measured in the last build"
    else:
        per, source = (FIRST_GUESS_CUDA if cuda else FIRST_GUESS), "a first build's guess"
    by_memory = available // per if available is not None else cores
    slots = max(1, min(cores, by_memory))
    at_once = jobs or max(1, min(pythons, slots))
    # Each build may run up to twice its share of the cores, as far as memory holds them all (at_once x each
    # <= by_memory): a build's compiles are not all ready at once (a serial link, setup.py's own work), and the
    # last Python often builds alone; with only its share it left cores idle (chamferdist, 2 cores: the third
    # non-lead Python compiled its two binding files one after the other, 231 s, one core idle). CPU is
    # oversubscribed at most twice; memory never.
    each = max(1, min(cores, by_memory // at_once, max(1, 2 * slots // at_once)))
    threads = min(archs, each) if cuda and archs > 1 else 1
    each_jobs = compile_jobs or max(1, each // threads)
    alone = lead and pythons > 1
    fit = Fit(
        cores=cores,
        available=available,
        per_compile=per,
        source=source,
        slots=slots,
        pythons=at_once,
        jobs=each_jobs,
        lead_jobs=compile_jobs or max(1, slots // threads) if alone else each_jobs,
        threads=threads,
    )
    return _with_warning(fit)


def _with_warning(fit: Fit) -> Fit:
    """One line when the build may not fit in memory: even one compile is more than is free, or the
    settings ask for more compiles at once than fit."""
    if fit.available is None:
        return fit
    at_once = max(fit.pythons * fit.jobs, fit.lead_jobs) * fit.threads
    need = at_once * fit.per_compile
    if need <= fit.available:
        return fit
    if at_once <= 1:
        why = f"one compile took {size(fit.per_compile)} ({fit.source}), {size(fit.available)} is free"
        what = "free memory (close other programs) or build fewer archs at once"
    else:
        why = (
            f"{at_once} compiles at once of {size(fit.per_compile)} each ({fit.source}) need {size(need)}, "
            f"{size(fit.available)} is free"
        )
        what = "lower build.jobs / build.compile_jobs (or unset them: the tool fits them to memory)"
    return Fit(**{**fit.__dict__, "warning": f"this build may run out of memory: {why} — {what}"})


def announce(cfg: Config, plan: Any, *, lead: bool) -> Fit:
    """build's plan: the parallelism fitted to this machine and the forecast from the last build, printed
    before anything runs (a build that may not fit in memory: one warning line). `plan`: plan.Plan;
    `lead`: the compile cache is read (one Python compiles alone first)."""
    from kestrel_release.adapters import machine
    from kestrel_release.stages.build_wheels import cuda_tools, history

    rows = history.load(cfg.project_dir)
    pythons = list(plan.pythons)
    cuda = bool(plan.nvcc_version or cuda_tools.why_needed(cfg))
    fit = _plan_for(cfg, plan, rows, cuda, machine.cores(), machine.mem_available(), lead and len(pythons) > 1)
    console.info(fit.describe())
    chosen = max(pythons, key=_sort_key) if lead and len(pythons) > 1 else None
    console.info(history.forecast(rows, pythons, fit.pythons, chosen))
    if fit.warning:
        console.warn(fit.warning)
    return fit


def _plan_for(cfg: Config, plan: Any, rows: dict, cuda: bool, cores: int, available: int | None, lead: bool) -> Fit:
    from kestrel_release.stages.build_wheels import history

    env = {**os.environ, **plan.build_env(cfg)}
    return fitted(
        cores=cores,
        available=available,
        measured=history.largest_compile(rows, plan.pythons),
        cuda=cuda,
        archs=arch_count(env, cfg.cuda_arch) if cuda else 0,
        pythons=len(plan.pythons),
        jobs=cfg.build.jobs,
        compile_jobs=cfg.build.compile_jobs,
        memory_per_job=cfg.build.memory_per_job,
        lead=lead,
    )


def _sort_key(py: str) -> Any:
    from kestrel_release.facts import pyversions

    return pyversions.sort_key(py)
