#!/usr/bin/env python3
"""A release at the package's own scale: 25 wheels of 8 MiB, `kestrel-release publish` vs `twine upload`.

The release this tool exists for is about 25 wheels (5 Pythons x 5 platforms). Each round publishes the
same random, incompressible wheels (tests/factories.py) through `shaped_link.ShapedLink` (1.5 MB/s per
connection, 12 MB/s in all, 40 ms round trip) to a fresh strict sandbox (a threaded index: pypiserver
behind waitress, with PyPI's upload rules): first `kestrel-release publish`, then the identical re-run,
then `twine upload` of the same files to another fresh sandbox. Besides the times it records the peak
resident memory of the tool's process tree while it uploads (from the kernel's accounting of the reaped
child, `wait4`), and how many requests of each kind the index saw per run (the strict sandbox counts them).

    uv run python benchmarks/bench_upload_scale.py                # 25 x 8 MiB, 3 rounds
    uv run python benchmarks/bench_upload_scale.py --rounds 1     # one round (about 3 min of it is twine)
    uv run python benchmarks/bench_upload_scale.py --quick        # 25 x 64 KiB, 1 round (a smoke run)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/...` from anywhere

from benchmarks.bench_upload_shaped import OVER, _check, _env
from benchmarks.common import VENV_BIN, BenchFailed, Comparison, Figure, Section, last_line

MAX_RATIO = 0.15
RERUN_MAX_SECONDS = 5.0
MAX_RSS_MB = 300
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
PLATFORMS = (
    "manylinux_2_34_x86_64",
    "manylinux_2_34_aarch64",
    "musllinux_1_2_x86_64",
    "win_amd64",
    "macosx_11_0_arm64",
)
FILES = len(PYTHONS) * len(PLATFORMS)  # 25


def generate(work: Path, size: int) -> tuple[Path, Path]:
    """A kernel project and its 25 wheels (every Python on every platform); returns (project, wheels dir)."""
    from tests.factories import NAME, importable_wheel_bytes, make_project

    project = make_project(work / "project", pythons=PYTHONS)
    pyproject = project / "pyproject.toml"  # the factory pins test-speed publish settings: measure the defaults
    pyproject.write_text(pyproject.read_text().split("[tool.kestrel-release.publish]\n")[0])
    wheels = work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for plat in PLATFORMS:
        for py in PYTHONS:
            tag = f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-{plat}"
            (wheels / f"{NAME.replace('-', '_')}-0.1.0-{tag}.whl").write_bytes(
                importable_wheel_bytes("0.1.0", tag, payload=os.urandom(size + OVER))
            )
    return project, wheels


def measured(argv: list, env: dict[str, str], what: str, log: Path) -> tuple[float, float]:
    """Run argv to completion: (wall seconds, peak RSS in MB of the largest process of its tree)."""
    args = [os.fspath(a) for a in argv]
    with open(log, "ab") as out:
        out.write(f"+ {' '.join(args)}\n".encode())
        out.flush()
        start = time.perf_counter()
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage: ru_maxrss covers its reaped children
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise BenchFailed(f"{what} exited {proc.returncode}: {last_line(log.read_text(errors='replace'))}")
    return elapsed, usage.ru_maxrss / 1024  # KiB on Linux


def _requests(box) -> dict[str, int]:
    return {k: v for k, v in box.faults()["requests"].items() if k.startswith("GET ")}


def run(work: Path, size: int, rounds: int, log: Path | None = None) -> tuple[Section, dict]:
    """Rounds of: tool publish, tool re-run, twine upload, each through a fresh shaped link + strict sandbox."""
    from benchmarks.shaped_link import ShapedLink
    from kestrel_release.sandbox.pypi.server import PypiSandbox

    log = log or work / "upload-scale.log"
    project, wheels_dir = generate(work, size)
    wheels = sorted(wheels_dir.glob("*.whl"))
    first, rerun, twine = (
        Figure("kestrel-release publish, 25 wheels (shaped link)"),
        Figure("kestrel-release publish re-run, 25 wheels (shaped link)"),
        Figure("twine upload, 25 wheels (shaped link)"),
    )
    rss: list[float] = []
    reads: dict = {}
    link_args = {"rate": 1.5e6, "aggregate": 12e6, "rtt": 0.04}
    for _ in range(rounds):
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
            env = _env(box, None)
            seconds, peak = measured(argv, env, "kestrel-release publish", log)
            first.samples.append(seconds)
            rss.append(peak)
            _check(box, wheels, "kestrel-release publish")
            reads["publish"] = _requests(box)
            rerun.samples.append(measured(argv, env, "kestrel-release publish (re-run)", log)[0])
            after = _requests(box)
            reads["re-run"] = {
                k: v - reads["publish"].get(k, 0) for k, v in after.items() if v > reads["publish"].get(k, 0)
            }
        with PypiSandbox(strict=True) as box, ShapedLink(("127.0.0.1", box.port), **link_args) as link:
            twine.samples.append(
                measured(
                    [
                        VENV_BIN / "twine",
                        "upload",
                        "--non-interactive",
                        "--disable-progress-bar",
                        "--repository-url",
                        link.url + "/",
                        *wheels,
                    ],
                    _env(box, None),
                    "twine upload",
                    log,
                )[0]
            )
            _check(box, wheels, "twine upload")
    total = sum(w.stat().st_size for w in wheels)
    peak = Figure("peak RSS of kestrel-release publish (MB)", samples=rss)
    section = Section(
        "A 25-wheel release through a shaped link",
        figures=[first, rerun, twine],
        comparisons=[
            Comparison("publish vs twine upload, 25 wheels", first, twine, max_ratio=MAX_RATIO),
            Comparison("publish re-run, 25 wheels (all identical)", rerun, max_seconds=RERUN_MAX_SECONDS),
        ],
        notes=[
            (
                f"{len(wheels)} wheels x {size / 2**20:g} MiB (+64 KiB) random payload, {total / 1e6:.1f} MB in all; "
                "link 1.5 MB/s per connection, 12 MB/s aggregate, 40 ms round trip; a fresh strict sandbox behind a "
                f"fresh link per upload (start-up not timed); {rounds} round(s); peak RSS of the tool while uploading "
                f"{peak.median:.0f} MB median (min {peak.low:.0f}, max {peak.high:.0f}; limit {MAX_RSS_MB} MB)"
            )
        ],
    )
    return section, {"rss": peak, "reads": reads}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="benchmarks/bench_upload_scale.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="64 KiB wheels, 1 round")
    p.add_argument("--size-mib", type=float, default=8.0)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    size = 64 * 1024 if args.quick else int(args.size_mib * 2**20)
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="kestrel-bench-scale-") as tmp:
        try:
            section, extra = run(Path(tmp), size, rounds)
        except BenchFailed as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    for fig in [*section.figures, extra["rss"]]:
        print(f"{fig.name}: median {fig.median:.2f} (min {fig.low:.2f}, max {fig.high:.2f}, n={len(fig.samples)})")
    for run_name, seen in extra["reads"].items():
        print(f"index reads, {run_name}: " + ", ".join(f"{k} x{v}" for k, v in sorted(seen.items())))
    print(section.notes[0])
    for c in section.comparisons:
        ratio = f", ratio {c.ratio:.3f}x" if c.ratio is not None else ""
        base = f" vs {c.baseline.median:.2f} s" if c.baseline is not None else ""
        print(
            f"result: {c.claim}: {c.subject.median:.2f} s{base}{ratio} (target {c.target}): "
            f"{'met' if c.met else 'MISSED'}"
        )
    rss_ok = extra["rss"].high < MAX_RSS_MB
    print(
        f"result: peak RSS while uploading: {extra['rss'].high:.0f} MB (target < {MAX_RSS_MB} MB): "
        f"{'met' if rss_ok else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
