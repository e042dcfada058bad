"""The per-member checks of one wheel read, and a second process that reads a big wheel's last members.

Why a process: the checks are Python (a cubin's ELF tables, the secret scan), so they hold the GIL; with
the inflating on threads, a wheel of 16,000 cubins still read at one core's pace (verify 1.7x of reading
and hashing it). A child reading the second half of the members with the same checks uses the second
core. It starts only for wheels where that pays (MIN_MEMBERS, MIN_BYTES, two cores), gets no
credentials (proc.popen's environment), and anything going wrong with it (it cannot start, crashes,
answers garbage) makes the parent read those members itself: the child changes the speed, never the
result. The reports are the same either way: the child's members are the last ones, merged after the
parent's in member order.

Protocol: `python -m kestrel_release.stages.verify.part` reads one pickled job (dict) on stdin and
writes one pickled (Part, Scan) on stdout, exit 0; anything else is a failure.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kestrel_release.artifacts.wheel import Member, Part, Split, WheelError, read_part
from kestrel_release.stages.verify.leaks import ContentScanner
from kestrel_release.stages.verify.native import NativeScanner
from kestrel_release.stages.verify.versions import ModuleVersions

MIN_MEMBERS = 1000  # below this the child's start (~0.2 s) and its own directory read cost more than they save
MIN_BYTES = 64 * 1024 * 1024  # compressed
# The parent's share of the compressed bytes: the child starts later (an interpreter, the zip's directory
# again: ~0.6 s for 16,000 members), so an even split left the parent waiting for it.
PARENT_SHARE = 0.55


@dataclass
class Scan:
    """The checks the wheel reader runs on every member: content (leaks, CUDA), native libraries,
    version modules. `work` (reader threads) visits one member into fresh scanners; `visit`
    (member order) merges them."""

    content: ContentScanner
    native: NativeScanner
    modules: ModuleVersions

    @classmethod
    def new(cls, project_dir: str, build_dirs: tuple[str, ...], exclude: tuple[str, ...]) -> Scan:
        return cls(ContentScanner(project_dir, build_dirs), NativeScanner(exclude), ModuleVersions())

    def work(self, member: Member, data: bytes | memoryview) -> Scan:
        found = Scan(self.content.fresh(), self.native.fresh(), self.modules.fresh())
        found.content.visit(member, data)
        found.native.visit(member, data)
        found.modules.visit(member, data)
        return found

    def visit(self, _member: Member, found: Scan) -> None:
        self.content.merge(found.content)
        self.native.merge(found.native)
        self.modules.merge(found.modules)


def splitter(path: Path, scan: Scan) -> Split:
    """read_wheel's `split` for `path`: the members past PARENT_SHARE of the compressed bytes to a child."""

    def split(readable: list[tuple[int, Member]]) -> tuple[int, Callable[[bool], Part | None]] | None:
        compressed = sum(m.compressed_size for _i, m in readable)
        if (os.cpu_count() or 1) < 2 or len(readable) < MIN_MEMBERS or compressed < MIN_BYTES:
            return None
        here, total = 0, 0
        while here < len(readable) and total < compressed * PARENT_SHARE:
            total += readable[here][1].compressed_size
            here += 1
        job = {
            "path": os.fspath(path),
            "indices": [i for i, _m in readable[here:]],
            "project_dir": scan.content.project_dir,
            "build_dirs": scan.content.build_dirs,
            "exclude": scan.native.exclude,
        }
        child = _start(job)
        return None if child is None else (here, lambda keep: _collect(child, keep, scan))

    return split


def _start(job: dict) -> subprocess.Popen | None:
    from kestrel_release import proc

    try:
        child = proc.spawn(
            _child_argv(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdin is not None
        child.stdin.write(pickle.dumps(job))
        child.stdin.close()
    except OSError:
        return None  # the parent reads everything itself
    return child


def _child_argv() -> list[str]:
    return [sys.executable, "-m", __name__]


def _collect(child: subprocess.Popen, keep: bool, scan: Scan) -> Part | None:
    from kestrel_release import proc

    try:
        if not keep:
            proc.kill_group(child)
            return None
        assert child.stdout is not None
        out = child.stdout.read()
        if child.wait() != 0:
            return None
        part, found = pickle.loads(out)  # our own child's answer, over a pipe only we hold
        if not isinstance(part, Part) or not isinstance(found, Scan):
            return None
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return None
    finally:
        child.wait()
        proc.forget(child)
    scan.visit(Member("", 0, 0, 0), found)  # after the parent's members: member order
    return part


def main() -> int:
    job = pickle.loads(sys.stdin.buffer.read())
    scan = Scan.new(job["project_dir"], tuple(job["build_dirs"]), tuple(job["exclude"]))
    try:
        part = read_part(Path(job["path"]), list(job["indices"]), scan.visit, scan.work)
    except WheelError:
        return 1
    sys.stdout.buffer.write(pickle.dumps((part, scan), protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    # Through the module's own name: what the child pickles must be this module's classes, not __main__'s.
    from kestrel_release.stages.verify import part as _self

    sys.exit(_self.main())
