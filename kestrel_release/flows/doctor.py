"""doctor: is this machine fit to build and release the configured kernel package?

Each check is ok, warn or fail, with a fix. A fail means something the
configuration requires is missing (exit 3); a missing GPU fails only when
`requires_gpu`, and missing credentials never fail (build does not need them).
"""

from __future__ import annotations

import os
from pathlib import Path

from kestrel_release.adapters import (
    git,
    pythons,
    toolchain,
    torch_probe,
    uv,
)
from kestrel_release.config.model import Config
from kestrel_release.errors import KestrelError, PreflightError
from kestrel_release.flows import doctor_cuda, doctor_cxx_std
from kestrel_release.flows.doctor_report import Check, DoctorReport
from kestrel_release.process import pools
from kestrel_release.ui import console


def run(cfg: Config) -> DoctorReport:
    """Run every check (the slow ones in parallel); never raises for a missing piece."""
    with pools.threads(4) as pool:
        gpu_f = pool.submit(_gpu, cfg)
        py_f = pool.submit(_pythons_or_container, cfg)
        git_f = pool.submit(_git, cfg)
        checks = [
            gpu_f.result(),
            *doctor_cuda.nvcc(cfg),
            *doctor_cuda.package_cuda(cfg),
            *doctor_cuda.torch_cuda_home(cfg),
            *doctor_cuda.torch_cxx(cfg),
            *py_f.result(),
            _uv(),
            *_repair_tools(),
            _glibc(cfg),
            git_f.result(),
            *_metadata(cfg),
            *[Check("C++ standard for torch", *row) for row in filter(None, [doctor_cxx_std.row(cfg)])],
            *_credentials(cfg),
        ]
    return DoctorReport(checks)


def _gpu(cfg: Config) -> Check:
    from kestrel_release.stages.build_wheels import cuda_tools, host_fit

    if not cuda_tools.gpu_relevant(cfg):  # the same answer build's preflight acts on
        return Check("GPU", "ok", "not needed: the build compiles no CUDA code (required_sass = [])")
    fits, gpus, why = host_fit.gpu_fit(cfg)
    names = ", ".join(f"{g.name} ({g.sm}, driver {g.driver}, via {g.source})" for g in gpus)
    if fits:
        return Check("GPU", "ok", names)
    status = "fail" if cfg.requires_gpu else "warn"
    detail = f"no {host_fit.arch_words(cfg)} GPU: {names or why}"
    if not cfg.requires_gpu:
        detail += " (kernels are cross-compiled, not run)"
    return Check("GPU", status, detail, "run on an H100 host with the NVIDIA driver installed")


def _pythons(cfg: Config) -> list[Check]:
    checks = []
    with pools.threads(len(cfg.python)) as pool:
        found = dict(zip(cfg.python, pool.map(_find, cfg.python), strict=True))
        torches = dict(zip(found, pool.map(torch_probe.probe, found.values()), strict=True))
    for py, path in found.items():
        if path is None:
            checks.append(
                Check(
                    f"Python {py}",
                    "fail",
                    "not found (searched PATH, pyenv, uv, conda)",
                    f"uv python install {py} (or pyenv install {py}), or drop it from --python",
                )
            )
            continue
        torch = torches[py]
        extra = f"; {torch_probe.describe(torch)}" if torch else ""
        clash = _torch_nvcc_clash(cfg, torch) if torch else _torch_missing(cfg)
        if clash:
            checks.append(Check(f"Python {py}", "fail", f"{path}{extra}; {clash[0]}", clash[1]))
        else:
            checks.append(Check(f"Python {py}", "ok", f"{path}{extra}"))
    return checks


def _torch_missing(cfg: Config) -> tuple[str, str] | None:
    """build.isolation off builds with this Python's own packages: a setup.py importing torch then fails
    at its first line, after the metadata step has already said so in the backend's words."""
    from kestrel_release.stages.build_wheels import cuda_tools

    if cfg.build.isolation or not cuda_tools.builds_with_torch(cfg.project_dir):
        return None
    return (
        "no torch to import, which setup.py imports: build.isolation = false builds with this Python's own packages",
        f"in {cfg.project_dir / 'pyproject.toml'} [tool.kestrel-release.build], replace isolation = false "
        'with requires = ["torch"] (each build env installs it), or install torch into this Python',
    )


def _torch_nvcc_clash(cfg: Config, torch: dict) -> tuple[str, str] | None:
    """torch's cpp_extension refuses an nvcc of another CUDA major than torch was built with, minutes into
    the build: with build.isolation off the build uses this Python's torch, so compare the two before."""
    from kestrel_release.stages.build_wheels import cuda_tools

    wanted = str(torch.get("cuda") or "")
    if cfg.build.isolation or not wanted or not cuda_tools.builds_cuda_with_torch(cfg.project_dir):
        return None
    home, _source = cuda_tools.torch_cuda_home({**os.environ, **cfg.build.env})
    nvcc = home / "bin" / "nvcc" if home else None
    if nvcc is None or not nvcc.exists():
        return None  # the CUDA_HOME row says what is missing
    try:
        have = toolchain.nvcc_version(nvcc)
    except KestrelError:
        return None  # the toolkit rows say what is wrong with it
    if have.split(".")[0] == wanted.split(".")[0]:
        return None
    return (
        f"torch was built with CUDA {wanted}, the build's nvcc ({nvcc}) is CUDA {have}: torch refuses to build "
        "an extension across CUDA majors",
        f"point CUDA_HOME at a CUDA {wanted.split('.')[0]}.x toolkit, or install a torch built for CUDA {have.split('.')[0]}",
    )


def _pythons_or_container(cfg: Config) -> list[Check]:
    """With build.container the image's engine, image and Pythons build the wheels, not this host's."""
    if not cfg.build.container:
        return _pythons(cfg)
    from kestrel_release.stages.build_wheels import container

    return [Check(*row) for row in container.doctor(cfg)]


def _find(version: str) -> Path | None:
    try:
        return pythons.find_interpreter(version)
    except PreflightError:
        return None


def _uv() -> Check:
    try:
        path = uv.find_uv()
    except PreflightError as exc:
        return Check("uv", "fail", exc.message, exc.hint or "")
    return Check("uv", "ok", f"{uv.version(path)} at {path}")


def _repair_tools() -> list[Check]:
    """This OS's repair tools (auditwheel+patchelf, delvewheel or delocate), as the repair interface names them."""
    from kestrel_release.adapters import host, repair

    return [
        Check(t.name, "ok", t.found) if t.found else Check(t.name, "fail", t.problem, t.fix)
        for t in repair.for_system(host.current().system).checks()
    ]


def _glibc(cfg: Config) -> Check:
    from kestrel_release.stages.build_wheels import host_fit

    need, have, older = host_fit.glibc_fit(cfg)
    if not (need and have):
        return Check("glibc", "warn", f"host glibc {have or 'unknown'}; target {cfg.build.plat}")
    if older:
        return Check(
            "glibc",
            "fail",
            f"host glibc {have} is older than {cfg.build.plat} needs",
            "build on a newer host, or lower build.plat",
        )
    return Check("glibc", "ok", f"host glibc {have} >= {cfg.build.plat}")


def _git(cfg: Config) -> Check:
    state = git.state(cfg.project_dir)
    if state.root is None or state.commit is None:
        what = "not a git checkout" if state.root is None else "git repository without a readable HEAD"
        return Check(
            "git",
            "warn",
            f"{what}: builds use a fixed SOURCE_DATE_EPOCH",
            "build from a git checkout so the manifest records the commit",
        )
    if state.dirty:
        return Check(
            "git",
            "warn",
            f"{state.branch} @ {(state.commit or '')[:12]}, uncommitted changes",
            "commit first: release builds should come from a clean tree",
        )
    return Check("git", "ok", f"{state.branch} @ {(state.commit or '')[:12]}, clean")


def _metadata(cfg: Config) -> list[Check]:
    """A project without [project]: can its build backend name it, the way builds will ask (build.isolation)?"""
    if cfg.metadata_source != "backend":
        return []
    import time

    from kestrel_release.project import meta as project_meta

    # The backend runs in the build's environment: the first time, that installs the build requirements (a
    # torch extension's isolated torch: a minute or more), so say so before the wait, and how long it took.
    requires = [*_build_requires(cfg.project_dir), *cfg.build.requires] if cfg.build.isolation else []
    what = f"installs {', '.join(requires)} the first time" if requires else "runs setup.py"
    console.step(f"project metadata: asking the build backend ({what})")
    started = time.monotonic()
    try:
        meta = project_meta.for_config(cfg)
    except KestrelError as exc:  # the cause (the installer's or backend's words) and its fitting hint
        return [Check("project metadata", "fail", exc.message, exc.hint or "")]
    detail = f"{meta.name} {meta.version} (from the build backend, {time.monotonic() - started:.1f} s)"
    return [Check("project metadata", "ok", detail)]


def _build_requires(project_dir: Path) -> list[str]:
    """[build-system].requires as written (setuptools' legacy default when there is none)."""
    from kestrel_release._compat import tomllib

    try:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ["setuptools"]
    requires = data.get("build-system", {}).get("requires", ["setuptools"])
    return [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []


def _credentials(cfg: Config) -> list[Check]:
    """Presence only, never values, of what each built-in target needs to publish (its doctor_checks)."""
    from kestrel_release import targets

    return [
        Check(c.name, c.status, c.detail, c.fix) for n in targets.builtin() for c in targets.get(cfg, n).doctor_checks()
    ]


def render(report: DoctorReport) -> None:
    """A table of checks, each failing or warning one with its fix."""
    from rich.markup import escape
    from rich.table import Table

    marks = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[bold red]FAIL[/]"}
    table = Table(box=None, pad_edge=False)
    for col in ("check", "status", "detail", "fix"):
        table.add_column(col, overflow="fold")
    for c in report.checks:
        table.add_row(escape(c.name), marks[c.status], escape(c.detail), escape(c.fix) if c.status != "ok" else "")
    console.console.print(table)


def raise_for(report: DoctorReport) -> None:
    """PreflightError (exit 3) naming every failed check."""
    failed = [c for c in report.checks if c.status == "fail"]
    if failed:
        raise PreflightError("doctor: " + "; ".join(f"{c.name}: {c.detail}" for c in failed), failed[0].fix or None)
