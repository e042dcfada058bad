"""build: precompile once, one wheel per Python in parallel, repair, collect atomically.

Nothing reaches `--out` unless every wheel built and repaired: the work happens
in a staging directory next to it, which replaces the output in one rename.
Wheels build in reusable per-Python build envs (kestrel_release/project/build_env.py: exactly the
project's build requirements, prepared while precompile runs) with a persistent
build dir, so a warm rebuild is incremental; one auditwheel child repairs them
all (_repair). Each Python builds from its own clean copy of the sources (source_copy.py),
never in the user's tree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.adapters import host, toolchain
from kestrel_release.config.model import Config
from kestrel_release.errors import Interrupted
from kestrel_release.facts import pyversions
from kestrel_release.files import fsutil, safepaths, statedir
from kestrel_release.output_dir import outputs
from kestrel_release.process import proc
from kestrel_release.project import build_env as _buildenv
from kestrel_release.records import documents
from kestrel_release.records.build_documents import BuildDocument, StepDocument
from kestrel_release.stages.build_wheels import collect as _collected
from kestrel_release.stages.build_wheels import container_precompile as _container_precompile
from kestrel_release.stages.build_wheels import extras as _extras
from kestrel_release.stages.build_wheels import fit as _fit
from kestrel_release.stages.build_wheels import history as _history
from kestrel_release.stages.build_wheels import native as build_native
from kestrel_release.stages.build_wheels import platforms as build_platforms
from kestrel_release.stages.build_wheels import precompile
from kestrel_release.stages.build_wheels import python_builds as _python_builds
from kestrel_release.stages.build_wheels import size_plan as _size_plan
from kestrel_release.stages.build_wheels import size_plan_text as _size_plan_text
from kestrel_release.stages.build_wheels import variant_build as _variant
from kestrel_release.stages.build_wheels import wheelcache as _wheelcache
from kestrel_release.stages.build_wheels import wheelzip as _wheelzip
from kestrel_release.stages.build_wheels.plan import Plan, preflight
from kestrel_release.ui import console
from kestrel_release.ui import progress as _progress
from kestrel_release.variants import hub_layout as _hub
from kestrel_release.variants import pep825_wheel as _pep825


@dataclass
class BuildResult:
    out_dir: Path
    wheels: list[dict]
    precompile: precompile.PrecompileResult
    steps: list[_progress.Step] = field(default_factory=list)
    seconds: float = 0.0
    logs: Path | None = None
    warnings: list[str] = field(default_factory=list)
    reproducible: bool | None = None
    platforms: build_platforms.PlatformPlan | None = None  # built here, and left for other machines
    hub: _hub.HubLayout | None = None  # --layout kernels-hub: build/<variant>/ for the kernels library
    pep825: _pep825.Pep825Result | None = None  # variants.format = "pep825": <out>/pep825/
    size_plan: _size_plan.SizePlan | None = None  # the wheels against every limit, and each lever's effect

    def document(self) -> BuildDocument:
        plats = self.platforms or build_platforms.PlatformPlan((), None)
        return BuildDocument(
            platforms=plats.document(),
            left_for_others=plats.left_documents(),
            out_dir=str(self.out_dir),
            wheels=self.wheels,
            precompile=self.precompile.document(),
            steps=[_step(s) for s in self.steps],
            seconds=round(self.seconds, 2),
            logs=str(self.logs) if self.logs else None,
            warnings=self.warnings,
            reproducible=self.reproducible,
            hub=self.hub.document() if self.hub else None,
            pep825=self.pep825.document() if self.pep825 else None,
            size_plan=self.size_plan.document() if self.size_plan else None,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def _step(step: _progress.Step) -> StepDocument:
    seconds = round(step.seconds, 2) if step.seconds is not None else None
    return StepDocument(step.name, step.state, step.detail, seconds)


def run(
    cfg: Config,
    *,
    gpu_check: bool = True,
    check_reproducible: bool = False,
    platforms: tuple[str, ...] = (),
    use_cache: bool = True,
    layout: str | None = None,
    variant: _variant.VariantRun | None = None,
) -> BuildResult:
    """Build, repair and collect every configured wheel into cfg.out_path (see module doc).
    `platforms` (--platform) narrows the configured platforms to build here; `use_cache=False`
    (--no-cache) rebuilds everything (precompile included) and refreshes the caches; `variant`: one
    torch x CUDA variant's build (variant_build.py drives those)."""
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg)  # a project without [project]: the backend names it (cached)
    try:
        result = _run(cfg, gpu_check, check_reproducible, platforms, use_cache, variant)
        if variant is None:  # a variant's build: run_variants writes them once, from the whole output
            _extras.write(cfg, result, layout)  # kernels-hub layout, PEP 825 wheels: from the wheels just written
            result.size_plan = _size_plan_text.for_build(cfg, result.out_dir, result.wheels)
        return result
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (cli maps it): children are dead, staging is gone
        proc.kill_all()
        raise Interrupted(f"build interrupted; {cfg.out_path} was left untouched") from None


def run_variants(cfg: Config, selectors: tuple[str, ...] = (), **kwargs: Any) -> _variant.VariantsResult:
    """A project with [tool.kestrel-release.variants]: one `run` per torch x CUDA variant of this
    machine's platform (all, or those `selectors` name: --variant); see variant_build.py."""
    layout = kwargs.pop("layout", None)
    matrix = _variant.run(cfg, selectors, run, **kwargs)
    _extras.write(cfg, matrix, layout)  # every variant's build/<variant>/ and PEP 825 wheels
    return matrix


def _run(
    cfg: Config,
    gpu_check: bool,
    check_reproducible: bool,
    narrow: tuple[str, ...],
    use_cache: bool,
    variant: _variant.VariantRun | None = None,
) -> BuildResult:
    start = time.monotonic()
    check_paths(cfg)
    plats = build_platforms.plan(cfg.platforms, cfg.python, host.current(), narrow, cfg.build.plat)
    cfg = build_platforms.for_build(cfg, plats)  # a manylinux platform is its own repair target
    plan = preflight(cfg, gpu_check=gpu_check)
    plan.pythons = build_native.pythons_to_build(cfg, plan.pythons)  # abi3/py3: one build
    if variant is not None:  # keyed by the wheel cache (tool versions are inputs)
        plan.tool_versions["variant"] = variant.variant.name
    for warning in plan.warnings:
        console.warn(warning)
    plan.fit = _fit.announce(cfg, plan, lead=bool(plan.ccache) and use_cache and not check_reproducible)
    with fsutil.project_lock(cfg.project_dir, "build"):
        logs = statedir.build_logs(cfg.project_dir)  # outside the work tree: never untracked in git
        safepaths.collect_leftovers(cfg.out_path.parent, cfg.out_path, swapped=cfg.out_path.name)
        names = ["precompile", *(f"python {py}" for py in plan.pythons)]
        envs = _start_envs(cfg, plan, logs, variant)
        try:
            with _progress.Steps(names) as steps:
                pre = _precompile(cfg, plan, logs, steps, use_cache)
                if variant is not None:  # before any compiler runs: the env's torch is the variant's
                    plan.tool_versions["torch"] = _variant.env_torch(variant, envs, plan.pythons)
                # After precompile: cubins are sources of the wheel.
                plan.source = _wheelcache.source_digest(cfg, _python_builds.copy_rules(cfg))
                with fsutil.staging_dir(cfg.out_path) as stage:
                    # --check-reproducible compares two real builds: its first pass reads no cache either.
                    read = "--no-cache" if not use_cache else "--check-reproducible" if check_reproducible else ""
                    built = _python_builds.build_all(cfg, plan, envs, stage / "a", logs, steps, skip_cache=read)
                    built = build_native.one_per_wheel(cfg, built)  # abi3 found from the tags: one wheel
                    build_native.check_metadata(cfg, built)
                    oldest = min(built, key=pyversions.sort_key)
                    plan.tool_versions["torch"] = (
                        (
                            None  # a container's Python is not runnable here
                            if plan.container is not None
                            else build_native.torch_record(
                                (envs.get(oldest) if envs is not None else None) or plan.pythons[oldest]
                            )
                        )
                        if variant is None
                        else plan.tool_versions["torch"]
                    )
                    reproducible = None
                    if check_reproducible:
                        again = _python_builds.build_all(
                            cfg, plan, envs, stage / "b", logs, steps, skip_cache=read, store=False
                        )
                        _wheelzip.assert_identical(built, again)
                        reproducible = True
                    build_platforms.check_built(plats, [p.name for p in built.values()])
                    wheels = _collected.collect(cfg, plan, built, pre, stage / "out", plats, variant)
                    package = variant.package(cfg.name) if variant is not None else cfg.name
                    outputs.install(stage / "out", cfg.out_path, package)  # only its own files; others stay
            _history.save(cfg.project_dir, plan.measured)  # the next build's parallelism and forecast
        except BaseException:
            proc.kill_all()  # env creation or precompile may still be running
            raise
        finally:
            if envs is not None:
                envs.close()
    return BuildResult(
        cfg.out_path,
        wheels,
        pre,
        list(steps.steps.values()),
        time.monotonic() - start,
        logs,
        plan.warnings,
        reproducible,
        plats,
    )


def check_paths(cfg: Config) -> None:
    """Refuse (exit 2, nothing written) an output or log dir that would hold the user's own files."""
    safepaths.check_target(cfg.out_path, cfg.project_dir, "output directory")
    toolchain.cache_dir()  # refuses a KESTREL_RELEASE_CACHE_DIR that is the home directory


def _start_envs(
    cfg: Config, plan: Plan, logs: Path, variant: _variant.VariantRun | None = None
) -> _buildenv.Envs | None:
    """Reusable build envs replace uv's per-build isolated ones; not with --no-isolation or pypa/build.
    A variant always builds in one (its torch pinned), whatever the frontend."""
    if variant is not None and cfg.build.isolation:
        return _buildenv.Envs(
            plan.uv, plan.pythons, cfg.project_dir, logs, plan.build_env(cfg), variant.pins, cfg.build.requires
        )
    if not cfg.build.isolation or cfg.build.frontend != "uv" or plan.container is not None:
        return None  # a container build carries its requirements in (stages/build_wheels/container.py)
    return _buildenv.Envs(plan.uv, plan.pythons, cfg.project_dir, logs, plan.build_env(cfg), extra=cfg.build.requires)


def _precompile(
    cfg: Config, plan: Plan, logs: Path, steps: _progress.Steps, use_cache: bool = True
) -> precompile.PrecompileResult:
    steps.start("precompile")
    where: dict = {}
    if plan.container is not None and _container_precompile.wanted(cfg):  # in the image, its toolkit
        where = {
            "runner": _container_precompile.runner(cfg, plan.container, _python_builds.copy_rules(cfg)),
            "compilers": {**plan.container.compilers, "nvcc": plan.container.nvcc},
        }
    try:
        if plan.toolkits:  # one step per (toolkit, arch)
            from kestrel_release.stages.build_wheels import precompile_pairs

            result = precompile_pairs.run(cfg, plan.toolkits, log_dir=logs, use_cache=use_cache, **where)
        else:
            nvcc = plan.nvcc_version or ""
            result = precompile.run(cfg, nvcc_version=nvcc, log_dir=logs, use_cache=use_cache, **where)
    except BaseException:
        steps.finish("precompile", "failed", f"see {logs / 'precompile.log'}", _precompile_logs(logs))
        raise
    if where:
        result.ran_in = cfg.build.container
    detail = {
        "none": "no precompile step configured",
        "compiled": "compiled (cache stored)" if not where else f"compiled in {cfg.build.container} (cache stored)",
        "restored": "restored from cache",
        "up-to-date": "up to date",
    }[result.status]
    steps.finish(
        "precompile",
        "skipped" if result.status == "none" else "ok",
        (f"{detail}, {len(result.kernels)} kernels" if result.kernels else detail)
        + (f" for {len(result.pairs)} (toolkit, arch) pairs" if result.pairs else ""),
        _precompile_logs(logs) if result.status == "compiled" else (),
    )
    return result


def _precompile_logs(logs: Path) -> list[Path]:
    """The logs precompile writes: one, or one per (toolkit, arch) pair (precompile_pairs)."""
    return sorted(logs.glob("precompile*.log"))


def render(result: BuildResult) -> None:
    """The final table: one row per step, then where the wheels are."""
    console.console.print(_progress.table(result.steps))
    console.ok(
        f"{len(result.wheels)} wheels in {result.out_dir} ({result.seconds:.1f} s)"
        + (", byte-identical across two builds" if result.reproducible else "")
    )
    from kestrel_release.stages.verify.native import floor_text

    for floor in sorted({w["glibc_floor"] for w in result.wheels if w.get("glibc_floor")}):
        console.info(floor_text(tuple(int(p) for p in floor.split("."))))  # type: ignore[arg-type]
    if result.platforms is not None:
        build_platforms.render_left(result.platforms)
    if result.size_plan is not None:
        _size_plan_text.render(result.size_plan)
    _extras.render(result)
