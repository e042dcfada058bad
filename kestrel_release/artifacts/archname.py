"""Architectures a precompiled file is named for: `attn_sm90a.so`, `gemm.sm_90a.cubin`,
`foo-sm80.cubin`, `kernel_sm_100a.fatbin`.

Why: a loader picks such files by name, so a file named for one architecture that
holds another's SASS fails only on the GPU it was meant for (the upstream once shipped
a loader/precompile mismatch).
"""

from __future__ import annotations

import re

# 'sm', an optional '_', 2-3 digits, an optional a/f suffix, not glued to other letters or digits
# (so 'asm80', 'sm800x' and 'sm_90ab' are not architecture names).
_NAMED = re.compile(r"(?<![a-z0-9])sm_?(\d{2,3})([af]?)(?![a-z0-9])")


def named_archs(member: str) -> list[str]:
    """['sm_90a'] for '.../attn_sm90a.so'; [] when the file name names no architecture."""
    base = member.rsplit("/", 1)[-1].lower()
    return sorted({f"sm_{num}{suffix}" for num, suffix in _NAMED.findall(base)})


def holds(named: str, sass: list[str]) -> bool:
    """Whether SASS for `named` is among `sass` (the reader's sm_XX[a|f] names).

    sm_90 is satisfied by any sm_90 variant; sm_90a needs sm_90a; sm_100f needs sm_100f,
    or a plain sm_100 from a cubin (a cubin does not record 'f', docs/cuda-binaries.md).
    """
    num, suffix = re.fullmatch(r"sm_(\d+)([af]?)", named).groups()  # type: ignore[union-attr]
    if suffix == "a":
        return named in sass
    if suffix == "f":
        return named in sass or f"sm_{num}" in sass
    return any(re.fullmatch(rf"sm_{num}[af]?", arch) for arch in sass)
