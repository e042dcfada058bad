"""What each Python's build took on this machine: its wall time and memory, measured as it ran, kept in the
project's state dir (statedir.py) for the next build's parallelism (fit.py) and its forecast in the plan.

Memory is sampled from /proc every half second over the build's whole process tree (proctree.py: the
frontend, the backend, ninja and every compiler it starts): the tree's total at its fullest (what the build
needed) and its largest single process (what one compile needs: nvcc's cicc or ptxas of the biggest kernel).
A wheel served from the wheel cache compiled nothing: it leaves the Python's last figures as they were.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from kestrel_release.files import fsutil, statedir
from kestrel_release.process import proc, proctree
from kestrel_release.ui.sizes import size

FILE = "build-history.json"
INTERVAL = 0.5  # seconds between samples: a few ms of /proc reading each


@dataclass(frozen=True)
class Measured:
    wall_s: float
    peak_rss: int  # bytes: the build's process tree at its fullest
    peak_compile: int  # bytes: its largest single process (in the record: the largest seen here)
    jobs: int  # compiles at once it ran with
    slowest_s: float = 0.0  # the longest this Python's build took here (a cold one), for the forecast


class Meter:
    """Samples one child's process tree while it runs (a thread); `watch` is proc.run_logged's `started`."""

    def __init__(self) -> None:
        self.total = 0
        self.largest = 0
        self._pid: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="build-meter", daemon=True)

    def watch(self, child: subprocess.Popen) -> None:
        self._pid = child.pid
        self._sample()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(INTERVAL):
            self._sample()

    def _sample(self) -> None:
        if self._pid is None or not proctree.available():
            return
        sizes = proctree.rss(proctree.members([(self._pid, None)]))
        self.total = max(self.total, sum(sizes))
        self.largest = max(self.largest, max(sizes, default=0))


def run_measured(argv: list, *, log: Path, cwd: Path, env: dict[str, str], what: str) -> Measured:
    """proc.run_logged, measured (the module doc); `env`'s MAX_JOBS is recorded with it."""
    meter = Meter()
    start = time.monotonic()
    try:
        proc.run_logged(argv, log=log, cwd=cwd, env=env, what=what, started=meter.watch)
    finally:
        meter.stop()
    jobs = int(env["MAX_JOBS"]) if env.get("MAX_JOBS", "").isdigit() else 0
    return Measured(round(time.monotonic() - start, 2), meter.total, meter.largest, jobs)


def path(project_dir: Path) -> Path:
    return statedir.project(project_dir) / FILE


def load(project_dir: Path) -> dict[str, Measured]:
    """Python -> its last measured build; {} when none was recorded (or the file is unreadable)."""
    try:
        data = json.loads(path(project_dir).read_text(encoding="utf-8"))
        return {py: Measured(**row) for py, row in data.get("pythons", {}).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def save(project_dir: Path, measured: dict[str, Measured]) -> None:
    """Merge this build's figures into the record (temp file + rename); each keeps its slowest time."""
    if not measured:
        return
    rows = load(project_dir)
    for py, m in measured.items():
        old = rows.get(py)
        slowest = max(m.wall_s, old.slowest_s if old else 0.0, old.wall_s if old else 0.0)
        # The largest compile ever seen: a warm build (all from the compile cache) must not make the next
        # cold one start more compiles than fit.
        biggest = max(m.peak_compile, old.peak_compile if old else 0)
        rows[py] = Measured(m.wall_s, m.peak_rss, biggest, m.jobs, slowest)
    doc = {"when": time.strftime("%Y-%m-%d %H:%M"), "pythons": {py: asdict(m) for py, m in sorted(rows.items())}}
    fsutil.atomic_write_text(path(project_dir), json.dumps(doc, indent=1) + "\n")


def largest_compile(rows: dict[str, Measured], pythons: Iterable[str]) -> int | None:
    """The most one compile took in the last builds of these Pythons (bytes); None when none was measured."""
    found = [rows[py].peak_compile for py in pythons if py in rows and rows[py].peak_compile]
    return max(found) if found else None


def forecast(rows: dict[str, Measured], pythons: list[str], at_once: int, lead: str | None) -> str:
    """One line of the plan: how long the wheel builds of `pythons` will take and their memory peak, from
    the last measured builds; says so when there is none (never a guess)."""
    known = {py: rows[py] for py in pythons if py in rows}
    if not known:
        return "forecast: none yet (no build of this project measured on this machine; this one is recorded)"
    mean = sum(m.wall_s for m in known.values()) / len(known)
    walls = {py: known[py].wall_s if py in known else mean for py in pythons}
    slow = {py: known[py].slowest_s or known[py].wall_s if py in known else mean for py in pythons}
    peaks = {py: known[py].peak_rss if py in known else max(m.peak_rss for m in known.values()) for py in pythons}
    seconds, peak = _schedule(walls, peaks, at_once, lead)
    cold, _ = _schedule(slow, peaks, at_once, lead)
    missing = [py for py in pythons if py not in known]
    text = f"forecast: about {_duration(seconds)}, {size(peak)} peak (the last build here)"
    if cold > 1.5 * seconds:
        text += f"; up to {_duration(cold)} when everything compiles again"
    if missing:
        text += f"; Python {', '.join(missing)} never built here, counted like the others"
    return text


def _schedule(walls: dict[str, float], peaks: dict[str, int], at_once: int, lead: str | None) -> tuple[float, int]:
    """(seconds, bytes) of the builds: the lead alone first, then the rest `at_once` at a time, each
    taking the first free slot (longest first), memory the sum of those running together."""
    first = walls.get(lead, 0.0) if lead else 0.0
    rest = sorted((py for py in walls if py != lead), key=lambda py: -walls[py])
    slots = [0.0] * max(1, min(at_once, len(rest) or 1))
    for py in rest:
        slots[slots.index(min(slots))] += walls[py]
    together = sum(sorted((peaks[py] for py in rest), reverse=True)[: len(slots)])
    return first + max(slots), max(together, peaks.get(lead, 0) if lead else 0)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
