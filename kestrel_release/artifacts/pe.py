"""Minimal PE/COFF reader: the section table of a Windows DLL/EXE, zero-copy.

Only what the CUDA checks need: where each section's raw bytes lie. nvcc on
Windows puts fat binaries in a section named `.nv_fatb` (section names are cut
to 8 bytes in images); longer names ('/123') are looked up in the COFF string table.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kestrel_release.artifacts.binformat import PE_MACHINES, ByteData, pe_header_offset
from kestrel_release.artifacts.errors import CudaFormatError

_COFF = struct.Struct("<HHIIIHH")
_SECTION = struct.Struct("<8sIIIIIIHHI")
_SYMBOL_SIZE = 18
MAX_SECTIONS = 96  # the PE format's own limit on images


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int


@dataclass
class Pe:
    machine: str
    sections: list[Section]
    data: memoryview

    def content(self, section: Section) -> memoryview:
        return self.data[section.offset : section.offset + section.size]


def parse(data: ByteData, what: str) -> Pe:
    """Parse the headers and section table; CudaFormatError names `what` on any inconsistency."""
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    offset = pe_header_offset(view)
    if offset is None:
        raise CudaFormatError(f"{what}: not a PE file (no PE signature)")
    machine, count, _time, symtab, nsyms, opt_size, _chars = _COFF.unpack_from(view, offset + 4)
    if count > MAX_SECTIONS:
        raise CudaFormatError(f"{what}: implausible PE section count {count}")
    table = offset + 4 + _COFF.size + opt_size
    if table + count * _SECTION.size > len(view):
        raise CudaFormatError(f"{what}: truncated (PE section table past the end)")
    strings = _string_table(view, symtab, nsyms)
    sections = []
    for i in range(count):
        raw_name, vsize, _vaddr, raw_size, raw_ptr, *_rest = _SECTION.unpack_from(view, table + i * _SECTION.size)
        # In images VirtualSize is the real length and SizeOfRawData is padded to the file
        # alignment; objects leave VirtualSize 0.
        size = min(vsize, raw_size) if vsize else raw_size
        if raw_ptr == 0 or size == 0:
            continue  # uninitialised data (.bss): nothing in the file
        if raw_ptr + size > len(view):
            raise CudaFormatError(f"{what}: truncated (a PE section ends past the end of the file)")
        sections.append(Section(_name(raw_name, strings), raw_ptr, size))
    return Pe(PE_MACHINES.get(machine, hex(machine)), sections, view)


def _string_table(view: memoryview, symtab: int, nsyms: int) -> bytes:
    start = symtab + nsyms * _SYMBOL_SIZE
    if symtab == 0 or start + 4 > len(view):
        return b""
    (size,) = struct.unpack_from("<I", view, start)
    return bytes(view[start : start + min(size, len(view) - start)])


def _name(raw: bytes, strings: bytes) -> str:
    name = raw.split(b"\0", 1)[0]
    if name.startswith(b"/") and name[1:].isdigit() and int(name[1:]) < len(strings):
        end = strings.find(b"\0", int(name[1:]))
        name = strings[int(name[1:]) : end if end >= 0 else len(strings)]
    return name.decode("latin-1")
