"""Read a wheel once, without extracting it: whole-file sha256, members, RECORD hashes.

The file is memory-mapped; the central directory is read with zipfile and each
member's bytes are sliced (stored) or inflated (deflate) straight from the map,
hashed for RECORD and handed to an optional `visit(member, data)` callback, so
every later check shares this single pass. Nothing is written to disk and
nothing from the wheel is executed.

With `work`, the per-member checks run on the reader's threads beside the inflating:
`work(member, data)` there (several members at once, so it must touch no shared state),
then `visit(member, what work returned)` on the caller's thread in member order. Why: a
visit on the caller's thread holds the GIL while the workers wait for it between their
zlib and hashlib calls, so a wheel of 16,000 cubins read no faster than member by member.

Entry point: `read_wheel(path, visit=None, work=None) -> WheelFile`; it raises only WheelError
(a file that is not a readable zip). Problems inside a readable zip (unsafe
names, bombs, bad members) come back as `WheelFile.problems`.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import re
import stat
import zipfile
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kestrel_release.artifacts import wheel_members
from kestrel_release.artifacts.errors import UNREADABLE_ZIP, WheelError
from kestrel_release.artifacts.wheel_members import Member, WheelFile, check_names, is_bomb, member_bytes, record_digest

__all__ = ["Member", "WheelError", "WheelFile", "read_wheel", "record_digest"]

PREFETCH = 512 * 1024 * 1024  # declared sizes of the members inflated ahead, the one being read among them
AHEAD = 64  # members in flight at most
_DIST_INFO = re.compile(r"^[^/]+\.dist-info/(METADATA|WHEEL|RECORD)$")


Visitor = Callable[[Member, Any], None]
Work = Callable[[Member, "bytes | memoryview"], Any]


@dataclass
class Part:
    """What another process read of a wheel's last members (read_wheel's `split`), in member order."""

    read: list[tuple[int | None, str | None]]  # per member: (size, RECORD digest), (None, None) if unreadable
    problems: list[tuple[str, str, str]] = field(default_factory=list)
    dist_info: dict[str, bytes] = field(default_factory=dict)
    identity: tuple | None = None  # file_identity of what it read: a Part of another file is not used


def file_identity(fd: int) -> tuple:
    """(device, inode, size, mtime ns, ctime ns) of the open file: any write changes the ctime."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# split(readable members as (index in the zip's directory, Member)) -> None (read them all here), or
# (k, collect): read the first k here; collect(True) then gives the rest's Part, or None to read them here
# too; collect(False) (this read failed) stops the other process.
Split = Callable[[list[tuple[int, Member]]], "tuple[int, Callable[[bool], Part | None]] | None"]


def read_wheel(
    path: Path | str, visit: Visitor | None = None, work: Work | None = None, split: Split | None = None
) -> WheelFile:
    """Hash and read every member of the wheel at `path` in one pass (`work`, `split`: see above)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise WheelError(f"{path.name}: empty file", "rebuild the wheel")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm, ThreadPoolExecutor(2) as pool:
                # The whole file's sha256 runs beside the members (hashlib releases the GIL).
                whole = pool.submit(lambda: hashlib.sha256(mm).hexdigest())
                wheel = WheelFile(path, path.name, "", size)
                try:
                    _read_members(fh, mm, wheel, visit, work, split, pool)
                finally:
                    wheel.sha256 = whole.result()
    except OSError as exc:
        raise WheelError(f"{path.name}: cannot read ({exc.strerror or exc})") from None
    return wheel


def read_part(path: Path, indices: list[int], visit: Visitor | None = None, work: Work | None = None) -> Part:
    """Read the members at `indices` of the zip's directory (a `split`'s other process); WheelError if the
    file is no longer the zip the caller read (they are not all readable, non-directory members)."""
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            infos = zipfile.ZipFile(fh).infolist()
            if any(not 0 <= i < len(infos) or infos[i].filename.endswith("/") for i in indices):
                raise WheelError(f"{path.name}: changed while it was read", "verify it again")
            wheel = WheelFile(path, path.name, "", 0)
            readable = [(infos[i], _member(infos[i])) for i in indices]
            identity = file_identity(fh.fileno())
            view = memoryview(mm)
            try:
                _read_in_order(view, readable, wheel, visit, work, None)
            finally:
                with contextlib.suppress(BufferError):
                    view.release()
    except (OSError, *UNREADABLE_ZIP) as exc:  # type: ignore[misc]  # a tuple of exception classes
        raise WheelError(f"{path.name}: cannot read ({exc})") from None
    return Part([(m.actual_size, m.digest) for _info, m in readable], wheel.problems, wheel.dist_info, identity)


def _read_members(
    fh: IO[bytes],
    mm: mmap.mmap,
    wheel: WheelFile,
    visit: Visitor | None,
    work: Work | None,
    split: Split | None,
    pool: ThreadPoolExecutor,
) -> None:
    try:
        infos = zipfile.ZipFile(fh).infolist()
    # NotImplementedError: zipfile's answer to an unsupported zip version ("zip file version 8.4").
    except UNREADABLE_ZIP as exc:
        raise WheelError(
            f"{wheel.filename}: not a readable zip file ({exc})", "the file is truncated or corrupt: rebuild it"
        ) from None
    wheel.members = [_member(info) for info in infos]
    check_names(wheel)
    readable = _readable(wheel, infos)
    if readable is None:
        return  # inflating it is exactly what a bomb wants
    plan = split([(i, m) for i, _info, m in readable]) if split is not None and readable else None
    here, collect = (len(readable), None) if plan is None else plan
    view = memoryview(mm)
    try:
        try:
            own = [(info, m) for _i, info, m in readable[:here]]
            _read_in_order(view, own, wheel, visit, work, pool if collect is None else None)
        except BaseException:
            if collect is not None:
                collect(False)
            raise
        rest = readable[here:]
        part = collect(True) if collect is not None else None
        if part is not None and part.identity not in (None, file_identity(fh.fileno())):
            part = None  # the other process read another file under this name
        if part is None or len(part.read) != len(rest):  # no other process, or it failed: read them here
            _read_in_order(view, [(info, m) for _i, info, m in rest], wheel, visit, work, pool)
            return
        for (_i, _info, member), (size, digest) in zip(rest, part.read, strict=True):
            member.actual_size, member.digest = size, digest
        wheel.problems += part.problems
        wheel.dist_info.update(part.dist_info)
    finally:
        with contextlib.suppress(BufferError):
            view.release()


def _readable(wheel: WheelFile, infos: list[zipfile.ZipInfo]) -> list[tuple[int, zipfile.ZipInfo, Member]] | None:
    """(index in the directory, info, member) of each member a read inflates, in order; None for a bomb."""
    if is_bomb(wheel):
        return None
    offsets: set[int] = set()
    readable = []
    for index, (info, member) in enumerate(zip(infos, wheel.members, strict=True)):  # one member per info
        if member.is_dir:
            continue
        if info.header_offset in offsets:  # shares its data with another member (the overlap bomb)
            wheel.problems.append(("zip-bomb", member.name, "shares its data with another member: rebuild"))
            continue
        offsets.add(info.header_offset)
        readable.append((index, info, member))
    return readable


def readable_members(path: Path) -> list[tuple[int, Member]] | None:
    """What read_wheel(path) hands its `split`: (index, Member) of each member it inflates; None for a bomb.
    For a process that reads a share of the wheel before the reader has opened it (verify's early child)."""
    with open(path, "rb") as fh:
        try:
            infos = zipfile.ZipFile(fh).infolist()
        except UNREADABLE_ZIP as exc:
            raise WheelError(f"{path.name}: not a readable zip file ({exc})") from None
        size = os.fstat(fh.fileno()).st_size  # the bomb rule's ratio is to the file's size
    wheel = WheelFile(path, path.name, "", size, [_member(info) for info in infos])
    readable = _readable(wheel, infos)
    return None if readable is None else [(i, m) for i, _info, m in readable]


def _read_in_order(
    view: memoryview,
    readable: list[tuple[zipfile.ZipInfo, Member]],
    wheel: WheelFile,
    visit: Visitor | None,
    work: Work | None,
    pool: ThreadPoolExecutor | None,
) -> None:
    """Inflate and hash the members ahead on the workers while `visit` reads the current one (zlib and
    hashlib release the GIL, so one wheel uses two cores). Up to AHEAD members and PREFETCH bytes are
    in flight: one member ahead left a core idle whenever a small member's visit and the next one's
    inflate took different times (a wheel of 16,000 cubins)."""
    queue: deque[Future] = deque()
    nxt, in_flight = 0, 0
    for info, member in readable:
        while (
            pool is not None
            and nxt < len(readable)
            and len(queue) < AHEAD
            and (not queue or in_flight + readable[nxt][1].size <= PREFETCH)
        ):
            queue.append(pool.submit(_prepare, view, *readable[nxt], work))
            in_flight += readable[nxt][1].size
            nxt += 1
        if pool is None:  # one thread: another process reads the rest of the wheel on the other core
            size, digest, problems, kept, done = _prepare(view, info, member, work)
        else:
            size, digest, problems, kept, done = queue.popleft().result()
            in_flight -= member.size
        wheel.problems += problems
        if size is None:
            continue
        member.digest, member.actual_size = digest, size
        if _DIST_INFO.match(member.name):
            wheel.dist_info[member.name] = bytes(kept)
        if visit is not None and not member.is_symlink:
            visit(member, kept if work is None else done)
        del kept, done


def _prepare(view: memoryview, info: zipfile.ZipInfo, member: Member, work: Work | None) -> tuple:
    """(size or None, RECORD digest, problems, the bytes the caller keeps, what `work` returned) of one member.
    With `work` only a dist-info file's bytes go back: the rest are dropped here, once checked."""
    problems: list[tuple[str, str, str]] = []
    # With checks to run, a big member is inflated in one call and hashed beside them (both ~0.1 s per
    # 160 MiB): hashing it chunk by chunk while it inflates cost joining the chunks (0.09 s per 160 MiB).
    beside = work is not None and not member.is_symlink and member.size >= wheel_members.HASH_WHILE_INFLATING
    data = member_bytes(view, info, member, problems, chunked=not beside)
    digest = None
    if isinstance(data, tuple):  # a big member, hashed while it inflated
        data, digest = data
    elif data is not None and not beside:
        digest = record_digest(data)
    if data is None:
        return None, None, problems, None, None
    if work is None:
        return len(data), digest, problems, data, None
    if member.is_symlink:
        done = None
    elif digest is None:
        with ThreadPoolExecutor(1) as hashing:
            pending = hashing.submit(record_digest, data)
            done = work(member, data)
            digest = pending.result()
    else:
        done = work(member, data)
    return len(data), digest, problems, (data if _DIST_INFO.match(member.name) else None), done


def _member(info: zipfile.ZipInfo) -> Member:
    mode = info.external_attr >> 16
    return Member(
        info.filename,
        info.file_size,
        info.compress_size,
        info.compress_type,
        is_symlink=stat.S_ISLNK(mode),
        is_dir=info.filename.endswith("/"),
    )
