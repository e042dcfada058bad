"""Precompile once per (toolkit, arch): cross-compiled, content-cached per pair, in parallel.

Used when the configuration names toolkits (`cuda`) or several archs. Each pair runs the project's
precompile command once, with what it needs as placeholders and environment variables (below), and
writes into its own directory `<precompile_outputs>/cu<toolkit>/sm_<arch>/`. Each pair has its own
cache entry `<cache>/precompile/<key>/`, whose key hashes the precompile inputs, the toolkit's exact
version and path, the arch, PTX or not, the command, the build environment and the host toolchain:
adding an arch compiles that arch only, and a toolkit update recompiles that toolkit's pairs only.
`<precompile_outputs>/kestrel-precompile.json` lists the pairs for the package's build and loader.

The command receives `{python}`, `{cuda}` (the configured toolkit, "12.9"), `{cuda_version}` (12.9.86),
`{arch}` ("100f"), `{ptx}` ("1" when the arch also gets PTX, else "0"), `{nvcc}` ("" for a toolkit
without one: CUDA 12 from PyPI), `{nvrtc}` (libnvrtc, "" when unknown), `{out}`; the same as
KESTREL_CUDA, KESTREL_CUDA_VERSION, KESTREL_CUDA_ARCH, KESTREL_CUDA_PTX, KESTREL_NVCC, KESTREL_NVRTC,
KESTREL_CUDA_INCLUDE (extra header dirs, os.pathsep-separated), KESTREL_PRECOMPILE_OUT; plus
CUDA_HOME, CUDACXX and PATH pointing at that toolkit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kestrel_release.adapters import toolchain
from kestrel_release.adapters.cuda_toolkit import Toolkit
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError
from kestrel_release.facts import cuda_rules
from kestrel_release.files import fsutil
from kestrel_release.process import pools
from kestrel_release.stages.build_wheels import cachekey
from kestrel_release.stages.build_wheels import precompile as single

INDEX = "kestrel-precompile.json"
MARKER = ".kestrel-pair"  # in every pair dir this module wrote: the only dirs it ever removes


def wanted_pairs(cfg: Config, toolkits: dict[str, Toolkit]) -> list[tuple[str, cuda_rules.Arch, bool]]:
    """(configured toolkit, arch, with PTX) for every pair the configuration builds."""
    names = cfg.cuda or tuple(toolkits)
    pairs, problems = cuda_rules.pairs(names, cfg.cuda_arch)
    if problems:  # cuda was empty at load time: the nvcc found decides now
        raise BuildError(f"cuda_arch: {'; '.join(problems)}", "pin the arch to a toolkit or configure `cuda`")
    ptx = {cuda_rules.Arch.parse(a) for a in cfg.cuda_ptx}
    return [(t, a, a in ptx) for t, a in pairs]


def pair_dir(toolkit: str, arch: cuda_rules.Arch) -> str:
    return f"cu{toolkit}/{arch.sm}"


def pair_key(
    cfg: Config, toolkit: Toolkit, arch: cuda_rules.Arch, ptx: bool, env: dict[str, str], compilers: dict | None = None
) -> str:
    payload = {
        "common": single.key_payload(
            cfg, env, cachekey.compilers(env) if compilers is None else compilers
        ),  # inputs, argv, env, host toolchain
        "toolkit": toolkit.to_json(),
        "arch": arch.name,
        "ptx": ptx,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def step_values(cfg: Config, name: str, toolkit: Toolkit, arch: cuda_rules.Arch, ptx: bool, out: Path) -> dict:
    return {
        "python": sys.executable,
        "cuda": name,
        "cuda_version": toolkit.version,
        "arch": arch.name,
        "ptx": "1" if ptx else "0",
        "nvcc": str(toolkit.nvcc or ""),
        "nvrtc": str(toolkit.nvrtc or ""),
        "out": str(out),
    }


def step_env(cfg: Config, values: dict, toolkit: Toolkit, base: dict[str, str]) -> dict[str, str]:
    extra = {
        **cfg.build.env,
        "KESTREL_CUDA": values["cuda"],
        "KESTREL_CUDA_VERSION": values["cuda_version"],
        "KESTREL_CUDA_ARCH": values["arch"],
        "KESTREL_CUDA_PTX": values["ptx"],
        "KESTREL_NVCC": values["nvcc"],
        "KESTREL_NVRTC": values["nvrtc"],
        "KESTREL_CUDA_INCLUDE": os.pathsep.join(str(p) for p in toolkit.include),
        "KESTREL_PRECOMPILE_OUT": values["out"],
        "CUDA_HOME": str(toolkit.root),
        "CUDA_PATH": str(toolkit.root),
    }
    if toolkit.nvcc:
        extra["CUDACXX"] = str(toolkit.nvcc)
        extra["PATH"] = f"{toolkit.nvcc.parent}{os.pathsep}{base.get('PATH', '')}"
    else:  # no nvcc: one on PATH would be another toolkit's
        extra["CUDACXX"] = ""
    return extra


def _run_pair(
    cfg: Config,
    name: str,
    toolkit: Toolkit,
    arch: cuda_rules.Arch,
    ptx: bool,
    outputs: Path,
    log_dir: Path,
    use_cache: bool,
    where: tuple[Callable[..., None], dict[str, str] | None],
) -> dict:
    start = time.monotonic()
    env = {**os.environ, **cfg.build.env}
    runner, compilers = where
    key = pair_key(cfg, toolkit, arch, ptx, env, compilers)
    out = outputs / pair_dir(name, arch)
    entry = toolchain.cache_dir() / "precompile" / key
    log = log_dir / f"precompile-cu{name}-{arch.sm}.log"
    if use_cache and entry.is_dir() and single.tree(entry) == single.tree(out):
        status = "up-to-date"
    elif use_cache and entry.is_dir():
        single.restore(entry, out)
        status = "restored"
    else:
        if out.is_dir() and (out / MARKER).is_file():
            shutil.rmtree(out)
        out.mkdir(parents=True, exist_ok=True)
        values = step_values(cfg, name, toolkit, arch, ptx, out)
        argv = [_fill(a, values) for a in cfg.precompile]
        runner(
            argv,
            cwd=cfg.project_dir,
            env=step_env(cfg, values, toolkit, env),
            log=log,
            what=f"precompile {arch.sm} with CUDA {toolkit.version}",
            out=out,
        )
        if not any(p for p in out.iterdir() if not p.name.startswith(".")):
            raise BuildError(
                f"precompile for CUDA {name} {arch.sm} wrote nothing to {out}",
                f"write the outputs to {{out}} / $KESTREL_PRECOMPILE_OUT (log: {log})",
            )
        entry.parent.mkdir(parents=True, exist_ok=True)
        single.store(out, entry, refresh=not use_cache)
        status = "compiled"
    fsutil.atomic_write_text(out / MARKER, key + "\n")
    kernels = [{**k, "cuda": name} for k in single.kernels_of(out)]
    return {
        "cuda": name,
        "cuda_version": toolkit.version,
        "arch": arch.name,
        "ptx": ptx,
        "dir": pair_dir(name, arch),
        "status": status,
        "key": key,
        "seconds": round(time.monotonic() - start, 2),
        "log": str(log) if status == "compiled" else None,
        "kernels": kernels,
    }


def _fill(arg: str, values: dict) -> str:
    for name, value in values.items():
        arg = arg.replace("{" + name + "}", value)
    return arg


def run(
    cfg: Config,
    toolkits: dict[str, Toolkit],
    *,
    log_dir: Path,
    use_cache: bool = True,
    runner: Callable[..., None] = single.run_on_host,
    compilers: dict[str, str] | None = None,
) -> single.PrecompileResult:
    """Every pair current (up to date, restored or compiled); a PrecompileResult with one row per pair.
    `runner`/`compilers` as in precompile.run (an image's toolkit: stages/build_wheels/container.py)."""
    start = time.monotonic()
    outputs = cfg.project_dir / cfg.precompile_outputs
    pairs = wanted_pairs(cfg, toolkits)
    outputs.mkdir(parents=True, exist_ok=True)
    jobs = max(1, min(len(pairs), cfg.build.jobs or os.cpu_count() or 1))
    with pools.threads(jobs) as pool:
        futures = [
            pool.submit(
                _run_pair, cfg, name, toolkits[name], arch, ptx, outputs, log_dir, use_cache, (runner, compilers)
            )
            for name, arch, ptx in pairs
        ]
        rows = [f.result() for f in futures]  # the first failure raises (the others finish first)
    keep = {row["dir"] for row in rows}
    for marker in outputs.glob(f"cu*/sm_*/{MARKER}"):  # pairs no longer configured: ours to remove
        if marker.parent.relative_to(outputs).as_posix() not in keep:
            shutil.rmtree(marker.parent, ignore_errors=True)
    for parent in outputs.glob("cu*"):
        if parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
    index = {"format": 1, "pairs": [{k: r[k] for k in ("cuda", "cuda_version", "arch", "ptx", "dir")} for r in rows]}
    text = json.dumps(index, indent=2, sort_keys=True) + "\n"
    if not (outputs / INDEX).is_file() or (outputs / INDEX).read_text(encoding="utf-8") != text:
        fsutil.atomic_write_text(outputs / INDEX, text)
    statuses = {r["status"] for r in rows}
    status = "compiled" if "compiled" in statuses else "restored" if "restored" in statuses else "up-to-date"
    kernels = [k for r in rows for k in r["kernels"]]
    return single.PrecompileResult(status, None, time.monotonic() - start, None, kernels, rows)
