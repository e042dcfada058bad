"""Fat-binary containers (magic 0xBA55ED50) and their entries, per docs/cuda-binaries.md.

Architecture, kind, a/f suffixes, debug flag and identifier all come from the
entry headers; payloads are decompressed (LZ4 block or zstd frame) only when a
caller asks for them, because that is the only expensive step.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kestrel_release.inspect.errors import CudaFormatError

MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", MAGIC)
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")  # 64 bytes, see the table in docs/cuda-binaries.md
KIND_PTX, KIND_ELF, KIND_LTO = 1, 2, 8
FLAG_DEBUG, FLAG_LZ4, FLAG_ZSTD = 0x2, 0x2000, 0x8000
FLAG_ARCH_SPECIFIC, FLAG_FAMILY = 0x100000, 0x200000
MAX_UNCOMPRESSED = 1 << 31  # a decompression bomb guard: no real image is 2 GiB


@dataclass
class Entry:
    kind: int
    sm: int
    flags: int
    identifier: str
    compressed: bool
    uncompressed_size: int
    payload: memoryview  # stored bytes (compressed when `compressed`)

    @property
    def suffix(self) -> str:
        if self.flags & FLAG_ARCH_SPECIFIC:
            return "a"
        return "f" if self.flags & FLAG_FAMILY else ""

    @property
    def arch(self) -> str:
        """sm_90a for SASS, compute_90a for PTX, lto_90a for LTO-IR (nvcc's code= names)."""
        prefix = {KIND_ELF: "sm", KIND_LTO: "lto"}.get(self.kind, "compute")
        return f"{prefix}_{self.sm}{self.suffix}"

    def data(self, what: str) -> bytes | memoryview:
        """The payload, decompressed if needed."""
        if not self.compressed:
            return self.payload
        return _decompress(self, what)


def _decompress(entry: Entry, what: str) -> bytes:
    size = entry.uncompressed_size
    # LZ4 cannot expand more than ~255x: a larger claim is a lie that would only cost memory.
    limit = MAX_UNCOMPRESSED if entry.flags & FLAG_ZSTD else min(MAX_UNCOMPRESSED, 256 * len(entry.payload) + 64)
    if size <= 0 or size > limit:
        raise CudaFormatError(f"{what}: fat-binary entry with implausible size {size}")
    import lz4.block
    import zstandard

    try:
        if entry.flags & FLAG_ZSTD:
            return zstandard.ZstdDecompressor().decompress(bytes(entry.payload), max_output_size=size)
        return lz4.block.decompress(bytes(entry.payload), uncompressed_size=size)
    except (zstandard.ZstdError, lz4.block.LZ4BlockError, ValueError, MemoryError) as exc:
        raise CudaFormatError(f"{what}: corrupt compressed fat-binary entry ({type(exc).__name__})") from None


def parse_containers(data: memoryview, what: str, strict: bool = True) -> list[Entry]:
    """Every entry of the containers laid back to back in `data` (8-byte aligned, zero padding between).

    With strict=False (a magic found by scanning), stop quietly at the first
    thing that is not a container instead of raising.
    """
    entries: list[Entry] = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        magic, _version, header_size, size = _HEADER.unpack_from(data, pos)
        if magic != MAGIC:
            # Zero padding is normal after the last container and between containers: MSVC's
            # linker aligns each one in a DLL's `__nv_rel` section to 16 bytes (bitsandbytes).
            if not any(data[pos : pos + 8]):
                pos = _skip_zeros(data, pos)
                continue
            if strict:
                raise CudaFormatError(f"{what}: bad fat-binary magic at offset {pos}")
            break
        end = pos + header_size + size
        if header_size < _HEADER.size or end > len(data):
            if strict:
                raise CudaFormatError(f"{what}: truncated fat binary at offset {pos}")
            break
        entries += _entries(data[pos + header_size : end], what)
        pos = (end + 7) & ~7
    return entries


def _skip_zeros(data: memoryview, pos: int) -> int:
    """The first 8-byte word at or after `pos` (8-aligned) that is not all zero, or len(data)."""
    step = 1 << 16
    while pos < len(data):
        chunk = bytes(data[pos : pos + step])
        zeros = len(chunk) - len(chunk.lstrip(b"\0"))
        if zeros < len(chunk):
            return pos + (zeros & ~7)
        pos += len(chunk)
    return len(data)


def container_at(data: memoryview, pos: int, what: str) -> tuple[list[Entry], int] | None:
    """A container found by a magic scan at `pos`: its entries and end, or None if bogus."""
    if pos + _HEADER.size > len(data):
        return None
    _magic, version, header_size, size = _HEADER.unpack_from(data, pos)
    end = pos + header_size + size
    if version != 1 or header_size != _HEADER.size or end > len(data) or size == 0:
        return None
    try:
        return _entries(data[pos + header_size : end], what), end
    except CudaFormatError:
        return None


def _entries(body: memoryview, what: str) -> list[Entry]:
    out: list[Entry] = []
    pos = 0
    while pos + _ENTRY.size <= len(body):
        (kind, _ver, hsize, psize, csize, _opts, _minor, _major, sm, id_off, id_len, flags, _zero, usize) = (
            _ENTRY.unpack_from(body, pos)
        )
        if hsize < _ENTRY.size or pos + hsize + psize > len(body):
            raise CudaFormatError(f"{what}: truncated fat-binary entry at offset {pos}")
        header = body[pos : pos + hsize]
        ident = bytes(header[id_off : id_off + id_len]).split(b"\0", 1)[0] if id_len and id_off < hsize else b""
        compressed = bool(flags & (FLAG_LZ4 | FLAG_ZSTD))
        stored = csize if compressed and 0 < csize <= psize else psize
        payload = body[pos + hsize : pos + hsize + stored]
        out.append(Entry(kind, sm, flags, ident.decode("utf-8", "replace"), compressed, usize, payload))
        pos += hsize + psize
    return out
