"""The first real error of a build log: what a failed build's summary line quotes.

A failed torch extension build ends in a Python traceback (`RuntimeError: Error compiling objects for
extension`), the frontend's own summary and ninja's `build stopped`; the cause is a compiler, linker or
CMake line far above, often thousands of lines up, among the warnings of the jobs still running. So the
whole log is read (streamed) and each line is ranked: a diagnostic of gcc, clang, nvcc, ptxas, MSVC, ld or
CMake first, then a build driver's summary (ninja, make, setuptools), then a Python exception line; the
first line of the best rank found is the one quoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

# Rank 0: the compiler, linker or configure step said what is wrong.
_DIAGNOSTIC = re.compile(
    "|".join(
        (
            r"^\S.*?:\d+(:\d+)?: (fatal )?error: ",  # gcc/clang: path:line[:col]: [fatal ]error:
            r"^\S.*?\(\d+\)( \(col\. \d+\))?: (catastrophic |fatal )?error( [A-Z]+\d+)?: ",  # nvcc, MSVC: path(line)
            r"^(\S+/)?(cc1|cc1plus|gcc|g\+\+|cc|c\+\+|clang(\+\+)?|icpx|nvcc|nvc\+\+|cicc|ptxas|nvlink|fatbinary)"
            r"(-\d+)?(\.exe)?(:\s*|\s+)(fatal error|fatal|error)\s*:",  # a driver about itself: `nvcc fatal   : ...`
            r"undefined reference to ",
            r"^(\S+/)?(ld|ld\.lld|ld\.gold|ld\.bfd|lld|ld64\.lld)(\.exe)?: (error: |cannot find |fatal)",
            r"^Undefined symbols for architecture ",
            r"^\s*LINK : fatal error LNK\d+|: (fatal )?error LNK\d+: ",
            r"^CMake Error\b",
        )
    )
)
# Rank 1: a build driver's summary of a failed step (it names the step, not the cause).
_DRIVER = re.compile(
    r"^(FAILED: |ninja: build stopped|make(\[\d+\])?: \*\*\* |collect2: error: |error: command .* failed"
    r"|gmake(\[\d+\])?: \*\*\* |error: subprocess-exited-with-error)"
)
# Rank 2: a Python exception (the backend's traceback), a tool's own `ERROR:` line.
_PYTHON = re.compile(r"^(\w+\.)*\w*(Error|Exception|Exit|Interrupt): |^ERROR: ")
# Lines that only mention errors: a warning naming -Werror, a command line echoed by a driver.
_NOT_AN_ERROR = re.compile(r": warning[: ]|^\+ |^\s*(\[\d+/\d+\] )?\S*(nvcc|gcc|g\+\+|c\+\+|cc|clang)\s+-")
_RANKS = (_DIAGNOSTIC, _DRIVER, _PYTHON)
_LONGEST = 400  # characters of a quoted line: a diagnostic names a path and a message, not a whole command


def first_error(lines: Iterable[str]) -> str | None:
    """The first line of the best rank in `lines` (see the module doc), stripped; None when no line looks
    like an error. Stops at the first compiler/linker diagnostic: nothing ranks above it."""
    best: tuple[int, str] | None = None
    for raw in lines:
        line = raw.strip()
        if not line or _NOT_AN_ERROR.search(line):
            continue
        for rank, pattern in enumerate(_RANKS):
            if best is not None and rank >= best[0]:
                break
            if pattern.search(line):
                best = (rank, line)
                break
        if best is not None and best[0] == 0:
            break
    if best is None:
        return None
    text = best[1]
    return text if len(text) <= _LONGEST else text[: _LONGEST - 3] + "..."


def first_error_in(log: Path) -> str | None:
    """`first_error` over a log file, read line by line (a torch build's log runs to many megabytes)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            return first_error(fh)
    except OSError:
        return None
