"""doctor's CUDA rows: the toolkit (nvcc, or each configured one), the package's own arch list and build
gate, and what a torch extension compiles and links with (CUDA_HOME as torch derives it, the C++ runtime).

Each returns doctor's rows (stages/doctor_report.Check) and installs nothing; doctor.py runs them in order.
"""

from __future__ import annotations

import os
from pathlib import Path

from kestrel_release.adapters import gpu, toolchain
from kestrel_release.config.model import Config
from kestrel_release.errors import PreflightError
from kestrel_release.flows.doctor_report import Check


def nvcc(cfg: Config) -> list[Check]:
    from kestrel_release.stages.build_wheels import cuda_tools

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


def package_cuda(cfg: Config) -> list[Check]:
    """cuda_arch/cuda against what setup.py, CMake and build.env make nvcc compile, before any build:
    one row naming the file and line of the package's own arch list and the one edit that fixes it."""
    from kestrel_release.project import cuda_gate, package_cuda
    from kestrel_release.stages.build_wheels import cuda_tools

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


def torch_cuda_home(cfg: Config) -> list[Check]:
    """A torch extension compiles against the toolkit torch derives (CUDA_HOME), not the nvcc doctor found:
    a wrapper script in /usr/local/bin gives CUDA_HOME=/usr/local, which has no headers, and the build
    fails minutes in on `cuda_runtime_api.h: No such file or directory`."""
    import shutil

    from kestrel_release.stages.build_wheels import cuda_tools

    if not cuda_tools.builds_cuda_with_torch(cfg.project_dir):
        return []
    env = {**os.environ, **cfg.build.env}
    home, source = cuda_tools.torch_cuda_home(env)
    name = "CUDA_HOME (as torch derives it)"
    if home is not None and (home / "include" / "cuda_runtime_api.h").is_file():
        return [Check(name, "ok", f"{home} (from {source}): include/cuda_runtime_api.h found")]
    real = cuda_tools.headers_home(shutil.which("nvcc", path=env.get("PATH", "")))
    if real is not None and not env.get("CUDA_HOME") and not env.get("CUDA_PATH"):
        # build sets it (cuda_tools.cuda_home_env): the user need not, but should know where it comes from.
        return [
            Check(name, "ok", f"{real}: torch alone would take {home} (from {source}); build sets CUDA_HOME={real}")
        ]
    fix = (
        f"export CUDA_HOME={real}"
        if real
        else "export CUDA_HOME=/path/to/cuda (the folder with include/cuda_runtime_api.h)"
    )
    where = f"{home} (from {source}) has no include/cuda_runtime_api.h" if home else source
    return [Check(name, "fail", f"the torch build would compile against {where}", fix)]


def torch_cxx(cfg: Config) -> list[Check]:
    """The C++ compiler a torch extension links with (CXX, else c++) must use the shared libstdc++: a private
    static copy (a custom GCC whose lib dir holds only libstdc++.a) makes TORCH_CHECK failures crash, and
    verify's cxx-runtime rule refuses the wheel only after the whole build."""
    from kestrel_release.adapters import cxx_probe
    from kestrel_release.stages.build_wheels import cuda_tools

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
    from kestrel_release.adapters import cuda_toolkit
    from kestrel_release.facts import cuda_rules

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
