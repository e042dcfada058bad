"""Read a wheel once, without extracting it: whole-file sha256, members, RECORD hashes.

The file is memory-mapped; the central directory is read with zipfile and each
member's bytes are sliced (stored) or inflated (deflate) straight from the map,
hashed for RECORD and handed to an optional `visit(member, data)` callback, so
every later check shares this single pass. Nothing is written to disk and
nothing from the wheel is executed.

Entry point: `read_wheel(path, visit=None) -> WheelFile`; it raises only WheelError
(a file that is not a readable zip). Problems inside a readable zip (unsafe
names, bombs, bad members) come back as `WheelFile.problems`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import mmap
import os
import re
import stat
import struct
import zipfile
import zlib
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.artifacts.errors import UNREADABLE_ZIP, WheelError

__all__ = ["Member", "WheelError", "WheelFile", "read_wheel", "record_digest"]

MIB = 1024 * 1024
BOMB_SIZE = 64 * MIB  # PyPI refuses a zip over this uncompressed size...
BOMB_RATIO = 50  # ...when it also compresses better than this
MAX_MEMBER = 4 * 1024 * MIB  # never inflate more than this for one member
PREFETCH = 512 * MIB  # declared sizes of the members inflated ahead, the one being read among them
AHEAD = 64  # members in flight at most
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_DIST_INFO = re.compile(r"^[^/]+\.dist-info/(METADATA|WHEEL|RECORD)$")


@dataclass
class Member:
    name: str
    size: int  # uncompressed, as declared in the central directory
    compressed_size: int
    compress_type: int
    is_symlink: bool = False
    is_dir: bool = False
    digest: str | None = None  # RECORD form: sha256=<urlsafe b64, no padding>; None if unread
    actual_size: int | None = None


@dataclass
class WheelFile:
    """Everything one streaming pass learned about a wheel."""

    path: Path
    filename: str
    sha256: str
    size: int
    members: list[Member] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (rule, member, message)
    dist_info: dict[str, bytes] = field(default_factory=dict)  # "x.dist-info/WHEEL" -> bytes


Visitor = Callable[[Member, "bytes | memoryview"], None]


def record_digest(data) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def read_wheel(path: Path | str, visit: Visitor | None = None) -> WheelFile:
    """Hash and read every member of the wheel at `path` in one pass."""
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
                    _read_members(fh, mm, wheel, visit, pool)
                finally:
                    wheel.sha256 = whole.result()
    except OSError as exc:
        raise WheelError(f"{path.name}: cannot read ({exc.strerror or exc})") from None
    return wheel


def _read_members(fh, mm: mmap.mmap, wheel: WheelFile, visit: Visitor | None, pool: ThreadPoolExecutor) -> None:
    try:
        infos = zipfile.ZipFile(fh).infolist()
    # NotImplementedError: zipfile's answer to an unsupported zip version ("zip file version 8.4").
    except UNREADABLE_ZIP as exc:
        raise WheelError(
            f"{wheel.filename}: not a readable zip file ({exc})", "the file is truncated or corrupt: rebuild it"
        ) from None
    wheel.members = [_member(info) for info in infos]
    _check_names(wheel)
    if _is_bomb(wheel):
        return  # inflating it is exactly what a bomb wants
    view = memoryview(mm)
    try:
        offsets: set[int] = set()
        todo = []  # (info, member, problem): a member shares its data with another one (the overlap bomb)
        for info, member in zip(infos, wheel.members, strict=True):  # members come one per info
            if member.is_dir:
                continue
            shared = info.header_offset in offsets
            offsets.add(info.header_offset)
            todo.append((info, member, shared))
        _read_in_order(view, todo, wheel, visit, pool)
    finally:
        with contextlib.suppress(BufferError):
            view.release()


def _read_in_order(view: memoryview, todo: list, wheel: WheelFile, visit: Visitor | None, pool) -> None:
    """Inflate and hash the members ahead on the workers while `visit` reads the current one (zlib and
    hashlib release the GIL, so one wheel uses two cores). Up to AHEAD members and PREFETCH bytes are
    in flight: one member ahead left a core idle whenever a small member's visit and the next one's
    inflate took different times (a wheel of 16,000 cubins)."""
    readable = [(info, member) for info, member, shared in todo if not shared]
    for _info, member, shared in todo:
        if shared:
            wheel.problems.append(("zip-bomb", member.name, "shares its data with another member: rebuild"))
    queue: deque[Future] = deque()
    nxt, in_flight = 0, 0
    for _info, member in readable:
        while (
            nxt < len(readable) and len(queue) < AHEAD and (not queue or in_flight + readable[nxt][1].size <= PREFETCH)
        ):
            queue.append(pool.submit(_prepare, view, *readable[nxt]))
            in_flight += readable[nxt][1].size
            nxt += 1
        data, digest, problems = queue.popleft().result()
        in_flight -= member.size
        wheel.problems += problems
        if data is None:
            continue
        member.digest, member.actual_size = digest, len(data)
        if _DIST_INFO.match(member.name):
            wheel.dist_info[member.name] = bytes(data)
        if visit is not None and not member.is_symlink:
            visit(member, data)
        del data


def _prepare(view: memoryview, info: zipfile.ZipInfo, member: Member) -> tuple:
    """(bytes or None, RECORD digest, problems) of one member."""
    problems: list[tuple[str, str, str]] = []
    data = _member_bytes(view, info, member, problems)
    return data, (record_digest(data) if data is not None else None), problems


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


def _check_names(wheel: WheelFile) -> None:
    seen: set[str] = set()
    for m in wheel.members:
        name = m.name
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
            wheel.problems.append(("unsafe-path", name, "absolute path in the archive: rebuild the wheel"))
        elif ".." in parts:
            wheel.problems.append(("unsafe-path", name, "'..' in a member path (path traversal): rebuild the wheel"))
        if m.is_symlink:
            wheel.problems.append(("unsafe-path", name, "symbolic link in the archive: ship the file itself"))
        if name in seen:
            wheel.problems.append(("unsafe-path", name, "duplicate member name: rebuild the wheel"))
        seen.add(name)


def _is_bomb(wheel: WheelFile) -> bool:
    total = sum(m.size for m in wheel.members)
    ratio = total / max(wheel.size, 1)
    if total > BOMB_SIZE and ratio > BOMB_RATIO:
        wheel.problems.append(
            (
                "zip-bomb",
                "",
                f"{total} bytes uncompressed at ratio {ratio:.0f} "
                f"(PyPI refuses > {BOMB_SIZE // MIB} MiB at ratio > {BOMB_RATIO}): not inflated",
            )
        )
        return True
    if any(m.size > MAX_MEMBER for m in wheel.members):
        wheel.problems.append(("zip-bomb", "", f"a member declares more than {MAX_MEMBER // MIB} MiB: not inflated"))
        return True
    return False


def _member_bytes(view: memoryview, info: zipfile.ZipInfo, member: Member, problems: list):
    start = _data_offset(view, info)
    if start is None or start + info.compress_size > len(view):
        problems.append(("zip-format", member.name, "member data missing or truncated: rebuild the wheel"))
        return None
    if info.flag_bits & 0x1:
        problems.append(("zip-format", member.name, "encrypted member: rebuild the wheel"))
        return None
    disagree = _header_disagreement(view, info)
    if disagree:
        why = (
            f"its local header and the central directory disagree on {disagree}: zip readers would see different files"
        )
        problems.append(("zip-format", member.name, why + "; rebuild the wheel"))
    raw = view[start : start + info.compress_size]
    if info.compress_type == zipfile.ZIP_STORED:
        return raw
    if info.compress_type != zipfile.ZIP_DEFLATED:
        problems.append(
            ("zip-format", member.name, f"compression method {info.compress_type}: PyPI accepts only stored or deflate")
        )
        return None
    return _inflate(raw, member, problems)


def _inflate(raw: memoryview, member: Member, problems: list):
    inflater = zlib.decompressobj(-15)
    try:
        # One byte over the declared size is enough to catch a member that lies.
        data = inflater.decompress(raw, member.size + 1)
    except zlib.error:
        problems.append(("zip-format", member.name, "corrupt deflate data: rebuild the wheel"))
        return None
    if len(data) > member.size:
        problems.append(("zip-bomb", member.name, "inflates past its declared size: rebuild the wheel"))
        return None
    if not inflater.eof:
        problems.append(("zip-format", member.name, "deflate stream is truncated: rebuild the wheel"))
        return None
    return data


_CHECKED_FLAGS = 0x0001 | 0x0008 | 0x0800  # encryption, data descriptor, UTF-8 name


def _header_disagreement(view: memoryview, info: zipfile.ZipInfo) -> str | None:
    """What a streaming reader (local headers) would see differently from the central directory.
    PyPI compares names and sizes (the pypi-zip rule); the method and flags matter as much."""
    _sig, _ver, flags, method, *_rest = _LOCAL.unpack_from(view, info.header_offset)
    if method != info.compress_type:
        return f"the compression method ({method} vs {info.compress_type})"
    if (flags ^ info.flag_bits) & _CHECKED_FLAGS:
        return f"the flags (0x{flags:04x} vs 0x{info.flag_bits:04x})"
    return None


def _data_offset(view: memoryview, info: zipfile.ZipInfo) -> int | None:
    pos = info.header_offset
    if pos < 0 or pos + _LOCAL.size > len(view):
        return None
    fields = _LOCAL.unpack_from(view, pos)
    if fields[0] != b"PK\x03\x04":
        return None
    return pos + _LOCAL.size + fields[9] + fields[10]
