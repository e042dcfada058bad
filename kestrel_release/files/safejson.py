"""JSON from anyone (an index, GitHub, a build output someone else made): bounded in size and depth.

`json.loads` reads whatever it is given: 64 MB of `[` is a RecursionError from deep inside the
decoder (an "internal error" to the user), and a document read without a size bound is as large as
the server likes. Every reader of outside JSON goes through here: the bytes are read with a bound,
parsing is guarded against RecursionError, and the result's nesting is checked (iteratively) so no
later walk of it can recurse too deep either. Each refusal is an Unusable (a ValueError) whose
text says what was wrong; the caller turns it into its own one-line error or warning.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # PyPI's JSON API, PEP 691 pages, GitHub's answers and our manifests nest under 10
MIB = 1024 * 1024
MAX_INT_DIGITS = 20  # 2**64 has 20 digits: every size, count and id a server sends fits


class Unusable(ValueError):
    """An answer or file we will not use: too large, nested too deep, or not JSON at all."""


class _Number(ValueError):
    """A number no answer holds: 10**400 bytes, 1e999 (inf), NaN."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Number(f"the number {text[:12]}... ({len(text)} digits)")
    return int(text)


def _float(text: str) -> float:
    import math

    value = float(text)
    if not math.isfinite(value):
        raise _Number(f"the number {text[:24]}")
    return value


def _constant(text: str) -> float:
    raise _Number(f"the number {text}")  # NaN, Infinity: not JSON, though Python's json reads them


def parse(data: bytes | str) -> Any:
    """json.loads with numbers bounded (at most 20 digits, finite); raises _Number (a ValueError) beyond."""
    return json.loads(data, parse_int=_int, parse_float=_float, parse_constant=_constant)


def _size(n: int) -> str:
    return f"{n / MIB:.0f} MiB" if n >= MIB else f"{n} bytes"


def depth(doc: Any, stop_at: int = MAX_DEPTH + 1) -> int:
    """How deeply `doc` nests lists and objects (a scalar is 0, `[]` 1); counting stops at `stop_at`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)] if isinstance(doc, (dict, list)) else []
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if deepest >= stop_at:
            return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def loads(data: bytes | str, what: str, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """The document in `data`; Unusable('<what> ...') when it is larger than `max_bytes`, not
    JSON, or nested deeper than `max_depth`."""
    if len(data) > max_bytes:
        raise Unusable(f"{what} is larger than {_size(max_bytes)}")
    try:
        doc = parse(data)
    except _Number as exc:
        raise Unusable(f"{what} holds {exc}, larger than any real answer") from None
    except RecursionError:  # the C decoder's own depth guard: far deeper than max_depth
        raise Unusable(f"{what} is nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise Unusable(f"{what} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (ValueError, UnicodeDecodeError):  # bytes that are not UTF-8/16/32
        raise Unusable(f"{what} is not valid JSON (not UTF-8 text)") from None
    if depth(doc, max_depth + 1) > max_depth:
        raise Unusable(f"{what} is nested deeper than {max_depth} levels")
    return doc


def load_file(path: Path, what: str, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """`loads` of a file, reading at most `max_bytes` + 1 bytes of it (OSError passes through)."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    return loads(data, what, max_bytes=max_bytes, max_depth=max_depth)


def read_body(resp: Any, what: str, *, max_bytes: int) -> bytes:
    """The body of a streamed `requests` response, refused once it passes `max_bytes` (decoded)."""
    chunks: list[bytes] = []
    got = 0
    for chunk in resp.iter_content(64 * 1024):
        got += len(chunk)
        if got > max_bytes:
            resp.close()
            raise Unusable(f"{what} is larger than {_size(max_bytes)}")
        chunks.append(chunk)
    return b"".join(chunks)


def check_numbers(data: bytes, what: str) -> None:
    """Unusable when the JSON document in `data` holds a number beyond parse's bounds (for answers another
    library parses after us); anything else, not JSON included, is left to that library."""
    if data.lstrip()[:1] not in (b"{", b"["):
        return
    try:
        parse(data)
    except _Number as exc:
        raise Unusable(f"{what} holds {exc}, larger than any real answer") from None
    except (ValueError, RecursionError):
        return
