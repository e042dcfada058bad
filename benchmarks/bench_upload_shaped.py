#!/usr/bin/env python3
"""Uploads at scale: `kestrel-release publish` vs `twine upload` through a shaped loopback link.

A long-haul upload to PyPI moves about 1-1.5 MB/s per TCP connection, so a
release of many large wheels is limited by how many files go at once. Each round
publishes the same N random wheels of one valid project (the test suite's wheel
factory, tests/factories.py, with a random payload that does not compress)
through `shaped_link.ShapedLink` (per-connection rate, aggregate cap, round-trip
delay) in front of a fresh strict sandbox: first `kestrel-release publish`, then
the identical re-run (everything skipped), then `twine upload` to another fresh
sandbox. Sandbox start-up is not timed; credentials go through TWINE_* only.

    uv run python benchmarks/bench_upload_shaped.py              # 8 x 16 MiB, 3 rounds
    uv run python benchmarks/bench_upload_shaped.py --quick      # 4 x 1 MiB, 1 round (a smoke run)
    uv run python benchmarks/bench_upload_shaped.py --parallel 4 # the tool with publish.parallel = 4
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/...` from anywhere

from benchmarks.common import VENV_BIN, BenchFailed, Comparison, Figure, Section, bench_env, timed

MAX_RATIO = 0.35
RERUN_MAX_SECONDS = 5.0
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_34_aarch64", "win_amd64", "macosx_11_0_arm64")
# Each wheel's random member is this much larger than --size: a 16 MiB wheel's member then sits just above
# verify's 16 MiB text-scan limit (verify_leaks.TEXT_LIMIT), as the large .so members of real kernel wheels
# do; a member of at most 16 MiB is regex-scanned for secrets (about 3 s per 16 MiB here; see RESULTS.md).
OVER = 64 * 1024


@dataclass(frozen=True)
class Shape:
    files: int = 8
    size: int = 16 * 1024 * 1024  # bytes of random payload per wheel
    rate: float = 1.5e6  # bytes/s per connection
    aggregate: float = 12e6  # bytes/s for all connections together
    rtt: float = 0.04  # seconds
    rounds: int = 3
    parallel: int | None = None  # None: the tool's default (publish.parallel)

    def describe(self) -> str:
        return (
            f"{self.files} wheels x {self.size / 2**20:g} MiB (+64 KiB) random payload; link: "
            f"{self.rate / 1e6:g} MB/s per connection, {self.aggregate / 1e6:g} MB/s aggregate, "
            f"{self.rtt * 1000:.0f} ms round trip; {self.rounds} round(s); tool parallel: "
            f"{self.parallel or 'default'}"
        )


QUICK = Shape(files=4, size=1024 * 1024, rounds=1)


def _matrix(files: int) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """(configured Pythons, [(python, platform)]) for `files` wheels: whole platforms of one matrix."""
    pythons = PYTHONS[: min(files, len(PYTHONS))]
    if files % len(pythons) or files // len(pythons) > len(PLATFORMS):
        raise BenchFailed(f"--files {files}: use 1-4, or a multiple of 4 up to 16 (whole platforms)")
    return pythons, [(py, plat) for plat in PLATFORMS[: files // len(pythons)] for py in pythons]


def generate(work: Path, files: int, size: int) -> tuple[Path, Path]:
    """A kernel project and N valid wheels of it with incompressible payloads; returns (project, wheels dir)."""
    from tests.factories import NAME, importable_wheel_bytes, make_project

    pythons, matrix = _matrix(files)
    project = make_project(work / "project", pythons=pythons)
    pyproject = project / "pyproject.toml"  # the factory pins test-speed publish settings: measure the defaults
    table = "[tool.kestrel-release.publish]\n"
    pyproject.write_text(pyproject.read_text().split(table)[0])
    wheels = work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for py, plat in matrix:
        tag = f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-{plat}"
        (wheels / f"{NAME.replace('-', '_')}-0.1.0-{tag}.whl").write_bytes(
            importable_wheel_bytes("0.1.0", tag, payload=os.urandom(size + OVER))
        )
    return project, wheels


def _env(box, parallel: int | None) -> dict[str, str]:
    extra = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password}
    if parallel:
        extra["KESTREL_RELEASE_PUBLISH_PARALLEL"] = str(parallel)
    return bench_env(extra)


def _check(box, wheels: list[Path], who: str) -> None:
    missing = sorted({w.name for w in wheels} - set(box.files()))
    if missing:
        raise BenchFailed(f"{who} left {len(missing)} wheel(s) off the sandbox, e.g. {missing[0]}")


def run(quick: bool, work: Path, shape: Shape | None = None, log: Path | None = None) -> Section:
    """Rounds of: tool publish, tool re-run, twine upload, each through a fresh shaped link + strict sandbox."""
    from benchmarks.shaped_link import ShapedLink
    from kestrel_release.sandbox.pypi.server import PypiSandbox

    shape = shape or (QUICK if quick else Shape())
    log = log or work / "upload-shaped.log"
    project, wheels_dir = generate(work, shape.files, shape.size)
    wheels = sorted(wheels_dir.glob("*.whl"))
    first, rerun, twine = (
        Figure("kestrel-release publish (shaped link)"),
        Figure("kestrel-release publish, re-run (shaped link)"),
        Figure("twine upload (shaped link)"),
    )
    link_args = {"rate": shape.rate, "aggregate": shape.aggregate, "rtt": shape.rtt}
    for _ in range(shape.rounds):
        with PypiSandbox(strict=True) as box, ShapedLink(("127.0.0.1", box.port), **link_args) as link:
            argv = [
                VENV_BIN / "kestrel-release",
                "publish",
                wheels_dir,
                "--project",
                project,
                "--target",
                "testpypi",
                "--repository-url",
                link.url + "/",
                "--yes",
            ]
            env = _env(box, shape.parallel)
            first.samples.append(timed(argv, env=env, what="kestrel-release publish", log=log))
            _check(box, wheels, "kestrel-release publish")
            rerun.samples.append(timed(argv, env=env, what="kestrel-release publish (re-run)", log=log))
        with PypiSandbox(strict=True) as box, ShapedLink(("127.0.0.1", box.port), **link_args) as link:
            twine.samples.append(
                timed(
                    [
                        VENV_BIN / "twine",
                        "upload",
                        "--non-interactive",
                        "--disable-progress-bar",
                        "--repository-url",
                        link.url + "/",
                        *wheels,
                    ],
                    env=_env(box, None),
                    what="twine upload",
                    log=log,
                )
            )
            _check(box, wheels, "twine upload")
    total = sum(w.stat().st_size for w in wheels)
    return Section(
        "Upload through a shaped link",
        figures=[first, rerun, twine],
        comparisons=[
            Comparison("publish vs twine upload, shaped link", first, twine, max_ratio=MAX_RATIO),
            Comparison("publish re-run, shaped link (all identical)", rerun, max_seconds=RERUN_MAX_SECONDS),
        ],
        notes=[
            (
                f"{shape.describe()}; {total / 1e6:.1f} MB in all; a fresh strict sandbox behind a fresh link "
                "per upload (start-up not timed)."
            )
        ],
    )


def results_line(section: Section) -> str:
    """One line per claim: figures and verdict (what the command prints, and what a test looks for)."""
    lines = []
    for c in section.comparisons:
        ratio = f", ratio {c.ratio:.2f}x" if c.ratio is not None else ""
        base = f" vs {c.baseline.median:.2f} s" if c.baseline is not None else ""
        lines.append(
            f"result: {c.claim}: {c.subject.median:.2f} s{base}{ratio} (target {c.target}): "
            f"{'met' if c.met else 'MISSED'}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/bench_upload_shaped.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="4 x 1 MiB wheels, 1 round")
    p.add_argument("--files", type=int)
    p.add_argument("--size-mib", type=float)
    p.add_argument("--rounds", type=int)
    p.add_argument("--parallel", type=int, help="publish.parallel for the tool (default: its configured default)")
    p.add_argument("--rate", type=float, help="MB/s per connection (default 1.5)")
    p.add_argument("--aggregate", type=float, help="MB/s for all connections (default 12)")
    p.add_argument("--rtt-ms", type=float, help="round trip in ms (default 40)")
    args = p.parse_args(argv)
    base = QUICK if args.quick else Shape()
    shape = Shape(
        files=args.files or base.files,
        size=int(args.size_mib * 2**20) if args.size_mib else base.size,
        rate=args.rate * 1e6 if args.rate else base.rate,
        aggregate=args.aggregate * 1e6 if args.aggregate else base.aggregate,
        rtt=args.rtt_ms / 1000 if args.rtt_ms is not None else base.rtt,
        rounds=args.rounds or base.rounds,
        parallel=args.parallel,
    )
    with tempfile.TemporaryDirectory(prefix="kestrel-bench-shaped-") as tmp:
        try:
            section = run(args.quick, Path(tmp), shape)
        except BenchFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for fig in section.figures:
        print(f"{fig.name}: median {fig.median:.2f} s (min {fig.low:.2f}, max {fig.high:.2f}, n={len(fig.samples)})")
    print(section.notes[0])
    print(results_line(section))
    return 0


if __name__ == "__main__":
    sys.exit(main())
