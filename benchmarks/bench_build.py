"""Build matrix: `kestrel-release build` against the seed's per-Python loop, cold and warm.

Both run on a throw-away copy of kernels/ (the repo is never touched) with
CUDACXX and PATH pointing at a wrapper that logs each nvcc invocation and
execs the real one, so "how many times did nvcc run" is counted, not guessed.

cold: precompiled outputs (and, for the tool, its precompile cache) removed.
warm: kernels unchanged, one Python file edited since the previous build.
"""

from __future__ import annotations

import shlex
import shutil
import stat
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import (
    VENV_BIN,
    BenchFailed,
    Comparison,
    Figure,
    NotAvailable,
    Section,
    bench_env,
    timed,
)

TOUCHED = Path("python/kestrel_kernels/__init__.py")
# Never copied: build outputs and the precompiled cubins (the copy starts cold).
SKIP_NAMES = {"dist", "dist-all", "build", "__pycache__", ".kestrel-release.lock", ".pytest_cache"}
COLD_TARGET, WARM_TARGET = 0.30, 0.08  # issue 26: of the seed's loop


@dataclass
class Workbench:
    """The copy of the project and everything the timed commands need."""

    project: Path
    cache: Path  # KESTREL_RELEASE_CACHE_DIR
    nvcc_log: Path
    env: dict[str, str]
    pythons: dict[str, Path]
    plat: str
    excludes: tuple[str, ...]
    outputs: Path  # the precompiled outputs directory inside the copy
    log: Path
    split: dict[str, list[float]] = field(default_factory=dict)  # seed loop seconds per step kind, per run

    def nvcc_calls(self) -> tuple[int, int]:
        """(all nvcc invocations, compiles) since the last reset; resets the log."""
        lines = self.nvcc_log.read_text().splitlines() if self.nvcc_log.exists() else []
        self.nvcc_log.write_text("")
        return len(lines), sum(1 for ln in lines if "--version" not in ln.split())


def write_nvcc_wrapper(directory: Path, real_nvcc: Path, log: Path) -> Path:
    """A `nvcc` script that appends its arguments to `log`, then execs the real nvcc."""
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / "nvcc"
    wrapper.write_text(
        f'#!/bin/sh\nprintf \'%s\\n\' "nvcc $*" >> {shlex.quote(str(log))}\nexec {shlex.quote(str(real_nvcc))} "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper


def copy_project(src: Path, dst: Path, outputs_rel: str) -> Path:
    """Copy the kernel package without build dirs, caches or precompiled outputs."""
    skip_outputs = (src / outputs_rel).resolve() if outputs_rel else None

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {
            n
            for n in names
            if n in SKIP_NAMES or n.endswith(".egg-info") or (Path(directory) / n).resolve() == skip_outputs
        }

    shutil.copytree(src, dst, ignore=ignore, symlinks=True)
    return dst


def commit_copy(project: Path) -> None:
    """Make the copy a git checkout, as a real project is (build records the commit and its date)."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "benchmark copy"]):
        timed([*git, *args], cwd=project, what="git " + args[0])


def touch_python(project: Path, n: int) -> None:
    """Edit one Python file the way a developer would (content changes, kernels do not)."""
    with open(project / TOUCHED, "a", encoding="utf-8") as fh:
        fh.write(f"# benchmark edit {n}\n")


def make_cold(bench: Workbench, *extra: Path) -> None:
    for path in (bench.outputs, *extra):
        shutil.rmtree(path, ignore_errors=True)


def seed_loop(bench: Workbench) -> float:
    """The seed's script: per Python, clean, `uv build --wheel`, `auditwheel repair`. Returns seconds."""
    p = bench.project
    steps = {"uv build": 0.0, "auditwheel repair": 0.0}
    for path in (p / "dist", p / "dist-all", p / "build"):
        shutil.rmtree(path, ignore_errors=True)
    (p / "dist-all").mkdir()
    for version, python in bench.pythons.items():
        shutil.rmtree(p / "dist", ignore_errors=True)
        shutil.rmtree(p / "build", ignore_errors=True)
        argv = [VENV_BIN / "uv", "build", "--wheel", "--python", python, "--out-dir", p / "dist"]
        steps["uv build"] += timed(argv, env=bench.env, cwd=p, what=f"uv build --python {version}", log=bench.log)
        wheels = sorted((p / "dist").glob("*.whl"))
        if len(wheels) != 1:
            raise BenchFailed(f"uv build --python {version} left {len(wheels)} wheels in dist/")
        excludes = [a for pat in bench.excludes for a in ("--exclude", pat)]
        argv = [
            VENV_BIN / "auditwheel",
            "repair",
            "--plat",
            bench.plat,
            "--only-plat",
            *excludes,
            "-w",
            p / "dist-all",
            wheels[0],
        ]
        steps["auditwheel repair"] += timed(
            argv, env=bench.env, cwd=p, what=f"auditwheel repair ({version})", log=bench.log
        )
    for kind, seconds in steps.items():
        bench.split.setdefault(kind, []).append(seconds)
    return sum(steps.values())


def compile_alone(bench: Workbench) -> float:
    """The kernels' nvcc compiles and nothing else: the project's precompile script, as the seed loop's
    first `uv build` runs it (CMakeLists.txt), into the cleared outputs. Any flow that compiles each kernel
    once spends at least this; the cold ratio cannot go below this figure over the loop's."""
    python = next(iter(bench.pythons.values()))
    argv = [python, "-m", "scripts.precompile", "--out", bench.outputs, "--arch", "90a"]
    return timed(argv, env=bench.env, cwd=bench.project, what="precompile alone", log=bench.log)


def tool_build(bench: Workbench, out: Path) -> float:
    """`kestrel-release build` for every configured Python; checks one wheel per Python came out."""
    seconds = timed(
        [VENV_BIN / "kestrel-release", "build", "--project", bench.project, "--out", out],
        env=bench.env,
        what="kestrel-release build",
        log=bench.log,
    )
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != len(bench.pythons):
        raise BenchFailed(f"kestrel-release build made {len(wheels)} wheels, expected {len(bench.pythons)}")
    return seconds


def prepare(work: Path) -> Workbench:
    """Copy kernels/, find interpreters and nvcc, write the counting wrapper."""
    from kestrel_release.adapters import toolchain
    from kestrel_release.config_loader import load as config
    from kestrel_release.errors import KestrelError

    try:
        from kestrel_release.adapters.pythons import find_all
    except ImportError as exc:
        raise NotAvailable(f"interpreter discovery is missing ({exc})") from None
    from benchmarks.common import ROOT

    src = ROOT / "kernels"
    if not (src / "pyproject.toml").is_file():
        raise NotAvailable("kernels/pyproject.toml does not exist yet")
    try:
        cfg = config.load(src)
        project = copy_project(src, work / "kernels", cfg.precompile_outputs)
        commit_copy(project)
        pythons = find_all(cfg.python)
        real_nvcc = toolchain.find_nvcc()
    except KestrelError as exc:
        raise NotAvailable(str(exc)) from None
    nvcc_log = work / "nvcc-calls.log"
    wrapper = write_nvcc_wrapper(work / "nvcc-bin", real_nvcc.resolve(), nvcc_log)
    cache = work / "tool-cache"
    env = bench_env(
        {
            "CUDACXX": str(wrapper),
            "KESTREL_RELEASE_CACHE_DIR": str(cache),
            **{k: str(v) for k, v in cfg.build.env.items()},
        }
    )
    env["PATH"] = f"{wrapper.parent}:{env['PATH']}"  # a bare `nvcc` is counted too
    env.update(seed_pair(real_nvcc))
    outputs = project / (cfg.precompile_outputs or "python/kestrel_kernels/precompiled")
    return Workbench(
        project, cache, nvcc_log, env, pythons, cfg.build.plat, cfg.build.exclude, outputs, work / "build-bench.log"
    )


def seed_pair(nvcc: Path | None = None) -> dict[str, str]:
    """The seed's flow builds one (toolkit, arch) pair: the nvcc found here, sm_90a. kernels/ configures 8 pairs,
    which the seed's loop never built, so the build is pinned to the seed's pair, and so is everything that
    verifies those wheels against kernels/ (the publish benchmark)."""
    from kestrel_release.adapters import toolchain

    nvcc = nvcc or toolchain.find_nvcc()
    return {
        "KESTREL_RELEASE_CUDA": ".".join(toolchain.nvcc_version(nvcc).split(".")[:2]),
        "KESTREL_RELEASE_CUDA_ARCH": "90a",
    }


def _measure(fig: Figure, bench: Workbench, fn) -> None:
    bench.nvcc_calls()  # reset the counter
    fig.samples.append(fn())
    calls, compiles = bench.nvcc_calls()
    fig.extra.setdefault("nvcc", []).append(calls)
    fig.extra.setdefault("nvcc_compiles", []).append(compiles)


def _tool_ready() -> str | None:
    """None when the build stage exists, else why not."""
    import importlib.util

    return (
        None
        if importlib.util.find_spec("kestrel_release.stages.build_wheels")
        else "kestrel_release.stages.build_wheels does not exist yet"
    )


def run(quick: bool, work: Path) -> tuple[Section, Path | None]:
    """Time the matrix (quick: 1 round, full: 3) and return the section and a dir of real wheels."""
    rounds = 1 if quick else 3
    bench = prepare(work)
    out = work / "tool-out"
    loop_cold, loop_warm = Figure("seed loop, cold"), Figure("seed loop, warm")
    tool_cold, tool_warm = Figure("kestrel-release build, cold"), Figure("kestrel-release build, warm")
    floor = Figure("nvcc compiles alone (precompile script, cold)")
    section = Section("Build matrix", figures=[loop_cold, loop_warm, tool_cold, tool_warm, floor])
    tool_problem = _tool_ready()
    edits = 0
    for _ in range(rounds):
        make_cold(bench)
        _measure(loop_cold, bench, lambda: seed_loop(bench))
        edits += 1
        touch_python(bench.project, edits)
        _measure(loop_warm, bench, lambda: seed_loop(bench))
        make_cold(bench)
        _measure(floor, bench, lambda: compile_alone(bench))
        if tool_problem:
            continue
        try:
            make_cold(bench, bench.cache, out)
            _measure(tool_cold, bench, lambda: tool_build(bench, out))
            edits += 1
            touch_python(bench.project, edits)
            _measure(tool_warm, bench, lambda: tool_build(bench, out))
        except BenchFailed as exc:
            tool_problem = f"failed: {exc} (log: {bench.log})"
    if tool_problem:
        section.figures = [loop_cold, loop_warm, floor]
        section.notes.append(f"kestrel-release build not available: {tool_problem}")
    else:
        section.comparisons += [
            Comparison("build cold vs seed loop cold", tool_cold, loop_cold, max_ratio=COLD_TARGET),
            Comparison("build warm vs seed loop warm", tool_warm, loop_warm, max_ratio=WARM_TARGET),
            Comparison("build warm vs seed loop cold", tool_warm, loop_cold),
            Comparison("floor: nvcc compiles alone vs seed loop cold", floor, loop_cold),
        ]
    split = ", ".join(f"{kind} {statistics.median(v):.1f} s" for kind, v in bench.split.items())
    section.notes.append(f"seed loop time by step (median over its cold and warm runs): {split}.")
    versions = ", ".join(f"{v} ({p})" for v, p in bench.pythons.items())
    section.notes += [
        f"{rounds} round(s), each: loop cold, loop warm, tool cold, tool warm; Pythons: {versions}.",
        (
            f"auditwheel repair --plat {bench.plat} --only-plat with the configured excludes; the loop's "
            "wall time is the sum of its uv build and auditwheel commands (cleaning excluded)."
        ),
        f"warm = one line appended to {TOUCHED} since the previous build; kernels unchanged.",
    ]
    wheels = out if not tool_problem else bench.project / "dist-all"
    keep = work / "wheels"
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(wheels, keep)
    return section, keep
