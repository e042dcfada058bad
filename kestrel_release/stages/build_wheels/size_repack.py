"""nvcc --compress-mode=size, measured: a CUDA binary's uncompressed SASS images re-packed by the toolkit's own
`fatbinary --compress-mode=size` (adapters/fatbinary.py), the rest of the binary kept as it is.

What a member would weigh in the wheel: the deflated bytes of the binary without those images, plus the
re-packed fat binary (already compressed: deflate gains nothing on it). A member whose images cannot be
found or re-packed gives None, and the plan keeps the zstd estimate for it (size_plan.py says which).

Each answer is kept in the tool's cache (`<cache>/size-repack/`), keyed on what decides it: the member's
bytes, the fatbinary executable's bytes and FORMAT. A rebuild after a `.py` edit links the same binaries,
so its plan re-packs nothing (the re-packs were most of the plan's time: about 24 s of fatbinary for
chamferdist's four sm_90a wheels on 2 cores).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

from kestrel_release.artifacts import cuda_binary, elf, fatbin
from kestrel_release.artifacts.errors import CudaFormatError
from kestrel_release.errors import FilesystemError
from kestrel_release.files import fsutil, statedir
from kestrel_release.ui import console

_PROBE = 256  # leading bytes that locate an image inside its binary (searched in order, never twice)
FORMAT = 1  # part of every cache key: raise it when what `measure` computes changes (the zlib level, the search)


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
    """The member's deflated bytes once its SASS is re-packed with --compress-mode=size; None to estimate.
    From the cache when these bytes were measured with this fatbinary before."""
    entry = _entry(exe, data)
    if entry is not None:
        try:
            kept = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            kept = None  # no entry, or a damaged one: measure
        value = kept.get("size") if isinstance(kept, dict) else None
        if type(value) is int and value >= 0:
            return value
    size = _measure(exe, data, info)
    if entry is not None and size is not None:  # a failed re-pack may be passing (a killed fatbinary): not kept
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            fsutil.atomic_write_text(entry, json.dumps({"size": size}))
        except OSError as exc:
            console.debug(f"size plan: re-pack answer not cached ({exc})")
    return size


def _entry(exe: str, data: bytes) -> Path | None:
    """Where the answer for `data` re-packed by `exe` is kept; None when the tool or the cache is unusable."""
    try:
        st = os.stat(exe)
        tool = _tool_digest(exe, st.st_size, st.st_mtime_ns)
        root = statedir.cache_dir()
    except (OSError, FilesystemError):
        return None
    key = hashlib.sha256(f"{FORMAT}\0{tool}\0".encode() + hashlib.sha256(data).digest()).hexdigest()
    return root / "size-repack" / key[:2] / f"{key}.json"


@functools.lru_cache(maxsize=8)
def _tool_digest(exe: str, size: int, mtime_ns: int) -> str:
    """The fatbinary's own bytes (its version is in them): another toolkit's answer is never reused."""
    return fsutil.sha256_file(Path(exe))


def _measure(exe: str, data: bytes, info: Any) -> int | None:
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
