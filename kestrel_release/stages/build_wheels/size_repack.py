"""nvcc --compress-mode=size, measured: a CUDA binary's uncompressed SASS images re-packed by the toolkit's own
`fatbinary --compress-mode=size` (adapters/fatbinary.py), the rest of the binary kept as it is.

What a member would weigh in the wheel: the deflated bytes of the binary without those images, plus the
re-packed fat binary (already compressed: deflate gains nothing on it). A member whose images cannot be
found or re-packed gives None, and the plan keeps the zstd estimate for it (size_plan.py says which).
"""

from __future__ import annotations

import zlib
from typing import Any

from kestrel_release.artifacts import cuda_binary, elf, fatbin
from kestrel_release.artifacts.errors import CudaFormatError

_PROBE = 256  # leading bytes that locate an image inside its binary (searched in order, never twice)


def _images(data: bytes, info: Any) -> list[tuple[str, memoryview]] | None:
    """(sm, payload) of each uncompressed SASS image of the binary, in file order; None where unknown."""
    view = memoryview(data)
    if data[:4] == elf.ELF_MAGIC and int.from_bytes(data[18:20], "little") == elf.EM_CUDA:
        rows = [e for e in info.entries if e["kind"] == "sass"]
        return [(rows[0]["arch"].removeprefix("sm_"), view)] if len(rows) == 1 else None
    entries: list[fatbin.Entry] = []
    try:
        if data[:4] == fatbin.MAGIC_BYTES:
            entries = fatbin.parse_containers(view, "repack")
        elif data[:4] == elf.ELF_MAGIC:
            image = elf.parse(view, "repack")
            for section in image.sections:
                if section.name in cuda_binary.FATBIN_SECTIONS and section.type != elf.SHT_NOBITS:
                    entries += fatbin.parse_containers(image.content(section), "repack")
    except CudaFormatError:
        return None
    raw = [e for e in entries if e.kind == fatbin.KIND_ELF and not e.compressed]
    return [(f"{e.sm}{e.suffix}", e.payload) for e in raw] or None


def measure(exe: str, data: bytes, info: Any) -> int | None:
    """The member's deflated bytes once its SASS is re-packed with --compress-mode=size; None to estimate."""
    from kestrel_release.adapters import fatbinary

    images = _images(data, info)
    if not images:
        return None
    rest, pos = bytearray(), 0
    for _, payload in images:
        at = data.find(bytes(payload[:_PROBE]), pos)
        if at < 0:
            return None
        rest += data[pos:at]
        pos = at + len(payload)
    rest += data[pos:]
    try:
        packed = fatbinary.compressed_size(exe, [(sm, bytes(p)) for sm, p in images])
    except fatbinary.RepackError:
        return None
    return len(zlib.compress(bytes(rest), 6)) + packed
