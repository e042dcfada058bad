"""Shared pieces of the benchmark harness: samples, comparisons, timed subprocesses.

Every figure is a list of wall-clock samples; what is reported is the median
with min/max, so one slow run (other work on the machine) does not decide a
claim. A comparison divides two medians measured in the same run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent  # run as `uv run python benchmarks/run.py`: the project venv


class NotAvailable(Exception):
    """A benchmark cannot run here yet (a stage is missing); the reason is one line."""


class BenchFailed(Exception):
    """A measured command failed; the message names it and ends with its last output line."""


@dataclass
class Figure:
    """Wall-clock samples of one measured thing (seconds)."""

    name: str
    samples: list[float] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. {"nvcc": [13, 13]} per-sample counters

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "median": self.median,
            "min": self.low,
            "max": self.high,
            "n": len(self.samples),
            "samples": self.samples,
            **self.extra,
        }


@dataclass
class Comparison:
    """`subject` against `baseline`; the claim holds when the ratio or time meets the target.

    `max_ratio` bounds subject/baseline medians; `max_seconds` bounds the subject median.
    """

    claim: str
    subject: Figure
    baseline: Figure | None = None
    max_ratio: float | None = None
    max_seconds: float | None = None

    @property
    def ratios(self) -> list[float]:
        """subject/baseline per round, when both sides have one sample per round (measured in turn)."""
        if self.baseline is None or len(self.baseline.samples) != len(self.subject.samples):
            return []
        return [s / b for s, b in zip(self.subject.samples, self.baseline.samples, strict=True) if b > 0]

    @property
    def ratio(self) -> float | None:
        """The median of the per-round ratios (both sides under the same load); else median over median."""
        if self.ratios:
            return statistics.median(self.ratios)
        if self.baseline is None or not self.baseline.samples or self.baseline.median <= 0:
            return None
        return self.subject.median / self.baseline.median

    @property
    def met(self) -> bool:
        ok = True
        if self.max_ratio is not None:
            ok = ok and self.ratio is not None and self.ratio <= self.max_ratio
        if self.max_seconds is not None:
            ok = ok and self.subject.median <= self.max_seconds
        return ok

    @property
    def target(self) -> str:
        parts = []
        if self.max_ratio is not None:
            parts.append(f"<= {self.max_ratio:g}x")
        if self.max_seconds is not None:
            parts.append(f"<= {self.max_seconds:g} s")
        return " and ".join(parts) or "-"


@dataclass
class Section:
    """One benchmark's outcome: figures and comparisons, or why it did not run."""

    title: str
    figures: list[Figure] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unavailable: str | None = None
    seconds: float = 0.0


PYCACHE = Path(tempfile.gettempdir()) / "kestrel-bench-pycache"


def bench_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ with the venv's bin first, non-interactive twine and no keyring prompts."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        {
            "TWINE_NON_INTERACTIVE": "1",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
            "UV_PYTHON_DOWNLOADS": "never",
            "COLUMNS": "200",
            "PYTHONPYCACHEPREFIX": str(PYCACHE),
        }
    )
    # Bytecode as an installed tool has it (pip and uv compile on install), for both sides, written
    # outside the repository: without it each run recompiles every module it imports (~1 s of a publish).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("KESTREL_RELEASE_DEBUG", None)
    if extra:
        env.update(extra)
    return env


def timed(
    argv: Sequence[str | os.PathLike],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    what: str | None = None,
    log: Path | None = None,
    timeout: float = 1800,
) -> float:
    """Run argv to completion and return its wall time; BenchFailed on a non-zero exit."""
    args = [os.fspath(a) for a in argv]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise BenchFailed(f"{args[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise BenchFailed(f"{what or args[0]} timed out after {timeout:.0f} s") from None
    elapsed = time.perf_counter() - start
    text = done.stdout.decode("utf-8", "replace")
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"+ {' '.join(args)}\n{text}\n")
    if done.returncode != 0:
        raise BenchFailed(f"{what or ' '.join(args[:3])} exited {done.returncode}: {last_line(text)}")
    return elapsed


def last_line(text: str) -> str:
    """The last meaningful line of a child's output (its error, usually)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:") or "Error" in ln]
    return (errors or lines or ["(no output)"])[-1][:300]
