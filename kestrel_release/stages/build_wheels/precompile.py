"""Precompile the kernels once per build, with a content-addressed cache.

The key hashes everything that decides the cubins: the files matched by
`precompile_inputs`, nvcc's version, the architecture, the precompile command,
the build environment and the toolchain (cachekey.py: compiler and flag
variables, nvcc's host compiler and its version). A hit restores
`precompile_outputs` from `<cache>/precompile/<key>/` instead of compiling, so
going back to a commit whose kernels were compiled before costs a copy, and nvcc
never runs. `build --no-cache` compiles and stores afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.adapters import toolchain
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError, ConfigError
from kestrel_release.files import fsutil
from kestrel_release.process import proc
from kestrel_release.records.build_documents import PrecompileDocument
from kestrel_release.stages.build_wheels import cachekey

# Environment that changes what nvcc produces, besides cfg.build.env and cachekey's toolchain variables.
KEY_ENV = ("TORCH_CUDA_ARCH_LIST", "KESTREL_KERNELS_CUDA_ARCH", "CMAKE_ARGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")


@dataclass
class PrecompileResult:
    status: str  # "none" (no step configured), "compiled", "restored", "up-to-date"
    key: str | None = None
    seconds: float = 0.0
    log: Path | None = None
    kernels: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)  # one row per (toolkit, arch): precompile_pairs
    ran_in: str = "host"  # or the image (build.precompile_in = "container")

    def document(self) -> PrecompileDocument:
        return PrecompileDocument(
            pairs=self.pairs,
            ran_in=self.ran_in if self.status != "none" else None,
            status=self.status,
            key=self.key,
            seconds=round(self.seconds, 2),
            log=str(self.log) if self.log else None,
            kernels=self.kernels,
        )


def input_files(cfg: Config) -> list[Path]:
    """Files matched by precompile_inputs (relative globs, `**` allowed), sorted."""
    files: set[Path] = set()
    for pattern in cfg.precompile_inputs:
        files |= {p for p in cfg.project_dir.glob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    return sorted(files)


def cache_key(cfg: Config, nvcc_version: str, env: dict[str, str], compilers: dict[str, str] | None = None) -> str:
    """`compilers`: cachekey.compilers(env), the host compilers nvcc and the step may call."""
    payload = {**key_payload(cfg, env, compilers), "nvcc": nvcc_version, "arch": cfg.cuda_arch}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def key_payload(cfg: Config, env: dict[str, str], compilers: dict[str, str] | None = None) -> dict:
    """What decides the outputs besides the toolkit and the archs (precompile_pairs adds its own)."""
    digest = hashlib.sha256()
    for path in input_files(cfg):
        digest.update(path.relative_to(cfg.project_dir).as_posix().encode() + b"\0")
        digest.update(fsutil.sha256_file(path).encode() + b"\0")
    return {
        "inputs": digest.hexdigest(),
        "argv": list(cfg.precompile),
        "outputs": cfg.precompile_outputs,
        "env": {k: env[k] for k in sorted(set(KEY_ENV) | set(cfg.build.env)) if k in env},
        "toolchain": cachekey.keyed_env(env),
        "compilers": compilers or {},
    }


def tree(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every non-hidden file (hidden = the step's locks and caches)."""
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): fsutil.sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


def _copy_tree(src: Path, dst: Path) -> None:
    # Hidden caches travel along (the step's nvcc-version cache spares an nvcc run); locks do not.
    shutil.copytree(
        src, dst, ignore=lambda _d, names: [n for n in names if n.endswith((".lock", ".tmp"))], dirs_exist_ok=True
    )


def store(outputs: Path, entry: Path, refresh: bool = False) -> None:
    # Staged in an owned dir beside the entries: a build killed mid-store leaves nothing the next
    # store there does not collect (fsutil.staging_dir).
    with fsutil.staging_dir(entry, kind="store") as tmp:
        _copy_tree(outputs, tmp)
        if refresh and entry.is_dir():  # --no-cache: the fresh compile replaces the entry
            with contextlib.suppress(OSError):
                os.replace(entry, tmp.parent / "old")
        with contextlib.suppress(OSError):  # another build stored the same key first: same content
            os.replace(tmp, entry)


def restore(entry: Path, outputs: Path) -> None:
    with fsutil.staging_dir(outputs, kind="restore") as staged:
        _copy_tree(entry, staged)
        fsutil.replace_dir(staged, outputs)


def compress_env(cfg: Config, env: dict[str, str]) -> dict[str, str]:
    """build.cuda_compress for every nvcc the step runs, whatever its script: nvcc reads
    NVCC_APPEND_FLAGS itself (kept in the cache key); KESTREL_CUDA_COMPRESS names the mode."""
    mode = cfg.build.cuda_compress
    if not mode:
        return {}
    flags = " ".join(f for f in (env.get("NVCC_APPEND_FLAGS", ""), f"--compress-mode={mode}") if f)
    return {"NVCC_APPEND_FLAGS": flags, "KESTREL_CUDA_COMPRESS": mode}


def step_env(cfg: Config, env: dict[str, str]) -> dict[str, str]:
    """Env for the precompile step: the configured arch unless the user chose one."""
    extra = dict(cfg.build.env)
    if cfg.build.cuda_compress:  # run() put compress_env's variables in `env`
        extra.update({k: env[k] for k in ("NVCC_APPEND_FLAGS", "KESTREL_CUDA_COMPRESS") if k in env})
    if not any(k in env or k in extra for k in ("KESTREL_KERNELS_CUDA_ARCH", "TORCH_CUDA_ARCH_LIST")):
        extra["KESTREL_KERNELS_CUDA_ARCH"] = ",".join(cfg.cuda_arch)
    return extra


# How the step is run: (argv, cwd=, env=, log=, what=, out=) -> None.
Runner = Callable[..., None]


def run_on_host(argv: list[str], *, cwd: Path, env: dict[str, str], log: Path, what: str, out: Path) -> None:
    """How the step runs by default; stages/build_wheels/container.py has the runner for an image (it
    writes `out` back here), and the cache, keyed the same way, is shared by both."""
    proc.run_logged(argv, cwd=cwd, env=env, log=log, what=what)


def run(
    cfg: Config,
    *,
    nvcc_version: str,
    log_dir: Path,
    use_cache: bool = True,
    runner: Runner = run_on_host,
    compilers: dict[str, str] | None = None,
) -> PrecompileResult:
    """Make `precompile_outputs` current: up to date, restored from the cache, or compiled once
    (always compiled, and the entry refreshed, with use_cache=False). `runner`/`compilers`: where the
    step runs and the host compilers there (default: this host's, cachekey.compilers)."""
    if not cfg.precompile:
        return PrecompileResult("none")
    if not cfg.precompile_outputs:
        raise ConfigError(
            "precompile is set but precompile_outputs is not",
            "set [tool.kestrel-release].precompile_outputs to the directory the step writes",
        )
    start = time.monotonic()
    env = {**os.environ, **cfg.build.env}
    env.update(compress_env(cfg, env))
    key = cache_key(cfg, nvcc_version, env, cachekey.compilers(env) if compilers is None else compilers)
    outputs = cfg.project_dir / cfg.precompile_outputs
    entry = toolchain.cache_dir() / "precompile" / key
    log = log_dir / "precompile.log"
    if use_cache and entry.is_dir() and tree(entry) == tree(outputs):
        status = "up-to-date"
    elif use_cache and entry.is_dir():
        restore(entry, outputs)
        status = "restored"
    else:
        argv = [a.replace("{python}", sys.executable) for a in cfg.precompile]
        runner(argv, cwd=cfg.project_dir, env=step_env(cfg, env), log=log, what="precompile", out=outputs)
        if not outputs.is_dir():
            raise BuildError(f"precompile ran but wrote no {outputs}", f"check precompile_outputs (log: {log})")
        entry.parent.mkdir(parents=True, exist_ok=True)
        store(outputs, entry, refresh=not use_cache)
        status = "compiled"
    return PrecompileResult(
        status, key, time.monotonic() - start, log if status == "compiled" else None, kernels_of(outputs)
    )


def kernels_of(outputs: Path) -> list[dict]:
    """[{name, cubin, arch, sha256}] from the step's manifest.json, if it writes one."""
    try:
        data = json.loads((outputs / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    variants = data.get("variants") if isinstance(data, dict) else None
    if not isinstance(variants, dict):
        return []
    return [
        {"name": name, "cubin": v.get("cubin"), "arch": v.get("arch"), "sha256": v.get("sha256")}
        for name, v in sorted(variants.items())
        if isinstance(v, dict)
    ]
