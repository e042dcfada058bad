"""Find a pattern's first match in a large member fast: literal needles first, the regex only where one is.

Why: `re.search` over a 16 MiB member tries every byte for a pattern that starts with `\\b`, a
character class or an alternation (no literal prefix for the engine to skip to), ~0.2-1 s per
pattern. Every leak pattern starts with a fixed literal (`ghp_`, `AKIA`, `/home/`, `:\\Users`), so
`bytes.find` (memchr-speed) locates the few candidates and `pattern.match` confirms each one
in place: same matches, same first match, since a match can only start where its needle is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Needled:
    """`pattern` and the literals every match contains: (needle, offset of the needle from the match start)."""

    pattern: re.Pattern[bytes]
    needles: tuple[tuple[bytes, int], ...]

    def first(self, blob: bytes, pos: int = 0, endpos: int | None = None) -> re.Match[bytes] | None:
        """The leftmost match of `pattern` in `blob[:endpos]` at or after `pos`, as
        `pattern.search(blob, pos, endpos)` finds it."""
        best: re.Match[bytes] | None = None
        stop = len(blob) if endpos is None else min(endpos, len(blob))
        for needle, back in self.needles:
            end = stop if best is None else best.start() + back + len(needle)  # only earlier ones matter
            at = blob.find(needle, pos + back, end)
            while at != -1:
                start = at - back
                match = self.pattern.match(blob, start, stop) if start >= pos else None  # `\b` sees blob[start-1]
                if match is not None:
                    if best is None or match.start() < best.start():
                        best = match
                    break
                at = blob.find(needle, at + 1, end)
        return best


def needled(pattern: bytes, *needles: bytes | tuple[bytes, int]) -> Needled:
    """A Needled whose needles start the match (plain bytes) or sit `offset` bytes into it ((bytes, offset))."""
    return Needled(re.compile(pattern), tuple(n if isinstance(n, tuple) else (n, 0) for n in needles))


# Bytes a credential is made of: every pattern the leak scan looks for holds a run of at least MIN_RUN of
# them (a token's random part, a key's base64 body), which machine code and most data rarely have.
TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/-"
MIN_RUN = 16
_MARK = bytes(0x61 if c in TOKEN_BYTES else 0 for c in range(256))
_RUN = b"a" * MIN_RUN


def windows(blob: bytes, start: int, end: int, margin: int) -> list[tuple[int, int]]:
    """The parts of blob[start:end] a credential can be in: each run of >= MIN_RUN token bytes, from `margin`
    bytes before it (what precedes the run in a match: a PEM armor line) to its end; nearby ones merged.

    Why: searching a 1.9 GB wheel of cubins for each needle took 16 passes; one `translate` pass marks the
    token bytes and one `find` skips to the runs, so the needles only search the few kilobytes around them
    (a string table, a constant). A match contains its run, so it lies inside a window."""
    marked = blob[start:end].translate(_MARK)
    out: list[tuple[int, int]] = []
    at = marked.find(_RUN)
    while at != -1:
        stop = marked.find(b"\0", at)
        stop = len(marked) if stop == -1 else stop
        # Each window also covers `margin` bytes past its run, so the search jumps there (a string table's
        # hundreds of names cost a few iterations); a run crossing that point still has MIN_RUN token
        # bytes ending past it, found by starting MIN_RUN before it.
        reach = min(len(marked), stop + margin)
        lo, hi = max(0, at - margin) + start, reach + start
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
        at = marked.find(_RUN, max(stop, reach - MIN_RUN))
    return out
