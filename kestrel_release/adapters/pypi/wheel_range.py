"""A remote wheel's METADATA read by HTTP range requests, for an index that serves no PEP 658 file.

PyPI serves `<wheel URL>.metadata`, but mirrors and proxies often do not (they answer 404), while they do
honour `Range:` on the wheel itself. A torch wheel is ~550 MB; its METADATA is a few kilobytes. So, as pip's
lazy wheel does: the zip's end record (the last 64 KiB), then its central directory, then the one member;
three bounded requests. Every size read from the remote bytes is bounded before it is asked for.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Callable

TAIL = 64 * 1024  # the end record and a zip comment of at most 64 KiB
DIRECTORY_MAX = 32 * 1024 * 1024  # torch's central directory is ~2 MB
MEMBER_MAX = 4 * 1024 * 1024
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"
_METADATA = re.compile(r"[^/]+\.dist-info/METADATA")

# read(url, start, length) -> at most those bytes (a negative start: the last -start bytes); raises on failure.
Reader = Callable[[str, int, int], bytes]


class NotAWheel(ValueError):
    """The bytes are not a zip this module can read; the message says what is wrong."""


def metadata(url: str, read: Reader) -> str:
    """The METADATA text of the wheel at `url`."""
    tail = read(url, -TAIL, TAIL)
    offset, size = _directory(url, tail, read)
    if size > DIRECTORY_MAX:
        raise NotAWheel(f"its central directory is {size} bytes, more than {DIRECTORY_MAX}")
    directory = read(url, offset, size)
    local, method, packed, name_len = _member(directory)
    if packed > MEMBER_MAX:
        raise NotAWheel(f"its METADATA is {packed} bytes compressed, more than {MEMBER_MAX}")
    head = read(url, local, 30 + name_len + 0xFFFF + packed)  # the extra field is at most 64 KiB
    if head[:4] != b"PK\x03\x04":
        raise NotAWheel("its METADATA entry points at no local header")
    start = 30 + struct.unpack("<H", head[26:28])[0] + struct.unpack("<H", head[28:30])[0]
    data = head[start : start + packed]
    if method == 0:
        return data.decode("utf-8", "replace")
    if method != 8:
        raise NotAWheel(f"its METADATA is compressed by method {method}")
    inflater = zlib.decompressobj(-15)
    text = inflater.decompress(data, MEMBER_MAX)
    return text.decode("utf-8", "replace")


def _directory(url: str, tail: bytes, read: Reader) -> tuple[int, int]:
    """(offset, size) of the central directory, from the end record (zip64's when the zip needs it)."""
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise NotAWheel("no zip end record in its last 64 KiB")
    size, offset = struct.unpack("<II", tail[at + 12 : at + 20])
    if offset != 0xFFFFFFFF and size != 0xFFFFFFFF:
        return offset, size
    locator = tail[at - 20 : at] if at >= 20 else b""
    if locator[:4] != _ZIP64_LOCATOR:
        raise NotAWheel("a zip64 end record is announced but not found")
    record = read(url, struct.unpack("<Q", locator[8:16])[0], 56)
    if record[:4] != b"PK\x06\x06":
        raise NotAWheel("the zip64 end record is not where its locator says")
    size, offset = struct.unpack("<QQ", record[40:56])
    return offset, size


def _member(directory: bytes) -> tuple[int, int, int, int]:
    """(local header offset, method, compressed size, name length) of `*.dist-info/METADATA`."""
    pos = 0
    while directory[pos : pos + 4] == _CENTRAL and pos + 46 <= len(directory):
        method = struct.unpack("<H", directory[pos + 10 : pos + 12])[0]
        packed = struct.unpack("<I", directory[pos + 20 : pos + 24])[0]
        name_len, extra_len, comment_len = struct.unpack("<HHH", directory[pos + 28 : pos + 34])
        local = struct.unpack("<I", directory[pos + 42 : pos + 46])[0]
        name = directory[pos + 46 : pos + 46 + name_len].decode("utf-8", "replace")
        if _METADATA.fullmatch(name):
            return local, method, packed, name_len
        pos += 46 + name_len + extra_len + comment_len
    raise NotAWheel("no *.dist-info/METADATA in its central directory")
