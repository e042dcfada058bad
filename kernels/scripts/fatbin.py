"""Write a CUDA fat binary around a cubin (and PTX), for compilers that return bare images (NVRTC).

Why a fat binary: the family suffix of sm_100f/sm_120f is recorded only in a fat-binary entry's flags,
never in the cubin (see kestrel-release's docs/cuda-binaries.md), and cuModuleLoadData takes either.
Layout: a 16-byte container header, then entries of a 64-byte header and the payload (padded to 8).
"""

from __future__ import annotations

import re
import struct

MAGIC = 0xBA55ED50
KIND_PTX, KIND_ELF = 1, 2
FLAG_64BIT, FLAG_LINUX, FLAG_ARCH_SPECIFIC, FLAG_FAMILY, FLAG_SM100_ELF = 0x1, 0x10, 0x100000, 0x200000, 0x1000000


def _entry(kind: int, sm: int, suffix: str, payload: bytes, version: tuple[int, int]) -> bytes:
    padded = payload + b"\0" * (-len(payload) % 8)
    flags = FLAG_64BIT | FLAG_LINUX
    flags |= FLAG_ARCH_SPECIFIC if suffix == "a" else FLAG_FAMILY if suffix == "f" else 0
    if kind == KIND_ELF and sm >= 100:
        flags |= FLAG_SM100_ELF
    header = struct.pack(
        "<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(padded), 0, 0, version[0], version[1], sm, 0, 0, flags, 0, 0
    )
    return header + padded


def build(arch: str, cubin: bytes, ptx: bytes | None = None) -> bytes:
    """arch "100f": one ELF entry (and one PTX entry) for it."""
    m = re.fullmatch(r"(\d+)([af]?)", arch)
    if not m:
        raise ValueError(f"not an arch: {arch!r}")
    sm, suffix = int(m.group(1)), m.group(2)
    entries = _entry(KIND_ELF, sm, suffix, cubin, (cubin[8], 1))  # e_ident[8]: the cubin's ABI version
    if ptx is not None:
        text = ptx.rstrip(b"\0") + b"\0"
        v = re.search(rb"^\s*\.version\s+(\d+)\.(\d+)", text, re.MULTILINE)
        version = (int(v.group(2)), int(v.group(1))) if v else (0, 0)  # (minor, major) as nvcc writes it
        entries += _entry(KIND_PTX, sm, suffix, text, version)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(entries)) + entries
