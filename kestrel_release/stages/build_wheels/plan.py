"""What build needs before it touches anything: interpreters, uv, nvcc, GPU, glibc.

Every missing piece is collected and reported in one exit-3 message, before the
first compiler runs. The resulting Plan carries what the builds share.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kestrel_release._compat import tomllib
from kestrel_release.adapters import (
    auditwheel,
    cuda_toolkit,
    git,
    host,
    pythons,
    toolchain,
    uv,
)
from kestrel_release.config.model import Config
from kestrel_release.errors import PreflightError
from kestrel_release.stages.build_wheels import compile_cache, cuda_tools, host_fit
from kestrel_release.stages.build_wheels import container as build_container
from kestrel_release.stages.build_wheels import container_precompile as build_container_precompile


@dataclass
class Plan:
    pythons: dict[str, Path]
    uv: Path
    nvcc_version: str | None
    source_date_epoch: int
    backend: str
    warnings: list[str] = field(default_factory=list)
    source: str = ""  # digest of the project tree, set once precompile is done
    tool_versions: dict = field(default_factory=dict)
    repair_tool: Any = None  # adapters.repair.RepairTool of this host's system
    container: Any = None  # stages.build_wheels.container.Target: build.container's image, engine and Pythons
    toolkits: dict = field(default_factory=dict)  # configured toolkit -> adapters.cuda_toolkit.Toolkit (pairs mode)
    ccache: Path | None = None  # the compile cache's binary (compile_cache.py); None: builds compile everything
    fit: Any = None  # fit.Fit: compiles at once, fitted to cores and free memory (set by build's _run)
    measured: dict = field(default_factory=dict)  # Python -> history.Measured of its build in this run

    def build_env(self, cfg: Config) -> dict[str, str]:
        """Env of every wheel build: the configured env, a fixed clock, no downloads, no prompts."""
        return {
            **cfg.build.env,
            "SOURCE_DATE_EPOCH": str(self.source_date_epoch),
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_NO_PROGRESS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def config_settings(self, cfg: Config, cache: bool, inputs: dict[str, str] | None = None) -> dict[str, str]:
        """A persistent scikit-build-core build dir per project, toolchain and wheel tag: warm builds are
        incremental. CMake reads CC, CXX and the flags only when it first configures a build dir, so one
        made by another toolchain (the wheel cache's inputs but the sources and the date) is never reused."""
        if not cache or self.backend != "scikit_build_core.build":
            return {}
        project = hashlib.sha256(str(cfg.project_dir).encode()).hexdigest()[:12]
        tools = {k: v for k, v in (inputs or {}).items() if k not in ("sources", "SOURCE_DATE_EPOCH")}
        toolset = hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()[:12]
        return {"build-dir": str(toolchain.cache_dir() / "skbuild" / project / toolset / "{wheel_tag}")}

    def toolchain(self) -> dict:
        return {**self.tool_versions, "pythons": {py: str(path) for py, path in self.pythons.items()}}


def preflight(cfg: Config, *, gpu_check: bool) -> Plan:
    """Find everything the build needs; PreflightError (exit 3) listing every missing piece."""
    problems: list[str] = []
    warnings: list[str] = []
    # In an image (build.container) the image's Pythons build the wheels, against the image's glibc.
    target = build_container.preflight(cfg, problems) if cfg.build.container else None
    if cfg.build.container:
        found = {py: Path(path) for py, path in (target.pythons if target else {}).items()}
    else:
        found = _attempt(problems, pythons.find_all, cfg.python) or {}
    uv_bin = _attempt(problems, uv.find_uv)
    nvcc_version = None
    toolkits: dict = {}
    if build_container_precompile.wanted(cfg):  # the image's toolkit, not this host's
        toolkits = build_container_precompile.check(cfg, target, problems)
        nvcc_version = target.nvcc_version if target and toolkits else None
        if not (cfg.cuda or len(cfg.cuda_arch) > 1):
            toolkits = {}  # one step, keyed by the image's nvcc (precompile.run)
    elif cfg.precompile and cfg.cuda:  # one precompile per (toolkit, arch): precompile_pairs
        toolkits = _attempt(problems, _toolkits, cfg) or {}
        nvcc_version = ",".join(f"{name}={tk.version}" for name, tk in toolkits.items()) or None
    elif cuda_tools.why_needed(cfg):  # a precompile step, CUDA hints in build.env or .cu sources
        nvcc = _attempt(problems, cuda_tools.find, cfg)
        nvcc_version = _attempt(problems, toolchain.nvcc_version, nvcc) if nvcc else None
        if nvcc and nvcc_version and cfg.precompile and len(cfg.cuda_arch) > 1:  # several archs, one toolkit
            toolkits = {_short(nvcc_version): cuda_toolkit.Toolkit(nvcc_version, "nvcc", nvcc.parent.parent, nvcc)}
    from kestrel_release.adapters import repair

    tool = repair.for_system(host.current().system)  # auditwheel, delvewheel or delocate: where it runs
    problems += tool.missing()
    if not cfg.build.container:  # the image's glibc is checked by build_container.preflight
        _check_glibc(cfg, problems)
    if gpu_check and cuda_tools.gpu_relevant(cfg):
        _check_gpu(cfg, problems, warnings)
    ccache = compile_cache.find(cfg, problems)
    if problems:
        raise PreflightError(f"build preflight: {'; '.join(problems)}")
    assert uv_bin is not None  # else _attempt added a problem
    sde, note = source_date_epoch(cfg)
    if note:
        warnings.append(note)
    tools = {"nvcc": nvcc_version, "uv": uv.version(uv_bin), "auditwheel": auditwheel.version()}
    if tool.name != "auditwheel":
        tools[tool.name] = tool.version()
    if target is not None:
        tools["container"] = f"{target.engine.name} {target.image}"
    plan = Plan(found, uv_bin, nvcc_version, sde, _backend(cfg), warnings, tool_versions=tools, repair_tool=tool)
    plan.toolkits = toolkits
    plan.container = target
    plan.ccache = ccache
    return plan


T = TypeVar("T")


def _attempt(problems: list[str], fn: Callable[..., T], *args: Any) -> T | None:
    try:
        return fn(*args)
    except PreflightError as exc:
        problems.append(str(exc))
        return None


def _toolkits(cfg: Config) -> dict:
    """Each configured toolkit, found here or installed from PyPI (adapters/cuda_toolkit.py)."""
    return cuda_toolkit.resolve(cfg.cuda, env={**os.environ, **cfg.build.env})


def _short(version: str) -> str:
    from kestrel_release.facts import cuda_rules

    return cuda_rules.toolkit_name(cuda_rules.parse_toolkit(version))


def _check_gpu(cfg: Config, problems: list[str], warnings: list[str]) -> None:
    fits, gpus, why = host_fit.gpu_fit(cfg)
    if fits:
        return
    seen = ", ".join(f"{g.name} ({g.sm})" for g in gpus) or why
    if cfg.requires_gpu:
        problems.append(
            f"precompilation needs an {host_fit.arch_words(cfg)} GPU (requires_gpu = true) but found none "
            f"({seen}) — run on an H100 host, or pass --no-gpu-check to build anyway"
        )
    else:
        warnings.append(f"no {host_fit.arch_words(cfg)} GPU ({seen}): the kernels are cross-compiled and not run here")


def _check_glibc(cfg: Config, problems: list[str]) -> None:
    _need, have, older = host_fit.glibc_fit(cfg)
    if older and have:
        problems.append(
            f"this host has glibc {have}, older than {cfg.build.plat} needs — "
            f"build on a newer host or set build.plat to {_manylinux(have)}"
        )


def _manylinux(glibc: str) -> str:
    """The manylinux tag of this host's glibc and CPU (glibc '2.28' -> manylinux_2_28_x86_64 on x86_64)."""
    from kestrel_release.platforms import linux

    major, minor = (int(p) for p in glibc.split(".")[:2])
    return linux.manylinux((major, minor), host.current().arch)


def source_date_epoch(cfg: Config) -> tuple[int, str | None]:
    """$SOURCE_DATE_EPOCH, else the commit time (same commit -> same bytes), else a fixed date."""
    if os.environ.get("SOURCE_DATE_EPOCH", "").isdigit():
        return int(os.environ["SOURCE_DATE_EPOCH"]), None
    state = git.state(cfg.project_dir)
    if state.commit_time is not None:
        return state.commit_time, None
    return 315532800, "not a git checkout: SOURCE_DATE_EPOCH set to 1980-01-01 (zip's earliest date)"


def _backend(cfg: Config) -> str:
    try:
        data = tomllib.loads((cfg.project_dir / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return str(data.get("build-system", {}).get("build-backend", ""))
