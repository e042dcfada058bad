"""Publish: `kestrel-release publish` against `twine upload` of the same wheels to a sandbox pypiserver.

Each round starts two fresh, plain (non-strict) sandboxes on free loopback
ports: one for the tool (first upload, then the all-identical re-run), one
for twine. Credentials reach both only through TWINE_USERNAME/TWINE_PASSWORD.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from benchmarks.common import (
    ROOT,
    VENV_BIN,
    BenchFailed,
    Comparison,
    Figure,
    NotAvailable,
    Section,
    bench_env,
    timed,
)

RERUN_MAX_SECONDS = 2.0
TARGET = "testpypi"  # the tool's rules for a PyPI-like index; --repository-url points it at the sandbox


def _env(box, pins: dict[str, str] | None = None) -> dict[str, str]:
    return bench_env({"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **(pins or {})})


def _check_uploaded(box, wheels: list[Path], who: str) -> None:
    missing = sorted({w.name for w in wheels} - set(box.files()))
    if missing:
        raise BenchFailed(f"{who} left {len(missing)} wheel(s) off the sandbox, e.g. {missing[0]}")


def _tool(box, wheels_dir: Path, log: Path) -> float:
    # publish verifies the wheels itself: that is part of what a user waits for.
    argv = [
        VENV_BIN / "kestrel-release",
        "publish",
        wheels_dir,
        "--project",
        ROOT / "kernels",
        "--target",
        TARGET,
        "--repository-url",
        box.upload_url,
        "--yes",
    ]
    # The build benchmark's wheels hold the seed's one (toolkit, arch) pair: verify them against that pair.
    from benchmarks.bench_build import seed_pair

    return timed(argv, env=_env(box, seed_pair()), what="kestrel-release publish", log=log)


def run(quick: bool, wheels_dir: Path | None, log: Path) -> Section:
    """Rounds of: tool upload, tool re-run, twine upload (quick: 2 rounds, full: 5)."""
    if wheels_dir is None or not sorted(wheels_dir.glob("*.whl")):
        raise NotAvailable("no wheels from the build benchmark")
    if not importlib.util.find_spec("kestrel_release.targets.pypi.publish"):
        raise NotAvailable("kestrel_release.targets.pypi.publish does not exist yet")
    from kestrel_release.sandbox.pypi.server import PypiSandbox

    wheels = sorted(wheels_dir.glob("*.whl"))
    first, rerun, twine = (
        Figure("kestrel-release publish"),
        Figure("kestrel-release publish, re-run"),
        Figure("twine upload"),
    )
    for _ in range(2 if quick else 5):
        with PypiSandbox(strict=False) as box:
            first.samples.append(_tool(box, wheels_dir, log))
            _check_uploaded(box, wheels, "kestrel-release publish")
            rerun.samples.append(_tool(box, wheels_dir, log))
        with PypiSandbox(strict=False) as box:
            twine.samples.append(
                timed(
                    [
                        VENV_BIN / "twine",
                        "upload",
                        "--non-interactive",
                        "--disable-progress-bar",
                        "--repository-url",
                        box.upload_url,
                        *wheels,
                    ],
                    env=_env(box),
                    what="twine upload",
                    log=log,
                )
            )
            _check_uploaded(box, wheels, "twine upload")
    total = sum(w.stat().st_size for w in wheels)
    return Section(
        "Publish",
        figures=[first, rerun, twine],
        comparisons=[
            Comparison("publish vs twine upload", first, twine, max_ratio=1.0),
            Comparison("publish re-run (all identical)", rerun, max_seconds=RERUN_MAX_SECONDS),
        ],
        notes=[
            (
                f"{len(wheels)} wheels, {total / 1e6:.1f} MB in all, from the build benchmark; "
                "a fresh plain pypiserver per upload (start-up not timed)."
            )
        ],
    )
