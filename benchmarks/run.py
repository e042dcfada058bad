#!/usr/bin/env python3
"""Benchmark kestrel-release against the seed's loop and today's tools; write benchmarks/RESULTS.md.

    uv run python benchmarks/run.py [--quick] [--only build,compile-cache,real-ext,verify,verify-real,publish,shaped,scale,startup] [--wheels DIR]
                                    [--wait-quiet MINUTES]

A full run (no --quick, no --only) writes benchmarks/RESULTS.md; any other run
writes benchmarks/RESULTS-quick.md so a quick check never overwrites the
published numbers. Exit codes: 0 every selected benchmark ran (targets may be
missed: that is data), 1 one failed or was not available, 2 bad arguments,
130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/run.py` from anywhere

from benchmarks import report
from benchmarks.common import BenchFailed, NotAvailable, Section

HERE = Path(__file__).resolve().parent
BENCHES = ("build", "compile-cache", "real-ext", "verify", "verify-real", "publish", "shaped", "scale", "startup")
QUIET_LOAD = 1.0
TITLES = {
    "build": "Build matrix",
    "compile-cache": "Compile cache",
    "real-ext": "A real torch CUDA extension",
    "verify": "Verify",
    "verify-real": "Verify on real CUDA wheels",
    "publish": "Publish",
    "shaped": "Upload through a shaped link",
    "scale": "A 25-wheel release",
    "startup": "Start-up",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one `error:` line, exit 2 (argparse adds a usage block)
        print(f"error: {message} (see benchmarks/run.py --help)", file=sys.stderr)
        sys.exit(2)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="benchmarks/run.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and ~40 MB verify wheels (under 10 min)")
    p.add_argument("--only", help=f"comma-separated subset of: {', '.join(BENCHES)}")
    p.add_argument("--wheels", type=Path, help="wheels for the publish benchmark when build is not run")
    p.add_argument(
        "--real-wheels",
        nargs="*",
        type=Path,
        default=[],
        help="wheel files for verify-real (default: its download set, fetched once with pip)",
    )
    p.add_argument("--out", type=Path, help="results file (default: RESULTS.md for a full run, else RESULTS-quick.md)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (it is printed)")
    p.add_argument(
        "--wait-quiet",
        type=float,
        default=0,
        metavar="MINUTES",
        help="first wait up to MINUTES for the 1-minute load average to drop below 1.0",
    )
    args = p.parse_args(argv)
    # The real extension takes over an hour on 2 cores: in the full run and --only, never in a --quick one.
    args.selected = tuple(b for b in BENCHES if b != "real-ext") if args.quick else BENCHES
    if args.only:
        args.selected = tuple(b.strip() for b in args.only.split(",") if b.strip())
        unknown = [b for b in args.selected if b not in BENCHES]
        if unknown:
            p.error(f"--only: unknown benchmark {', '.join(unknown)} (choose from {', '.join(BENCHES)})")
    if args.wheels is not None and not sorted(args.wheels.glob("*.whl")):
        p.error(f"--wheels: no *.whl in {args.wheels}")
    full = not args.quick and not args.only
    args.out = args.out or HERE / ("RESULTS.md" if full else "RESULTS-quick.md")
    return args


def _one(name: str, args: argparse.Namespace, work: Path, wheels: Path | None) -> tuple[Section, Path | None]:
    if name == "build":
        from benchmarks import bench_build

        return bench_build.run(args.quick, work / "build")
    if name == "compile-cache":
        from benchmarks import bench_compile_cache

        return bench_compile_cache.run(args.quick, work / "compile-cache"), wheels
    if name == "real-ext":  # chamferdist for 3.10-3.13: about 1 h 40 min on 2 loaded cores; in no --quick run
        from benchmarks import bench_real_ext

        return bench_real_ext.run(work / "real-ext"), wheels
    if name == "verify":
        from benchmarks import verify_adapter

        return verify_adapter.run(args.quick, work / "verify"), wheels
    if name == "publish":
        from benchmarks import bench_publish

        return bench_publish.run(args.quick, wheels, work / "publish.log"), wheels
    if name == "shaped":
        from benchmarks import bench_upload_shaped

        return bench_upload_shaped.run(args.quick, work / "shaped"), wheels
    if name == "verify-real":
        from benchmarks import bench_verify_real

        real = args.real_wheels or bench_verify_real.fetch(
            bench_verify_real.DEFAULTS, bench_verify_real.download_cache()
        )
        return bench_verify_real.run(real, 1 if args.quick else 3), wheels
    if name == "scale":
        from benchmarks import bench_upload_scale

        size = 64 * 1024 if args.quick else 8 * 2**20
        return bench_upload_scale.run(work / "scale", size, 1 if args.quick else 3)[0], wheels
    from benchmarks import bench_startup

    return bench_startup.run(args.quick), wheels


def run_all(args: argparse.Namespace, work: Path) -> tuple[list[Section], bool]:
    """Run the selected benchmarks in order; a missing stage or failure is recorded, not fatal."""
    sections, all_ok, wheels = [], True, args.wheels
    for name in args.selected:
        print(f"==> {TITLES[name]}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            section, wheels = _one(name, args, work, wheels)
        except (NotAvailable, BenchFailed) as exc:
            failed = isinstance(exc, BenchFailed)
            section, all_ok = Section(TITLES[name], unavailable=("failed: " if failed else "") + str(exc)), False
        section.seconds = time.perf_counter() - start
        print(f"    {section.unavailable or 'done'} ({section.seconds:.0f} s)", file=sys.stderr, flush=True)
        sections.append(section)
    return sections, all_ok


def wait_quiet(minutes: float, poll: float = 30.0) -> str:
    """Poll the load average until the 1-minute figure is below 1.0 or `minutes` pass; say how it went."""
    start = time.monotonic()
    while minutes > 0:
        one = float(report.load().split()[0])
        waited = (time.monotonic() - start) / 60
        if one < QUIET_LOAD:
            return f"quiet (1-min load {one:.2f}) after waiting {waited:.1f} min"
        if waited >= minutes:
            return f"never quiet: 1-min load still {one:.2f} after waiting {waited:.1f} min; ran anyway"
        print(f"    waiting for a quiet machine: 1-min load {one:.2f}", file=sys.stderr, flush=True)
        time.sleep(poll)
    return "not waited for"


def main(argv: list[str] | None = None) -> int:
    """Entry point: run, print the claims table, write the results file."""
    args = parse_args(argv)
    quiet = wait_quiet(args.wait_quiet)
    work = Path(tempfile.mkdtemp(prefix="kestrel-bench-"))
    meta = {
        "date": report.now(),
        "mode": "quick" if args.quick else ("partial" if args.only else "full"),
        "load before": f"{report.load()} ({quiet})",
    }
    start = time.perf_counter()
    try:
        sections, all_ok = run_all(args, work)
    except KeyboardInterrupt:
        print("error: interrupted; no results file written", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            print(f"scratch directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    meta.update({"load after": report.load(), "duration": f"{(time.perf_counter() - start) / 60:.1f} min"})
    print(report.table(sections))
    from kestrel_release.files.fsutil import atomic_write_text

    atomic_write_text(args.out, report.markdown(sections, meta, report.kept_analysis(args.out)))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
