"""Just enough ELF reading to check a cubin's architecture and cleanliness (see shared/docs/cuda-binaries.md)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

EM_CUDA = 190
SHT_NV_COMPAT = 0x70000086


@dataclass
class CubinInfo:
    sm: int
    arch_specific: bool
    abi_version: int
    sections: dict  # name -> bytes

    @property
    def arch(self) -> str:
        return f"sm_{self.sm}{'a' if self.arch_specific else ''}"


def _compat_attrs(blob: bytes) -> dict:
    attrs, i = {}, 0
    while i + 2 <= len(blob):
        fmt, attr = blob[i], blob[i + 1]
        if fmt == 2:
            attrs[attr], i = blob[i + 2], i + 4
        elif fmt == 3:
            attrs[attr], i = struct.unpack_from("<H", blob, i + 2)[0], i + 4
        elif fmt == 4:
            n = struct.unpack_from("<H", blob, i + 2)[0]
            attrs[attr], i = blob[i + 4 : i + 4 + n], i + 4 + n
        else:
            i += 2
    return attrs


def read_cubin(data: bytes) -> CubinInfo:
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not an ELF64 file"
    machine = struct.unpack_from("<H", data, 0x12)[0]
    assert machine == EM_CUDA, f"e_machine {machine} is not EM_CUDA"
    abi = data[8]
    flags = struct.unpack_from("<I", data, 0x30)[0]
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    stroff = raw[shstrndx][4]
    sections, compat = {}, {}
    for name_off, typ, _flags, _addr, off, size in raw:
        name = data[stroff + name_off : data.index(b"\0", stroff + name_off)].decode()
        body = data[off : off + size] if typ != 8 else b""  # SHT_NOBITS has no bytes
        sections[name] = body
        if typ == SHT_NV_COMPAT:
            compat = _compat_attrs(body)
    if abi >= 8:  # ABI V2 (every SM since CUDA 13)
        sm, a = (flags >> 8) & 0xFF, bool(flags & 0x8)
    else:
        sm, a = flags & 0xFF, bool(flags & 0x800) and (flags & 0xFF) >= 90
    return CubinInfo(sm, a or compat.get(0x09) == 1, abi, sections)
