"""How big this machine is for a build: the cores this process may use and the memory free right now.

Read from the running system (sched_getaffinity, /proc/meminfo, the cgroup's memory limit), so it lives in
an adapter; what is made of it (how many compiles run at once) is stages/build_wheels/fit.py.
"""

from __future__ import annotations

import os
from pathlib import Path

_MEMINFO = Path("/proc/meminfo")
_CGROUP = Path("/sys/fs/cgroup")


def cores() -> int:
    """The CPUs this process may run on (a container's or taskset's share, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def mem_available() -> int | None:
    """Bytes that can be allocated without swapping: MemAvailable, capped by the cgroup's limit (a container's
    memory.max less what it already uses); None where the system does not say (macOS, Windows)."""
    free = _meminfo("MemAvailable")
    limit = _read_int(_CGROUP / "memory.max")
    if limit is not None:
        used = _read_int(_CGROUP / "memory.current") or 0
        room = max(0, limit - used)
        free = room if free is None else min(free, room)
    return free


def _meminfo(key: str) -> int | None:
    try:
        text = _MEMINFO.read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == key and value.split() and value.split()[0].isdigit():
            return int(value.split()[0]) * 1024  # kB
    return None


def _read_int(path: Path) -> int | None:
    """An integer file of the cgroup; None when absent or "max" (no limit)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
