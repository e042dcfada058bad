#!/usr/bin/env python3
"""Verify on real CUDA wheels nobody here built: `kestrel-release verify WHEEL` vs reading and hashing every member.

The baseline is the least any checker of RECORD must do: open the zip, inflate every member and sha256 it
(`read_members.py`, one fresh Python process, as the tool is). Each round runs the baseline and the tool on
the same wheel back to back, the tool with an empty cache dir (a first verify of those bytes: no stored
verdict); the ratio is taken per round and reported as min/median/max, so a busy machine slows both sides
of each pair. A small wheel measures the fixed cost (start-up, imports, the report).

Wheels: `--wheels DIR_OR_FILE ...`, else the defaults below from a download cache outside the repository
(`$KESTREL_BENCH_WHEELS`, else ~/.cache/kestrel-bench/wheels), fetched once with pip
(`pip download --no-deps --only-binary :all:` for CPython 3.12 on manylinux x86_64).

    uv run python benchmarks/bench_verify_real.py                       # the default set, 3 rounds
    uv run python benchmarks/bench_verify_real.py --wheels /path/a.whl --rounds 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/...` from anywhere

from benchmarks.common import VENV_BIN, BenchFailed, Comparison, Figure, Section, bench_env

MAX_RATIO = 1.3  # of reading and hashing every member, on large wheels
SMALL_MAX_SECONDS = 0.3  # the whole verify of a wheel of a few MB: the fixed cost
SMALL = 8 * 2**20  # wheels below this size measure the fixed cost
# Real CUDA wheels of the shapes users ship (pip names; versions as PyPI serves them today).
DEFAULTS = (
    "nvidia-curand-cu12",
    "nvidia-cusparselt-cu12",
    "faiss-gpu-cu12",
    "flashinfer-cubin",
    "nvidia-cuda-runtime-cu12",
)
# pip matches --platform exactly (no older manylinux implied), so name each glibc floor these wheels use.
PLATFORM_ARGS = tuple(
    arg
    for tag in (
        "manylinux_2_28_x86_64",
        "manylinux_2_27_x86_64",
        "manylinux_2_17_x86_64",
        "manylinux2014_x86_64",
        "manylinux1_x86_64",
    )
    for arg in ("--platform", tag)
)
READER = Path(__file__).resolve().parent / "read_members.py"


def download_cache() -> Path:
    return Path(os.environ.get("KESTREL_BENCH_WHEELS") or Path.home() / ".cache" / "kestrel-bench" / "wheels")


def fetch(names: tuple[str, ...], into: Path) -> list[Path]:
    """The wheels of `names` in `into`, downloading the ones not there yet (pip, no dependencies)."""
    into.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        stem = name.replace("-", "_").lower() + "-"
        found = sorted(p for p in into.glob("*.whl") if p.name.lower().startswith(stem))
        if not found:
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--python-version",
                "3.12",
                *PLATFORM_ARGS,
                "-d",
                str(into),
                name,
            ]
            done = subprocess.run(argv, capture_output=True, text=True)
            if done.returncode != 0:
                raise BenchFailed(f"pip download {name} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            found = sorted(p for p in into.glob("*.whl") if p.name.lower().startswith(stem))
        out += found[-1:]
    return out


def _wall(argv: list, env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [os.fspath(a) for a in argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 5):  # 5: findings (an upstream wheel may carry PTX); the work is the same
        raise BenchFailed(f"{argv[0]} exited {done.returncode}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return seconds


def run(wheels: list[Path], rounds: int, log: Path | None = None) -> Section:
    """Per wheel: `rounds` pairs of (read_members.py, kestrel-release verify with an empty cache dir)."""
    env = bench_env()
    section = Section("Verify on real CUDA wheels")
    scratch = Path(tempfile.mkdtemp(prefix="kestrel-bench-verify-real-"))
    # The tool runs in an empty folder: from the repository root it would find kernels/ (discover_project)
    # and verify the wheel in project mode against that project's rules (version, forbid list, matrix).
    here = scratch / "cwd"
    here.mkdir()
    try:
        for wheel in wheels:
            size = wheel.stat().st_size
            label = f"{wheel.name} ({size / 1e6:.0f} MB)"
            tool, base = Figure(f"kestrel-release verify {label}"), Figure(f"read + sha256 every member, {label}")
            for i in range(rounds + 1):  # the first pair warms the page cache and the bytecode: not counted
                cache = scratch / "cache"
                shutil.rmtree(cache, ignore_errors=True)
                b = _wall([sys.executable, READER, wheel], env)
                t = _wall(
                    [VENV_BIN / "kestrel-release", "verify", wheel],
                    {**env, "KESTREL_RELEASE_CACHE_DIR": str(cache)},
                    here,
                )
                if i > 0:
                    base.samples.append(b)
                    tool.samples.append(t)
            section.figures += [tool, base]
            if size < SMALL:
                section.comparisons.append(
                    Comparison(f"verify fixed cost: {label}", tool, base, max_seconds=SMALL_MAX_SECONDS)
                )
            else:
                section.comparisons.append(
                    Comparison(f"verify vs read + sha256: {label}", tool, base, max_ratio=MAX_RATIO)
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    section.notes.append(
        f"{rounds} round(s) per wheel after one uncounted pair; each round: the baseline "
        "(benchmarks/read_members.py: inflate and sha256 every member) then the tool with an "
        "empty cache dir; standalone verify (no project), exit 5 (findings) counted as a run"
    )
    return section


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/bench_verify_real.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--wheels", nargs="*", type=Path, help="wheel files or directories (default: the download set)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    try:
        if args.wheels:
            wheels = [w for p_ in args.wheels for w in (sorted(p_.glob("*.whl")) if p_.is_dir() else [p_])]
        else:
            wheels = fetch(DEFAULTS, download_cache())
        section = run(wheels, args.rounds)
    except BenchFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for c in section.comparisons:
        ratios = c.ratios
        spread = f" (pairs {min(ratios):.2f}-{max(ratios):.2f})" if ratios else ""
        ratio = f", ratio {c.ratio:.2f}x{spread}" if c.ratio is not None else ""
        print(
            f"result: {c.claim}: {c.subject.median:.2f} s (min {c.subject.low:.2f}, max {c.subject.high:.2f}) vs "
            f"{c.baseline.median:.2f} s{ratio} (target {c.target}): {'met' if c.met else 'MISSED'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
