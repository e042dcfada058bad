"""Fat-binary containers (magic 0xBA55ED50) and their entries, per docs/cuda-binaries.md.

Architecture, kind, a/f suffixes, debug flag and identifier all come from the
entry headers; payloads are decompressed (LZ4 block or zstd frame) only when a
caller asks for them, because that is the only expensive step.

Decompression is the one place where a few bytes of input can cost gigabytes, so it has a
budget: an entry's declared size must be plausible for its stored bytes and below a per-image
limit, every image of one binary and of one wheel draws on a shared total (`Budget`), and the
output is streamed with the declared size as its hard maximum: a header that lies about it is
a CudaFormatError after at most that much work, never an allocation the header chose.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from kestrel_release.artifacts.errors import CudaFormatError

MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", MAGIC)
_HEADER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")  # 64 bytes, see the table in docs/cuda-binaries.md
KIND_PTX, KIND_ELF, KIND_LTO = 1, 2, 8
FLAG_DEBUG, FLAG_LZ4, FLAG_ZSTD = 0x2, 0x2000, 0x8000
FLAG_ARCH_SPECIFIC, FLAG_FAMILY = 0x100000, 0x200000
MIB = 1 << 20
# One image, decompressed. The largest real ones (-G cubins of big libraries, PTX of a CUTLASS
# translation unit) are tens of MiB.
MAX_IMAGE = 256 * MIB
# nvcc's zstd and LZ4 images shrink 2-7x (-G, -lineinfo, --compress-mode=size|speed, measured on
# nvcc 13.0 builds); LZ4 cannot exceed ~255x by construction. A header that claims more than this
# over its stored bytes (or more than FLOOR for a tiny entry) is a lie or a bomb.
MAX_RATIO = 1024
FLOOR = 1 * MIB
MAX_PER_BINARY = 1024 * MIB  # every decompressed image of one binary together...
MAX_PER_WHEEL = 2048 * MIB  # ...and of one wheel: bounds the time a wheel of lying headers can cost
_CHUNK = 4 * MIB


@dataclass
class Entry:
    kind: int
    sm: int
    flags: int
    identifier: str
    compressed: bool
    uncompressed_size: int
    payload: memoryview  # stored bytes (compressed when `compressed`)
    version: tuple[int, int] = (0, 0)  # (major, minor): ELF ABI (7 = V1, 8 = V2) or PTX ISA (8.8, 9.0)

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

    def data(self, what: str, budget: Budget | None = None) -> bytes | bytearray | memoryview:
        """The payload, decompressed if needed (its declared size drawn from `budget`)."""
        if not self.compressed:
            return self.payload
        self._admit(what, budget)
        out = bytearray(self.uncompressed_size)  # admitted: at most MAX_IMAGE and consistent with the input
        got = 0
        for chunk in _stream(self, what):
            out[got : got + len(chunk)] = chunk
            got += len(chunk)
        return out

    def chunks(self, what: str, budget: Budget | None = None) -> Iterator[bytes | memoryview]:
        """The payload in pieces of at most a few MiB, decompressed as they are read: for scans
        that need not hold the whole image (the PTX text)."""
        if not self.compressed:
            yield self.payload
            return
        self._admit(what, budget)
        yield from _stream(self, what)

    def _admit(self, what: str, budget: Budget | None) -> None:
        """Refuse a declared size its stored bytes cannot honestly give, then draw it from `budget`."""
        size, stored = self.uncompressed_size, len(self.payload)
        # LZ4 cannot expand more than ~255x: a larger claim is a lie that would only cost memory.
        ratio = MAX_RATIO if self.flags & FLAG_ZSTD else 256
        if size <= 0 or size > min(MAX_IMAGE, max(FLOOR, ratio * stored + 64)):
            raise CudaFormatError(
                f"{what}: a compressed fat-binary entry declares {size} bytes uncompressed from {stored} stored "
                f"(the reader allows up to {ratio}:1 and {MAX_IMAGE // MIB} MiB per image): a lying or hostile header"
            )
        if budget is not None:
            budget.take(size, what)


class Budget:
    """The bytes the reader may still decompress, here and in every enclosing budget (a binary's
    draws on its wheel's): the total work of one binary and of one wheel is bounded, whatever
    each header claims."""

    def __init__(self, limit: int, scope: str, parent: Budget | None = None) -> None:
        self.limit, self.left, self.scope, self.parent = limit, limit, scope, parent

    def take(self, size: int, what: str) -> None:
        # One lock for every budget: the wheel reader inspects several binaries of one wheel at once,
        # all drawing on the wheel's budget (a lost update would loosen the bound).
        with _TAKE:
            chain = []
            budget: Budget | None = self
            while budget is not None:
                if size > budget.left:
                    raise CudaFormatError(
                        f"{what}: its compressed fat-binary entries declare more than {budget.limit // MIB} MiB "
                        f"uncompressed in {budget.scope}, more than any real build: a lying or hostile header"
                    )
                chain.append(budget)
                budget = budget.parent
            for budget in chain:
                budget.left -= size


_TAKE = threading.Lock()


def _stream(entry: Entry, what: str) -> Iterator[bytes]:
    """Exactly `uncompressed_size` bytes in chunks: never more output than the header declared,
    and a CudaFormatError (after the last chunk) when the data gives fewer or more."""
    import lz4.block
    import zstandard

    size, got, more = entry.uncompressed_size, 0, False
    try:
        if entry.flags & FLAG_ZSTD:
            with zstandard.ZstdDecompressor().stream_reader(entry.payload, read_across_frames=False) as reader:
                while got < size:
                    chunk = reader.read(min(_CHUNK, size - got))
                    if not chunk:
                        break
                    got += len(chunk)
                    yield chunk
                more = got == size and bool(reader.read(1))
        else:  # one LZ4 block: the declared size is the buffer the decoder writes into, never more
            chunk = lz4.block.decompress(entry.payload, uncompressed_size=size)
            got = len(chunk)
            yield chunk
    except (zstandard.ZstdError, lz4.block.LZ4BlockError, ValueError, MemoryError) as exc:
        raise CudaFormatError(f"{what}: corrupt compressed fat-binary entry ({type(exc).__name__})") from None
    if got != size or more:
        which = "more" if more else f"only {got}"
        raise CudaFormatError(
            f"{what}: a compressed fat-binary entry inflates to {which} bytes, not the {size} its header declares: "
            "a lying or corrupt header"
        )


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
        (kind, _ver, hsize, psize, csize, _opts, minor, major, sm, id_off, id_len, flags, _zero, usize) = (
            _ENTRY.unpack_from(body, pos)
        )
        if hsize < _ENTRY.size or pos + hsize + psize > len(body):
            raise CudaFormatError(f"{what}: truncated fat-binary entry at offset {pos}")
        header = body[pos : pos + hsize]
        ident = bytes(header[id_off : id_off + id_len]).split(b"\0", 1)[0] if id_len and id_off < hsize else b""
        compressed = bool(flags & (FLAG_LZ4 | FLAG_ZSTD))
        stored = csize if compressed and 0 < csize <= psize else psize
        payload = body[pos + hsize : pos + hsize + stored]
        out.append(Entry(kind, sm, flags, ident.decode("utf-8", "replace"), compressed, usize, payload, (major, minor)))
        pos += hsize + psize
    return out
