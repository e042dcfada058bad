"""Bounds on a wheel's METADATA before any email parsing: one linear pass, then only the fields that matter.

Why: packaging's `parse_email` asks the message for every distinct header name in turn (`get_all` walks all
headers each time), so a METADATA of 10^5 made-up headers took minutes to read, in verify, publish and
release alike. `bounded` keeps a parse linear (only the core-metadata fields reach the email parser, at most
MAX_HEADERS of them, from at most MAX_BYTES), and `problem` is the one verify finding for a METADATA over those
limits. Pure: no console, no I/O.
"""

from __future__ import annotations

import re

#: Far above real wheels (torch's METADATA: ~60 headers, 40 KB); a larger one is refused by verify.
MAX_HEADERS = 10_000
MAX_BYTES = 16 * 1024 * 1024

# The core-metadata fields (packaging.metadata's mapping, spelled out: its table is private).
FIELDS = frozenset(
    [
        "author",
        "author-email",
        "classifier",
        "description",
        "description-content-type",
        "download-url",
        "dynamic",
        "home-page",
        "import-name",
        "import-namespace",
        "keywords",
        "license",
        "license-expression",
        "license-file",
        "maintainer",
        "maintainer-email",
        "metadata-version",
        "name",
        "obsoletes",
        "obsoletes-dist",
        "platform",
        "project-url",
        "provides",
        "provides-dist",
        "provides-extra",
        "requires",
        "requires-dist",
        "requires-external",
        "requires-python",
        "summary",
        "supported-platform",
        "version",
    ]
)
_HEADER = re.compile(rb"^([\x21-\x39\x3b-\x7e]+):")  # email.feedparser's header line (a name, then a colon)
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n|$)")
TYPE_CHECKING = False
if TYPE_CHECKING:
    from email.message import Message


def _header_lines(data: bytes) -> tuple[list[bytes], int, int]:
    """(the header block's lines, the offset where the body starts, the number of fields), as the email
    parser splits them; the scan stops after MAX_HEADERS + 1 fields or MAX_BYTES (offset -1: no body read)."""
    lines: list[bytes] = []
    at = fields = 0
    for found in _LINE.finditer(data, 0, MAX_BYTES):
        line = found.group()
        if not line:
            break
        if line[:1] in (b" ", b"\t") and lines:
            lines.append(line)
        elif _HEADER.match(line):
            fields += 1
            if fields > MAX_HEADERS:
                return lines, -1, fields
            lines.append(line)
        else:
            if not line.strip(b"\r\n"):
                at += len(line)  # the blank line ending the headers belongs to neither
            break
        at += len(line)
    return lines, at, fields


def problem(data: bytes) -> str | None:
    """Why METADATA is over the limits (one sentence), or None."""
    if len(data) > MAX_BYTES:
        return f"is {len(data):,} bytes, over the limit of {MAX_BYTES:,}: rebuild the wheel with a shorter description"
    if _header_lines(data)[2] > MAX_HEADERS:
        return f"has more than {MAX_HEADERS:,} header lines: rebuild the wheel with real metadata"
    return None


def bounded(data: bytes) -> bytes:
    """METADATA with only the core-metadata fields (of the first MAX_HEADERS) and the body: what a parse may
    read. Work and result are bounded by MAX_HEADERS and MAX_BYTES whatever `data` holds."""
    lines, at, _fields = _header_lines(data)
    kept: list[bytes] = []
    keep = False
    for line in lines:
        if line[:1] not in (b" ", b"\t"):
            keep = line.split(b":", 1)[0].decode("ascii").lower() in FIELDS  # _header_lines matched its name
        if keep:
            kept.append(line)
    return b"".join(kept) + b"\n" + (data[at:MAX_BYTES] if at >= 0 else b"")


def headers(data: bytes) -> Message:
    """The core-metadata headers of METADATA (email.message.Message, values as str), read within the bounds."""
    from email.parser import HeaderParser

    return HeaderParser().parsestr(bounded(data).decode("utf-8", "replace"))
