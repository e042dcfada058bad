"""build on a project with [tool.kestrel-release.variants]: one build per torch x CUDA variant.

Each variant builds through the ordinary build (stages/build_wheels/__init__.run) with its own build env
(build_env.TorchPin: `torch==X.Y.*` from PyPI when PyPI's torch of that minor is that CUDA build, else
from the variant's per-CUDA index, or the torch the interpreter already has when it is that minor and
CUDA), the toolkit of its CUDA, and its own output folder `<out>/variants/<name>/`; the wheels are
then made variant wheels (variant_wheel.py). The default variant's wheels also go to `<out>/` (what
PyPI gets). A variant whose torch index this machine cannot reach is listed with the command to run
where it can, not failed. Precompile runs once per (toolkit, arch): the second variant of a toolkit
restores it from the precompile cache.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kestrel_release.config.model import Config
from kestrel_release.config.variants import (
    Variant,
    VariantError,
    VariantsConfig,
)
from kestrel_release.errors import BuildError, ConfigError, PreflightError
from kestrel_release.facts import pyversions
from kestrel_release.files import fsutil
from kestrel_release.output_dir import manifest, outputs
from kestrel_release.process import proc
from kestrel_release.project.build_env import TorchPin
from kestrel_release.records import documents
from kestrel_release.records.build_documents import OutcomeDocument, VariantsDocument
from kestrel_release.stages.build_wheels import variant_torch
from kestrel_release.ui import console


@dataclass
class VariantRun:
    """What one variant's build needs beyond its Config (stages/build_wheels/__init__ reads it)."""

    variant: Variant
    config: VariantsConfig
    pins: dict[str, TorchPin]  # python -> the torch its build env holds

    @property
    def default(self) -> bool:
        return self.config.is_default(self.variant)

    def package(self, name: str) -> str:
        return self.config.project_name(name, self.variant)

    def version(self, version: str) -> str:
        return self.config.wheel_version(version, self.variant)

    def record(self) -> dict[str, Any]:
        return {**self.variant.to_json(), "default": self.default}


@dataclass
class Outcome:
    variant: Variant
    default: bool
    status: str  # "built" | "left"
    out_dir: Path
    wheels: list[dict] = field(default_factory=list)
    torch: dict | None = None
    why: str = ""
    command: str = ""
    seconds: float = 0.0
    torch_from: str = ""  # "PyPI", the index URL, or "interpreter <path>" (its own torch, reused)

    def document(self) -> OutcomeDocument:
        return OutcomeDocument(
            variant={**self.variant.to_json(), "default": self.default},
            status=self.status,
            out_dir=str(self.out_dir),
            wheels=self.wheels,
            torch=self.torch,
            why=self.why or None,
            command=self.command or None,
            torch_from=self.torch_from or None,
            seconds=round(self.seconds, 2),
        )


@dataclass
class VariantsResult:
    out_dir: Path
    outcomes: list[Outcome]
    default_wheels: list[dict]
    seconds: float = 0.0
    hub: Any = None  # --layout kernels-hub (hub_layout.HubLayout), written once for every variant
    pep825: Any = None  # variants.format = "pep825" (pep825_wheel.Pep825Result)

    @property
    def wheels(self) -> list[dict]:
        return [w for o in self.outcomes for w in o.wheels]

    def document(self) -> VariantsDocument:
        return VariantsDocument(
            out_dir=str(self.out_dir),
            variants=[o.document() for o in self.outcomes],
            built=[o.variant.name for o in self.outcomes if o.status == "built"],
            left_for_others=[o.variant.name for o in self.outcomes if o.status == "left"],
            default_wheels=self.default_wheels,
            wheels=self.wheels,
            seconds=round(self.seconds, 2),
            hub=self.hub.document() if self.hub else None,
            pep825=self.pep825.document() if self.pep825 else None,
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def selected(cfg: Config, selectors: tuple[str, ...]) -> list[Variant]:
    """The variants of this machine's platform to build (every one, or those --variant names)."""
    from kestrel_release.adapters import host

    vcfg = cfg.variants
    if vcfg is None:
        raise ConfigError(
            "--variant needs a [tool.kestrel-release.variants] table",
            'add one (torch = ["2.13"], cuda = ["13.0"]) or drop --variant',
        )
    here = host.current()
    try:
        return vcfg.select(selectors, here.system, here.arch) if selectors else vcfg.matrix(here.system, here.arch)
    except VariantError as exc:
        raise ConfigError(str(exc), "pick names from the list, or words like torch2.13 and cu130") from None


def run(cfg: Config, selectors: tuple[str, ...], build: Callable[..., Any], **build_kwargs: Any) -> VariantsResult:
    """Build every selected variant with `build` (stages.build_wheels.run, passed in: this module sits below
    it) (see module doc); the default's wheels also into cfg.out_path."""
    from kestrel_release.adapters import pythons as find_pythons

    start = time.monotonic()
    chosen = selected(cfg, selectors)  # ConfigError without a variants table
    vcfg = cfg.variants
    assert vcfg is not None
    if cfg.build.container:
        raise ConfigError("variants are built on this host; build.container is not supported with them yet")
    pys = tuple(p for p in cfg.python if not vcfg.python or p in vcfg.python)
    if not pys:
        raise ConfigError(
            f"variants.python ({', '.join(vcfg.python)}) shares no Python with python ({', '.join(cfg.python)})"
        )
    interpreters = find_pythons.find_all(pys)
    cfg = _named(cfg, vcfg, chosen, interpreters[min(pys, key=pyversions.sort_key)])
    outcomes = []
    for v in chosen:
        out_dir = cfg.out_path / "variants" / v.name
        began = time.monotonic()
        console.step(f"variant {v.name}" + (" (default)" if vcfg.is_default(v) else ""))
        outcome = _one(cfg, vcfg, v, out_dir, pys, interpreters, build, build_kwargs)
        outcome.seconds = time.monotonic() - began
        outcomes.append(outcome)
    defaults = next((o for o in outcomes if o.default and o.status == "built"), None)
    default_wheels = _install_default(cfg, defaults) if defaults is not None else []
    return VariantsResult(cfg.out_path, outcomes, default_wheels, time.monotonic() - start)


def _one(
    cfg: Config,
    vcfg: VariantsConfig,
    v: Variant,
    out_dir: Path,
    pys: tuple[str, ...],
    interpreters: dict[str, Path],
    build: Callable[..., Any],
    build_kwargs: dict[str, Any],
) -> Outcome:
    from kestrel_release.stages.build_wheels import variant_env

    default = vcfg.is_default(v)
    again = f"kestrel-release build --variant {v.name}"
    pins: dict[str, TorchPin] = {}
    for py in pys:
        pin, why = variant_torch.torch_pin(cfg, vcfg, v, interpreters[py])
        if pin is None:
            return Outcome(v, default, "left", out_dir, why=why, command=f"on another machine: {again}")
        pins[py] = pin
    unserved = variant_env.unserved(vcfg, v, pins)
    if unserved:
        return Outcome(
            v,
            default,
            "left",
            out_dir,
            why=unserved,
            command=f'exclude it (exclude = [{{torch = "{v.torch}", cuda = "{v.cuda}"}}]) or set '
            f'variants.index."{v.cuda}" to an index that has it',
        )
    try:
        extra_env = {**toolkit_env(cfg, v), **variant_env.stable_abi_env(cfg, v)}
    except PreflightError as exc:
        return Outcome(v, default, "left", out_dir, why=str(exc), command=f"where CUDA {v.cuda} is installed: {again}")
    cfg_v = dataclasses.replace(
        cfg,
        out_dir=str(out_dir),
        python=pys,
        cuda=(v.cuda,) if cfg.cuda or (cfg.precompile and len(cfg.cuda_arch) > 1) else cfg.cuda,
        build=dataclasses.replace(cfg.build, env={**cfg.build.env, **extra_env}),
    )
    try:
        result = build(cfg_v, variant=VariantRun(v, vcfg, pins), **build_kwargs)
    except BuildError as exc:
        variant_env.raise_unstable(exc, v)
        unreachable = _unreachable_index(exc, pins)
        if unreachable is None:
            raise
        proc.reset()  # the failed build stopped its children; the next variant starts afresh
        host = urlsplit(unreachable).netloc or unreachable  # "PyPI" stays as it is
        return Outcome(
            v,
            default,
            "left",
            out_dir,
            why=f"torch {v.torch} for CUDA {v.cuda} comes from {unreachable}, which this machine cannot reach",
            command=f"on a machine that reaches {host}: {again} (then `kestrel-release assemble`)",
        )
    data = manifest.load(out_dir, vcfg.project_name(cfg.name, v))
    torch = ((data.toolchain if data else None) or {}).get("torch")
    source = ", ".join(sorted({variant_torch.pin_source(p, interpreters[py]) for py, p in pins.items()}))
    return Outcome(v, default, "built", out_dir, result.wheels, torch, torch_from=source)


def _named(cfg: Config, vcfg: VariantsConfig, chosen: list[Variant], python: Path) -> Config:
    """A project without [project] (setup.py) named by its backend once, in a variant's build env: the
    isolated default would install the project's unpinned torch (impossible offline, gigabytes online).
    The interpreter's own torch first, else the default variant's, else the first's."""
    from kestrel_release.project import meta as project_meta

    if cfg.metadata_source != "backend" or cfg.name:
        return cfg
    pins = [(v, variant_torch.torch_pin(cfg, vcfg, v, python)[0]) for v in chosen]
    usable = [(v, p) for v, p in pins if p is not None]
    usable.sort(key=lambda vp: (not vp[1].reuse, not vcfg.is_default(vp[0])))
    return project_meta.resolve(cfg, torch=usable[0][1] if usable else None)


def finish_wheel(cfg: Config, run: VariantRun, wheel: Path, version: str, source_date_epoch: int) -> Path:
    """The built wheel as this variant's wheel (variant_wheel.retag)."""
    from kestrel_release.stages.build_wheels import variant_wheel

    return variant_wheel.retag(
        wheel,
        name=run.package(cfg.name),
        version=run.version(version),
        torch_pin=run.variant.requirement,
        source_date_epoch=source_date_epoch,
    )


def env_torch(run: VariantRun, envs: Any, pythons: dict[str, Path]) -> dict | None:
    """The torch record of every build env of this variant (version, CUDA, C++ ABI), checked first."""
    from kestrel_release.adapters import torch_probe

    record = None
    for py, interpreter in sorted(pythons.items()):
        env = envs.get(py) if envs is not None else None
        record = torch_probe.probe(env or interpreter)
        check_torch(run, record)
    return record


def check_torch(run: VariantRun, info: dict | None) -> None:
    """The build env's torch is the variant's (PyPI's torch of a minor can be another CUDA build)."""
    v = run.variant
    if info is None:
        raise BuildError(f"variant {v.name}: the build env has no importable torch", "see the env logs under -v")
    if not variant_torch.matches(v, info):
        from kestrel_release.adapters import torch_probe

        raise BuildError(
            f"variant {v.name} needs torch {v.torch} for CUDA {v.cuda}, but its build env has "
            f"{torch_probe.describe(info)}",
            f'set [tool.kestrel-release.variants].index."{v.cuda}" to the index of that build',
        )


def toolkit_env(cfg: Config, v: Variant) -> dict[str, str]:
    """The variables that point a build compiling CUDA (torch's CUDAExtension, CMake) at the
    variant's toolkit; {} when the build compiles no CUDA outside a precompile step."""
    from kestrel_release.adapters import cuda_toolkit
    from kestrel_release.stages.build_wheels import cuda_tools

    if cfg.precompile or not cuda_tools.why_needed(cfg):
        return {}
    env = {**os.environ, **cfg.build.env}
    tk = cuda_toolkit.resolve((v.cuda,), env=env)[v.cuda]
    if tk.nvcc is None:
        raise PreflightError(
            f"CUDA {v.cuda} from PyPI has no nvcc (NVIDIA ships none for CUDA {v.cuda_major} there), and "
            f"{cuda_tools.why_needed(cfg)} needs one"
        )
    path = os.pathsep.join([str(tk.nvcc.parent), env.get("PATH", "")])
    return {"CUDA_HOME": str(tk.root), "CUDACXX": str(tk.nvcc), "PATH": path}


def _unreachable_index(exc: BuildError, pins: dict[str, TorchPin]) -> str | None:
    """The index (URL, or "PyPI") a failed env creation could not reach, or None (another failure)."""
    from kestrel_release.adapters import uv

    indexes = {p.index or "PyPI" for p in pins.values() if not p.reuse}  # an offline host reaches no index
    if not indexes:
        return None
    text = f"{exc.message}\n{exc.hint or ''}"
    log = text.split("(log: ", 1)[1].split(")", 1)[0] if "(log: " in text else ""
    if log:
        try:
            text += "\n" + Path(log).read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    kind, _ = uv.install_failure(text)
    return sorted(indexes)[0] if kind == "unreachable" else None


def _install_default(cfg: Config, outcome: Outcome) -> list[dict]:
    """The default variant's wheels, manifest and sums also into `<out>/` (only the tool's own files)."""
    vcfg = cfg.variants
    assert vcfg is not None
    package = vcfg.project_name(cfg.name, outcome.variant)
    found = manifest.locate(outcome.out_dir, package)
    if found is None:
        return []
    with fsutil.staging_dir(cfg.out_path / ".default-variant") as stage:
        for path in [found, manifest.sums_for(found), *manifest.wheel_paths(outcome.out_dir, package)]:
            shutil.copy2(path, stage / path.name)
        outputs.install(stage, cfg.out_path, package)
    return outcome.wheels


def render(result: VariantsResult) -> None:
    from rich.table import Table

    table = Table(title="variants", show_edge=False)
    for col in ("variant", "status", "torch", "wheels / what to do"):
        table.add_column(col)
    for o in result.outcomes:
        name = o.variant.name + (" (default)" if o.default else "")
        torch = (o.torch or {}).get("version") or ""
        detail = ", ".join(w["filename"] for w in o.wheels) if o.status == "built" else "not built here (see below)"
        table.add_row(name, o.status, str(torch), detail)
    console.console.print(table)
    built = [o for o in result.outcomes if o.status == "built"]
    console.ok(
        f"{len(built)} of {len(result.outcomes)} variants built in {result.out_dir / 'variants'} ({result.seconds:.1f} s)"
    )
    if result.default_wheels:
        console.info(f"the default variant's wheels are also in {result.out_dir} (what PyPI gets)")
    for o in result.outcomes:
        if o.status == "left":
            console.warn(f"{o.variant.name} not built here: {o.why}; {o.command}")
    from kestrel_release.stages.build_wheels import extras

    extras.render(result)  # the kernels-hub layout, PEP 825 wheels
