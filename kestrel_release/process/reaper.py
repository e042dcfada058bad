"""Children die with the tool, even when the tool is killed with SIGKILL.

A SIGKILLed process runs no cleanup, so the tool cannot stop its sandbox servers or build
trees itself. Instead, the first long-running child starts a tiny guardian process (in its own
session, so a terminal's Ctrl-C does not stop it first) that reads child pids from a pipe.
When the tool exits in any way, the kernel closes the pipe; the guardian then SIGKILLs every
registered child, or its whole process group when the child leads one (builds, servers), so
grandchildren (compilers under a build backend) go too. PR_SET_PDEATHSIG would not do: it fires
when the spawning *thread* ends (builds spawn from worker threads) and reaches one process only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

_GUARDIAN = r"""
import os, signal, sys

def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None

targets = []
for line in sys.stdin:
    parts = line.split()
    if len(parts) == 3 and parts[0].isdigit():
        targets.append((int(parts[0]), parts[1], parts[2] == "group"))
for pid, start, group in targets:
    now = started(pid)
    if now is not None and now != start:
        continue  # the pid was reused by another process: ours is long gone
    try:
        if group:  # the group outlives its leader while members (a compiler) run
            os.killpg(pid, signal.SIGKILL)
        elif now is not None:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
"""


def _started(pid: int) -> str:
    """The process's start time (clock ticks since boot): tells a reused pid from ours."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return "?"


def _boot_id() -> str:
    """This boot's id (Linux): a start time from before a reboot says nothing about today's pids."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip() or "?"
    except OSError:
        return "?"


def identity() -> str:
    """`<pid> <start time> <boot id>` of this process, as a leftover's marker records its owner."""
    return f"{os.getpid()} {_started(os.getpid())} {_boot_id()}"


def owner_alive(owner: str) -> bool:
    """Whether the process an `identity()` names still runs (and is the same process: a pid reused
    after its death or a reboot is not). "?" fields (no /proc) fall back to the pid alone."""
    pid_text, start, boot = [*owner.split(), "?", "?", "?"][:3]
    if not pid_text.isdigit():
        return True  # not a marker we understand: never treat its owner as gone
    pid = int(pid_text)
    if boot != "?" and _boot_id() not in ("?", boot):
        return False
    now = _started(pid)
    if now != "?":
        return start in ("?", now)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: someone else's live process
        return True
    return True


_lock = threading.Lock()
_guardian: subprocess.Popen | None = None


def watch(child: subprocess.Popen, group: bool) -> None:
    """Kill `child` (its process group when `group`: it called setsid) when this process ends."""
    global _guardian
    line = f"{child.pid} {_started(child.pid)} {'group' if group else 'one'}\n".encode()
    with _lock:
        try:
            if _guardian is None or _guardian.poll() is not None:
                # Not through proc.popen: the guardian must not be watched by itself, and it gets
                # no environment beyond what Python needs (it runs no third-party code).
                _guardian = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _GUARDIAN],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    env={"PATH": os.environ.get("PATH", "")},
                )
            assert _guardian.stdin is not None
            _guardian.stdin.write(line)
            _guardian.stdin.flush()
        except OSError:  # no guardian (out of processes): the tool's own cleanup still runs
            pass
