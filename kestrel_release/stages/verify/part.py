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

from kestrel_release import early
from kestrel_release.artifacts.wheel import Member, Part, Split, WheelError, read_part, readable_members
from kestrel_release.config.model import Config
from kestrel_release.stages.verify.leaks import ContentScanner
from kestrel_release.stages.verify.native import NativeScanner
from kestrel_release.stages.verify.versions import ModuleVersions

MIN_MEMBERS = 1000  # below this the child's start (~0.2 s) and its own directory read cost more than they save
MIN_BYTES = 64 * 1024 * 1024  # compressed
# The parent's share of the compressed bytes: the child starts later (an interpreter, the zip's directory
# again: ~0.6 s for 16,000 members), so an even split left the parent waiting for it.
PARENT_SHARE = 0.55
PARENT_SHARE_EARLY = 0.5  # an early child starts with the parent: at 0.55 it sat idle at the end (flashinfer-cubin)


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

    def params(self) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """What Scan.new was given: a child's Scan is used only where the parent's has the same."""
        return (self.content.project_dir, tuple(self.content.build_dirs), tuple(self.native.exclude))

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
    """read_wheel's `split` for `path`: the early child's share if one is reading this wheel, else the
    members past PARENT_SHARE of the compressed bytes to a new child (a wheel where that pays)."""

    def split(readable: list[tuple[int, Member]]) -> tuple[int, Callable[[bool], Part | None]] | None:
        forked = early.take(os.fspath(path))
        if forked is not None:
            here = _share(readable, early=True)
            return here, lambda keep: _take_early(forked, keep, scan, [i for i, _m in readable[here:]])
        if (os.cpu_count() or 1) < 2:
            return None
        here = _share(readable, early=False)
        if here == len(readable):
            return None
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


def _share(readable: list[tuple[int, Member]], early: bool) -> int:
    """Where the child's share of `readable` starts. A big wheel of many members: past PARENT_SHARE of the
    compressed bytes. Any other: an early child reads it all (it starts while the parent still imports),
    a later one nothing (len(readable): its start costs more than it saves)."""
    compressed = sum(m.compressed_size for _i, m in readable)
    if len(readable) < MIN_MEMBERS or compressed < MIN_BYTES:
        return 0 if early else len(readable)
    here, total = 0, 0
    while here < len(readable) and total < compressed * (PARENT_SHARE_EARLY if early else PARENT_SHARE):
        total += readable[here][1].compressed_size
        here += 1
    return here


def _start(job: dict) -> subprocess.Popen | None:
    from kestrel_release.process import proc

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
    from kestrel_release.process import proc

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


def early_answer(path: Path, cfg: Config, project: bool) -> bytes:
    """In the child kestrel_release/early.py forks for `verify` of one wheel, with the configuration the CLI
    will use (`project`: a project's, else the standalone rules): (the Scan settings, indices, Part, Scan)
    of its share of the wheel (all of it, or a big wheel's last members), as _verify_one reads them."""
    readable = readable_members(path)
    if readable is None:
        raise WheelError(f"{path.name}: a bomb is not read")
    indices = [i for i, _m in readable[_share(readable, early=True) :]]
    scan = Scan.new(str(cfg.project_dir) if project else "", build_dirs(cfg, project), cfg.build.exclude)
    part = read_part(path, indices, scan.visit, scan.work)
    return pickle.dumps((scan.params(), indices, part, scan), protocol=pickle.HIGHEST_PROTOCOL)


def _take_early(child: early.Forked, keep: bool, scan: Scan, indices: list[int]) -> Part | None:
    """The early child's Part for `indices`, its Scan merged into `scan`; None: read them here."""
    data = early.collect(child, keep)
    if data is None:
        return None
    try:
        params, got, part, found = pickle.loads(data)  # our own child's answer, over a pipe only we hold
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return None
    from kestrel_release.ui import console

    if params != scan.params() or got != indices or not isinstance(part, Part) or not isinstance(found, Scan):
        console.debug("verify: the child forked at start-up read with other settings: read here")
        return None
    console.debug(f"verify: {len(indices)} member(s) read by a child forked at start-up")
    scan.visit(Member("", 0, 0, 0), found)  # after the parent's members: member order
    return part


def build_dirs(cfg: Config, project: bool) -> tuple[str, ...]:
    """Where build compiled the project's sources (its clean copies): a path found there in a wheel is this
    build's own. None outside a project, or without a usable cache."""
    from kestrel_release.errors import FilesystemError
    from kestrel_release.files import statedir

    if not project:
        return ()
    try:
        return (str(statedir.sources(cfg.project_dir)),)
    except FilesystemError:  # no usable cache: nothing was built there either
        return ()


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
