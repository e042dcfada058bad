"""A wheel's members: their records, their bytes out of the mapped file, and the checks on them.

Member and WheelFile are what artifacts/wheel.py's read fills in (it re-exports them, as its callers read them there).

The local header is checked against the central directory, stored data is sliced and deflate data
inflated (big members hashed chunk by chunk as they inflate), never past the declared size; the
archive-level checks flag unsafe names and zip bombs before anything is inflated. Problems are appended
as (rule, member, message); nothing here raises for what is inside a readable zip.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import struct
import zipfile
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIB = 1024 * 1024
BOMB_SIZE = 64 * MIB  # PyPI refuses a zip over this uncompressed size...
BOMB_RATIO = 50  # ...when it also compresses better than this
MAX_MEMBER = 4 * 1024 * MIB  # never inflate more than this for one member
HASH_WHILE_INFLATING = 32 * MIB  # members this big are hashed chunk by chunk as they inflate
INFLATE_CHUNK = 4 * MIB  # input and output, per step
_LOCAL = struct.Struct("<4sHHHHHIIIHH")

Problem = tuple[str, str, str]  # (rule, member, message)


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


@functools.cache
def inflating() -> Any:
    """ISA-L's inflate (python-isal): the same bytes as zlib's, 1.6-1.8x as fast on CUDA libraries, GIL
    released; zlib on a platform python-isal has no wheel for. Imported on the first member, not at import."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib
    return isal_zlib


def _inflate_errors() -> tuple[type[Exception], ...]:
    return (zlib.error, inflating().error)


def record_digest(data: bytes | memoryview) -> str:
    return record_form(hashlib.sha256(data).digest())


def record_form(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def check_names(wheel: WheelFile) -> None:
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


def is_bomb(wheel: WheelFile) -> bool:
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


def member_bytes(
    view: memoryview, info: zipfile.ZipInfo, member: Member, problems: list[Problem], chunked: bool = True
) -> memoryview | bytes | tuple[bytes, str] | None:
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
    if chunked and member.size >= HASH_WHILE_INFLATING:
        return inflate_hashing(raw, member, problems)
    return inflate(raw, member, problems)


def inflate_hashing(raw: memoryview, member: Member, problems: list[Problem]) -> tuple[bytes, str] | None:
    """(bytes, RECORD digest) of a big member: inflated a chunk at a time, each chunk hashed on a second
    thread while the next one inflates. Why: hashing after inflating added a third to the member's
    time (0.11 s per 160 MiB here); as RECORD needs the hash of the inflated bytes, it can only overlap."""
    inflater, hasher, total, pos = inflating().decompressobj(-15), hashlib.sha256(), 0, 0
    parts: list[bytes] = []
    left: bytes | memoryview = b""
    with ThreadPoolExecutor(1) as hashing:
        pending: Future | None = None
        try:
            while not inflater.eof:
                if not left and pos < len(raw):  # a slice at a time: unconsumed_tail is a copy of the rest
                    left, pos = raw[pos : pos + INFLATE_CHUNK], pos + INFLATE_CHUNK
                # One byte over the declared size is enough to catch a member that lies. With no input
                # left this still runs once: it gives what zlib holds back when the output filled up.
                chunk = inflater.decompress(left, min(INFLATE_CHUNK, member.size + 1 - total))
                stuck = not chunk and len(inflater.unconsumed_tail) == len(left)
                left = inflater.unconsumed_tail
                if stuck:
                    break  # no input taken, no output given: the input ended before the stream did
                total += len(chunk)
                if total > member.size:
                    problems.append(("zip-bomb", member.name, "inflates past its declared size: rebuild the wheel"))
                    return None
                if chunk:
                    if pending is not None:
                        pending.result()
                    pending = hashing.submit(hasher.update, chunk)
                    parts.append(chunk)
        except _inflate_errors():
            problems.append(("zip-format", member.name, "corrupt deflate data: rebuild the wheel"))
            return None
        finally:
            if pending is not None:
                pending.result()
    if not inflater.eof:
        problems.append(("zip-format", member.name, "deflate stream is truncated: rebuild the wheel"))
        return None
    return b"".join(parts), record_form(hasher.digest())


def inflate(raw: memoryview, member: Member, problems: list[Problem]) -> bytes | None:
    inflater = inflating().decompressobj(-15)
    try:
        # One byte over the declared size is enough to catch a member that lies.
        data = inflater.decompress(raw, member.size + 1)
    except _inflate_errors():
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
