"""auditwheel repair for every wheel of a build through one long-lived child (delvewheel and
delocate, on Windows and macOS, run once per wheel: adapters/repair/).

The child (adapters/_repair_many.py) is started when the first wheel starts
building, so auditwheel's import overlaps compilation; repairs then take a
fraction of a second each. Jobs are serialised (one child, one wheel at a time);
each keeps its own log and its own error, and the child dies with the build on
Ctrl-C, SIGTERM or a sibling's failure like every other child (proc.kill_all).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import threading
from pathlib import Path

from kestrel_release.adapters import auditwheel
from kestrel_release.adapters.repair import RepairTool
from kestrel_release.process import proc
from kestrel_release.ui import redact


class Repairer:
    """Use as a context manager; start() early, repair() from any thread."""

    def __init__(self, source_date_epoch: int, tool: RepairTool | None = None) -> None:
        self._env = {**os.environ, **auditwheel.repair_env(source_date_epoch)}
        self._tool = tool  # None: auditwheel through the long-lived child; else this platform's tool
        self._child: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Repairer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self._tool is not None and not self._tool.persistent:
            return
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._child is None:
            self._child = proc.spawn(
                auditwheel.worker_command(),
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )

    def repair(self, wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...], *, log: Path, what: str) -> None:
        """Repair `wheel` into `out_dir`; BuildError (exit 4) naming `what` and `log` on failure."""
        if self._tool is not None and not self._tool.persistent:  # delvewheel, delocate: one run per wheel
            proc.run_logged(self._tool.command(wheel, out_dir, plat, exclude), log=log, env=self._env, what=what)
            return
        argv = auditwheel.repair_args(wheel, out_dir, plat, exclude)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("+ auditwheel " + redact.mask(shlex.join(argv)) + "\n", encoding="utf-8")
        with self._lock:
            self._start()
            child = self._child
            assert child is not None and child.stdin and child.stdout
            try:
                child.stdin.write(json.dumps({"argv": argv, "log": str(log)}) + "\n")
                child.stdin.flush()
                answer = child.stdout.readline()
            except (BrokenPipeError, OSError, ValueError):
                answer = ""
        if not answer:  # the child is gone: killed by us (stopping), or crashed
            proc.mask_log(log)
            try:
                code = child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = -1
            proc.fail(log, code, f"{what} (the repair process ended)")
        code = int(json.loads(answer)["code"])
        proc.mask_log(log)
        if code != 0:
            proc.fail(log, code, what)

    def close(self) -> None:
        """Let the child exit at the end of its input (it is already dead if kill_all ran)."""
        with self._lock:
            child, self._child = self._child, None
        if child is None:
            return
        try:
            if child.stdin:
                child.stdin.close()
            child.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()
        finally:
            proc.forget(child)
