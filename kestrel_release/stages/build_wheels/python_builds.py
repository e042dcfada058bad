"""build's per-Python wheels: each Python's build from its own clean copy of the sources, in parallel, then its repair.

build_all runs one build per Python (the first failure stops the rest) and returns the repaired
wheels; a wheel the wheel cache holds for the same sources and toolchain is taken from it instead.
Kept apart from the stage's driver (stages/build_wheels/__init__.py), which precompiles, stages and collects.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path

from kestrel_release.adapters import frontend, git
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError
from kestrel_release.facts import pyversions
from kestrel_release.files import statedir
from kestrel_release.process import proc
from kestrel_release.project import build_env as _buildenv
from kestrel_release.project import cxx_std as _cxx_std
from kestrel_release.project import source_copy
from kestrel_release.stages.build_wheels import compile_cache as _compile_cache
from kestrel_release.stages.build_wheels import container as _container
from kestrel_release.stages.build_wheels import cuda_tools as _cuda_tools
from kestrel_release.stages.build_wheels import history as _history
from kestrel_release.stages.build_wheels import native as build_native
from kestrel_release.stages.build_wheels import pure as _pure
from kestrel_release.stages.build_wheels import repair as _repair
from kestrel_release.stages.build_wheels import wheelcache as _wheelcache
from kestrel_release.stages.build_wheels import wheelzip as _wheelzip
from kestrel_release.stages.build_wheels.plan import Plan
from kestrel_release.stages.verify.pypi import check_built_wheel
from kestrel_release.ui import progress as _progress


def build_all(
    cfg: Config,
    plan: Plan,
    envs: _buildenv.Envs | None,
    root: Path,
    logs: Path,
    steps: _progress.Steps,
    skip_cache: str = "",
    store: bool = True,
) -> dict[str, Path]:
    """python -> repaired wheel, built in parallel; the first failure stops the rest.
    `skip_cache`: why the wheel cache is not read (the flag); `store`: refresh it with what was built."""
    jobs = plan.fit.pythons if plan.fit else cfg.build.jobs or os.cpu_count() or 1  # fit.py: cores and memory
    # `jobs` wheel builds at once; a thread waiting for its repair does not hold a build slot.
    # The newest Python leads: 3.12 on compile extensions with the flags of every later one (-fwrapv before).
    lead = max(plan.pythons, key=pyversions.sort_key) if plan.ccache and not skip_cache else None
    slots = _compile_cache.LeadFirst(jobs, lead if len(plan.pythons) > 1 else None)
    pool = ThreadPoolExecutor(max_workers=max(1, len(plan.pythons)))
    repairer = _repair.Repairer(plan.source_date_epoch, plan.repair_tool)
    proc.reset()

    def one(py: str) -> Path:
        try:
            return _build_one(cfg, plan, py, envs, repairer, slots, root, logs, steps, skip_cache, store)
        finally:  # the lead's wheel may come from the wheel cache or fail before compiling: never leave the rest waiting
            slots.finished(py)

    try:
        futures = {pool.submit(one, py): py for py in plan.pythons}
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for fut in done:
            if fut.exception() is not None:
                raise fut.exception()  # type: ignore[misc]
        return {futures[f]: f.result() for f in futures}
    except BaseException:
        proc.kill_all()  # on a failure or Ctrl-C, no orphan keeps building
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        repairer.close()


def _build_one(
    cfg: Config,
    plan: Plan,
    py: str,
    envs: _buildenv.Envs | None,
    repairer: _repair.Repairer,
    slots: _compile_cache.LeadFirst,
    root: Path,
    logs: Path,
    steps: _progress.Steps,
    skip_cache: str,
    store: bool,
) -> Path:
    if plan.container is not None:  # built and repaired inside the image; not served from the wheel cache
        return _container.build_one(cfg, plan, py, root, logs, steps, copy_rules(cfg))
    name = f"python {py}"
    raw, fixed = root / f"raw-{py}", root / f"repaired-{py}"
    log = logs / f"build-{py}.log"
    venv = envs.get(py) if envs is not None else None
    # The env the backend runs in: the reusable one, or (isolation off) the interpreter's own.
    inspectable = venv or (None if cfg.build.isolation else plan.pythons[py])
    found = _wheelcache.lookup(cfg, plan, py, inspectable, {**os.environ, **plan.build_env(cfg)})
    hit = _wheelcache.get(found.key, root / f"cached-{py}") if found.key and not skip_cache else None
    _wheelcache.explain(cfg, py, found, hit=hit is not None, skipped=skip_cache)
    if hit is not None:
        _wheelcache.remember(cfg, py, found)
        steps.start(name)
        steps.finish(name, "ok", f"{hit.name} (cached: sources and toolchain unchanged)")
        return hit
    _cxx_std.refuse(cfg.project_dir, {**os.environ, **plan.build_env(cfg)}, inspectable)  # not minutes into the compile
    repairer.start()  # auditwheel's import overlaps this build
    try:
        settings = plan.config_settings(cfg, not skip_cache, found.inputs)
        with slots.slot(py):
            steps.start(name, "building")
            # Each Python builds from its own clean copy: never setuptools' in-tree build/ or egg-info.
            with source_copy.at(cfg.project_dir, clean_dir(cfg, py), **copy_rules(cfg)) as src:
                # In a reusable env the build is "not isolated" from that env only, which holds just the build requirements.
                argv = frontend.wheel_command(
                    plan.uv,
                    venv or plan.pythons[py],
                    src,
                    raw,
                    frontend=cfg.build.frontend,
                    isolation=cfg.build.isolation and venv is None,
                    config_settings=settings,
                )
                env = {**plan.build_env(cfg), **_compile_env(cfg, plan, py, src, found, logs, skip_cache)}
                env.update(_cuda_tools.cuda_home_env(src, env))  # before CPATH: that reads the toolkit's headers
                env.update(_cuda_tools.library_headers_env(inspectable, src, env))
                if plan.fit is not None:  # MAX_JOBS and the like, unless the user set them
                    env.update(plan.fit.env({**os.environ, **env}, lead=py == slots.lead))
                try:
                    plan.measured[py] = _history.run_measured(
                        argv, log=log, cwd=src, env=env, what=f"build for Python {py}"
                    )
                except BuildError as exc:  # a file the tree has but git ignores: say so, not just "No such file"
                    missing = source_copy.left_out(src, proc.tail(log, 400), git.ignored_files(cfg.project_dir))
                    if not missing:
                        raise
                    hint = source_copy.left_out_hint(missing)
                    raise BuildError(exc.message, f"{exc.hint}; {hint}" if exc.hint else hint) from None
                if "CCACHE_STATSLOG" in env:
                    _compile_cache.explain(py, Path(env["CCACHE_STATSLOG"]))
        wheel = _wheelzip.only_wheel(raw, py, f"the {cfg.build.frontend} frontend")
        if not _pure.needs_repair(wheel):  # pure Python: repair tools refuse it, and there is nothing to graft
            final = _wheelzip.normalize(wheel, plan.source_date_epoch)
        else:
            steps.start(name, "repairing")
            log = logs / f"repair-{py}.log"
            with build_native.floor_explained(cfg, wheel, logs / f"glibc-floor-{py}.log"):  # exit 4 naming symbols
                repairer.repair(
                    wheel,
                    fixed,
                    cfg.build.plat,
                    cfg.build.exclude,
                    log=log,
                    what=f"{plan.repair_tool.name} repair for Python {py}",
                )
                final = _wheelzip.normalize(
                    _wheelzip.only_wheel(fixed, py, plan.repair_tool.name), plan.source_date_epoch
                )
                build_native.check_min_glibc(cfg, final)
        check_built_wheel(final)  # PyPI's ZIP rules (pypi-zip): never hand out a wheel PyPI refuses
    except BuildError:
        steps.finish(name, "stopped" if proc.stopping() else "failed", f"log: {log}", _logs_of(logs, py))
        raise
    if store and found.key:
        _wheelcache.put(found.key, final, found.inputs)
        _wheelcache.remember(cfg, py, found)
    steps.finish(name, "ok", final.name, _logs_of(logs, py))
    return final


def _compile_env(
    cfg: Config, plan: Plan, py: str, src: Path, found: _wheelcache.Lookup, logs: Path, skip_cache: str
) -> dict[str, str]:
    """The compile cache's variables for Python `py`'s build (compile_cache.py); none without ccache,
    and none with --no-cache or --check-reproducible: those really compile."""
    if plan.ccache is None or skip_cache:
        return {}
    env = {**os.environ, **plan.build_env(cfg)}
    log = _compile_cache.statslog(logs, py)
    return _compile_cache.wiring(cfg, plan.ccache, plan.backend, src, env, found.facts or {}, log)


def _logs_of(logs: Path, py: str) -> list[Path]:
    """Python `py`'s build and repair logs, in the order they were written."""
    return [logs / f"build-{py}.log", logs / f"repair-{py}.log"]


def clean_dir(cfg: Config, py: str) -> Path:
    """Where Python `py`'s clean copy of the sources lives: a fixed place per project (outside the work
    tree), so a persistent CMake build dir (plan.config_settings) sees the same source dir each time."""
    return statedir.sources(cfg.project_dir) / py


def copy_rules(cfg: Config) -> dict:
    """What the copy holds beyond git's sources (the precompiled kernels, git-ignored) and never (the output)."""
    project = cfg.project_dir.resolve()
    out = cfg.out_path.resolve()
    outputs = (out, out.with_name(out.name + ".rehearsal"))  # the rehearsal dir: release/rehearsal.py
    return {
        "include": [cfg.precompile_outputs] if cfg.precompile_outputs else [],
        "exclude": [o.relative_to(project).as_posix() for o in outputs if o.is_relative_to(project)],
    }
