"""A live view of pipeline steps: one row per step with its state and timing.

On a terminal it is a Rich Live table redrawn in place; otherwise (CI logs,
--json, tests) each step prints one line when it finishes, so logs stay short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from rich.live import Live

from kestrel_release.ui import ci_output, console

_STYLE = {
    "waiting": "dim",
    "running": "cyan",
    "ok": "green",
    "failed": "bold red",
    "skipped": "dim",
    "stopped": "yellow",
}


@dataclass
class Step:
    name: str
    state: str = "waiting"
    started: float | None = None
    seconds: float | None = None
    detail: str = ""
    since: float = 0.0  # wall clock at start: a log older than that is an earlier run's


class Steps:
    """Thread-safe step states; use as a context manager around the work."""

    def __init__(self, names: list[str]) -> None:
        self.steps = {n: Step(n) for n in names}
        self._lock = threading.Lock()
        self._live: Live | None = None

    def __enter__(self) -> Steps:
        if console.console.is_terminal and not console.json_mode():
            from rich.live import Live

            self._live = Live(self, console=console.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)

    def start(self, name: str, detail: str = "") -> None:
        with self._lock:
            step = self.steps.setdefault(name, Step(name))
            if step.state != "running":  # a later phase of a running step keeps its start time
                step.started, step.since = time.monotonic(), time.time()
            step.state, step.detail = "running", detail

    def finish(self, name: str, state: str, detail: str = "", logs: Sequence[Path] = ()) -> None:
        """End step `name`; `logs`: its children's log files, folded under the step in a CI log."""
        with self._lock:
            step = self.steps.setdefault(name, Step(name))
            if step.started is not None:
                step.seconds = time.monotonic() - step.started
            step.state, step.detail = state, detail
        if self._live is None and not console.json_mode() and state != "stopped":
            took = f" ({step.seconds:.1f} s)" if step.seconds is not None else ""
            line = f"{name}: {detail}{took}"
            good = state in ("ok", "skipped")
            # In a CI log the line heads a folded group holding the step's logs.
            if ci_output.group(f"{'✓' if good else '✗'} {line}", _log_lines(logs, step.since)):
                return
            # not console.error: the one `error:` line is the final one entry.main prints
            console.ok(line) if good else console.info(f"✗ {line}")

    def __rich__(self) -> Table:
        return table(list(self.steps.values()))


def table(steps: list[Step]) -> Table:
    out = Table(box=None, show_header=False, pad_edge=False)
    for _ in range(3):
        out.add_column(no_wrap=True)
    out.add_column(overflow="fold")
    now = time.monotonic()
    for s in steps:
        secs = s.seconds if s.seconds is not None else (now - s.started if s.started else None)
        out.add_row(
            s.name, f"[{_STYLE.get(s.state, '')}]{s.state}[/]", f"{secs:6.1f} s" if secs is not None else "", s.detail
        )
    return out


def _log_lines(logs: Sequence[Path], since: float) -> list[str]:
    """The lines of those `logs` this step wrote (an older file is an earlier run's: a step that did not repair)."""
    lines: list[str] = []
    for log in logs:
        try:
            if log.stat().st_mtime < since - 1:  # file systems with coarse timestamps
                continue
            text = log.read_text(encoding="utf-8", errors="replace")
        except OSError:  # a step that failed before its child started has no log
            continue
        lines += [f"--- {log}", *text.splitlines()]
    return lines
