"""Every process a long child started, however it left the child's process group (Linux /proc).

Killing a build's process group is not enough: ninja starts each job in a process group of its own (so a
terminal's Ctrl-C reaches ninja alone), and a backend may start helpers with setsid, or daemonize them (their
parent exits, the kernel hands them to init). A SIGKILLed ninja leaves its nvcc/cicc/ptxas running. So a
tree is every process that is, or descends (by parent pid) from, a member of the child's session or process
group, plus every process whose environment carries the child's tag (proc.spawn sets it): that catches
the daemonized ones, whose parent chain no longer leads to us. Without /proc (macOS, Windows) the tree is
the process group alone, as before.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from collections.abc import Iterable

TAG_VAR = "KESTREL_RELEASE_SPAWN_TAG"
_PROC = "/proc"


def new_tag() -> str:
    """A value no other process's environment holds: `<our pid>-<random>`."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def available() -> bool:
    return os.path.isdir(os.path.join(_PROC, "self", "task"))


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(ppid, pgid, sid, state) of a process; None when it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
        return int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode()
    except (OSError, IndexError, ValueError):
        return None


def _table() -> dict[int, tuple[int, int, int, str]]:
    out = {}
    for name in os.listdir(_PROC):
        if name.isdigit() and (row := _stat(int(name))) is not None and row[3] not in ("Z", "X"):
            out[int(name)] = row
    return out


def _tagged(pid: int, needle: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as fh:
            return needle in fh.read().split(b"\0")
    except OSError:  # another user's process, or gone
        return False


def members(roots: Iterable[tuple[int, str | None]]) -> set[int]:
    """The live processes of each (root pid, tag) tree, as the module doc defines it; never this process."""
    table = _table()
    found: set[int] = set()
    for root, tag in roots:
        found |= {pid for pid, (_, pgid, sid, _) in table.items() if pid == root or pgid == root or sid == root}
        if tag:
            needle = f"{TAG_VAR}={tag}".encode()
            found |= {pid for pid in table if pid not in found and _tagged(pid, needle)}
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(os.getpid())
    return found


def rss(pids: Iterable[int]) -> list[int]:
    """The resident memory of each process, in bytes (0 for one gone since: /proc/PID/statm's second field)."""
    page = os.sysconf("SC_PAGE_SIZE")
    out = []
    for pid in pids:
        try:
            with open(f"{_PROC}/{pid}/statm", "rb") as fh:
                out.append(int(fh.read().split()[1]) * page)
        except (OSError, IndexError, ValueError):
            out.append(0)
    return out


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:  # gone, or not ours
            pass


def kill(roots: list[tuple[int, str | None]], grace: float) -> None:
    """SIGTERM every process of the trees, then SIGKILL what is still there after `grace` seconds.
    Looked up again before each signal: a dying build may still start a job (ninja) in between."""
    signal_all(members(roots), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and members(roots):
        time.sleep(0.05)
    for _ in range(5):  # a process forked between the look-up and the signal is caught on the next pass
        left = members(roots)
        if not left:
            return
        signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
