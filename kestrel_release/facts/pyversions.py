"""The CPython versions the tool knows, and which wheel tags serve each one. Pure.

The one list of Pythons: config's default and validation, `init`'s candidates, the verify matrix,
explain, `publish --python` and the smoke test read it. A name is "3.14" (the regular build) or "3.14t"
(the free-threaded build, PEP 703, from 3.13 on). Which (interpreter, abi) tags an interpreter installs
is packaging.tags' answer, so `cp310-abi3` serves 3.14 but not 3.14t (abi3 is the GIL build's stable ABI),
`cp315-abi3t` serves 3.15t and every later free-threaded build (PEP 803, from CPython 3.15), and
`cp314-none` or `py3-none` serve both builds.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# 3.9 reached end of life in October 2025; 3.15 was released in October 2026.
KNOWN_MINORS = (10, 11, 12, 13, 14, 15)
FREE_THREADED_FROM = 13  # the first CPython with a free-threaded build (cp313t, experimental)
FREE_THREADED_SUPPORTED_FROM = 14  # PEP 779: no longer experimental
ABI3T_FROM = 15  # PEP 803: the free-threaded stable ABI, `abi3t`
DEFAULT = tuple(f"3.{m}" for m in KNOWN_MINORS if m <= 13)  # what an unconfigured project builds

_NAME = re.compile(r"3\.(\d{1,2})(t?)")
_LOOSE = re.compile(r"(?:cp|py)?3\.?(\d{1,2})(t?)")


@dataclass(frozen=True, order=True)
class Py:
    """One CPython build: 3.14 or the free-threaded 3.14t."""

    minor: int
    free_threaded: bool = False

    @property
    def name(self) -> str:
        return f"3.{self.minor}{'t' if self.free_threaded else ''}"

    @property
    def interpreter(self) -> str:
        return f"cp3{self.minor}"

    @property
    def abi(self) -> str:
        """The ABI tag of a wheel built for this Python alone: cp314 or cp314t."""
        return self.interpreter + ("t" if self.free_threaded else "")


def parse(text: str, loose: bool = False) -> Py | None:
    """'3.14' or '3.14t' -> Py; with `loose` also '314', 'cp314t', 'py312'. None when it is not one."""
    m = (_LOOSE if loose else _NAME).fullmatch(text.strip().lower() if loose else text)
    return Py(int(m.group(1)), bool(m.group(2))) if m else None


def problem(text: str) -> str | None:
    """Why `text` is not a Python the config may list (None when it is): for config validation."""
    py = parse(text)
    if py is None:
        return f"'{text}' is not a CPython version like 3.12 (or 3.14t for the free-threaded build)"
    if py.free_threaded and py.minor < FREE_THREADED_FROM:
        return f"'{text}': free-threaded builds exist from CPython 3.{FREE_THREADED_FROM} on"
    return None


def known(free_threaded: bool = True, free_threaded_from: int = FREE_THREADED_FROM) -> tuple[str, ...]:
    """Every Python the tool knows, oldest first; the free-threaded builds (from `free_threaded_from`)
    after their regular ones."""
    out = []
    for minor in KNOWN_MINORS:
        out.append(f"3.{minor}")
        if free_threaded and minor >= free_threaded_from:
            out.append(f"3.{minor}t")
    return tuple(out)


def sort_key(name: str) -> tuple[int, bool]:
    py = parse(name, loose=True)
    return (py.minor, py.free_threaded) if py else (0, False)


@functools.cache
def tag_pairs(py: Py) -> tuple[tuple[str, str], ...]:
    """(interpreter, abi) pairs the interpreter installs, best first (packaging's order: cpXY, abi3(t), none)."""
    from packaging import tags

    version = (3, py.minor)
    out: list[tuple[str, str]] = []
    both = [
        *tags.cpython_tags(version, abis=[py.abi], platforms=["x"]),
        *tags.compatible_tags(version, py.interpreter, ["x"]),
    ]
    for tag in both:
        pair = (tag.interpreter, tag.abi)
        if pair not in out:
            out.append(pair)
    return tuple(out)


def serves(interpreter: str, abi: str, name: str) -> bool:
    """True when a wheel tagged `interpreter-abi` installs on the Python `name` ('3.14t')."""
    py = parse(name, loose=True)
    return py is not None and (interpreter, abi) in tag_pairs(py)


def floor(interpreter: str, abi: str) -> int | None:
    """The minor version an open-ended tag starts at (cp310-abi3: 10, py3-none: 0); None for one Python's tag."""
    m = re.fullmatch(r"(cp|py)3(\d*)", interpreter)
    if not m:
        return None
    if m.group(2) == "":
        return 0
    if abi in ("abi3", "abi3t") or (m.group(1) == "py" and abi == "none"):
        return int(m.group(2))
    return None
