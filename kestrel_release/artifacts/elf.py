"""Minimal ELF64 little-endian reader: header fields and section table, zero-copy.

Only what the CUDA checks need (cubins and x86-64 host objects). Section data
are memoryview slices of the caller's buffer, so nothing is copied until a
caller decides to look inside.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from kestrel_release.artifacts.binformat import ByteData
from kestrel_release.artifacts.errors import CudaFormatError

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
SHT_NOBITS = 8
SHF_EXECINSTR = 0x4
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
SHN_XINDEX = 0xFFFF
MAX_SECTIONS = 1 << 20  # more than any real object; bounds work on hostile input


class Section(NamedTuple):  # a tuple, not a dataclass: a wheel of 16,000 cubins builds 600,000 of them
    name: str
    type: int
    offset: int
    size: int
    link: int = 0  # sh_link: for .dynamic, the index of its string table
    flags: int = 0  # sh_flags (SHF_EXECINSTR: machine instructions)


@dataclass
class Elf:
    osabi: int
    abiversion: int
    machine: int
    version: int
    flags: int
    sections: list[Section]
    data: memoryview

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def content(self, section: Section) -> memoryview:
        """The section's bytes (empty for NOBITS sections like .bss)."""
        if section.type == SHT_NOBITS:
            return self.data[0:0]
        return self.data[section.offset : section.offset + section.size]


def is_elf(data: ByteData) -> bool:
    return bytes(data[:4]) == ELF_MAGIC


def parse(data: ByteData, what: str) -> Elf:
    """Parse an ELF64 LE image; CudaFormatError names `what` on any inconsistency."""
    view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
    if len(view) < _EHDR.size or bytes(view[:4]) != ELF_MAGIC:
        raise CudaFormatError(f"{what}: not an ELF file")
    if view[4] != 2 or view[5] != 1:
        raise CudaFormatError(f"{what}: only 64-bit little-endian ELF is supported")
    (
        ident,
        _type,
        machine,
        version,
        _entry,
        _phoff,
        shoff,
        flags,
        _ehsize,
        _phentsize,
        _phnum,
        shentsize,
        shnum,
        shstrndx,
    ) = _EHDR.unpack_from(view, 0)
    raw = _section_headers(view, shoff, shentsize, shnum, shstrndx, what)
    return Elf(ident[7], ident[8], machine, version, flags, raw, view)


def _section_headers(
    view: memoryview, shoff: int, shentsize: int, shnum: int, shstrndx: int, what: str
) -> list[Section]:
    if shoff == 0:
        return []
    if shentsize != _SHDR.size:
        raise CudaFormatError(f"{what}: bad section header size {shentsize}")
    if shoff + _SHDR.size > len(view):
        raise CudaFormatError(f"{what}: truncated (section table past the end)")
    first = _SHDR.unpack_from(view, shoff)
    if shnum == 0:  # extended numbering: the real count sits in section 0
        shnum = first[5]
    if shstrndx == SHN_XINDEX:
        shstrndx = first[6]
    if shnum > MAX_SECTIONS or shoff + shnum * _SHDR.size > len(view):
        raise CudaFormatError(f"{what}: truncated (section table past the end)")
    headers = list(_SHDR.iter_unpack(view[shoff : shoff + shnum * _SHDR.size]))
    end = len(view)
    if any(h[1] != SHT_NOBITS and h[4] + h[5] > end for h in headers):
        raise CudaFormatError(f"{what}: truncated (a section ends past the end of the file)")
    names = b""
    if 0 < shstrndx < shnum:
        h = headers[shstrndx]
        names = bytes(view[h[4] : h[4] + h[5]])
    # Every name that starts a string of the table, found in one split; a name that is the tail of another
    # (".text.k" inside ".rela.text.k") is looked up on its own.
    parts = names.decode("latin-1").split("\0")
    starts = dict(zip(accumulate((len(p) + 1 for p in parts), initial=0), parts, strict=False))  # one start more
    return [
        Section(n if (n := starts.get(h[0])) is not None else _name(names, h[0]), h[1], h[4], h[5], h[6], h[2])
        for h in headers
    ]


def data_spans(data: ByteData, min_gap: int = 4096) -> list[tuple[int, int]] | None:
    """File ranges [start, end) of an ELF64 LE image outside its executable sections (SHF_EXECINSTR), or
    None when `data` is not one that parses. Why: a secret compiled into a binary sits in its data
    (.rodata, a cubin's .nv.constant), never as contiguous bytes of machine code, and code is most of a
    kernel binary's bytes. Code sections under `min_gap` bytes are not cut out (a few ranges, not hundreds)."""
    size = len(data)
    if size < _EHDR.size or bytes(data[:4]) != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return None
    fields = _EHDR.unpack_from(data, 0)
    shoff, shentsize, shnum = fields[6], fields[11], fields[12]
    if shoff == 0 or shentsize != _SHDR.size or shnum == 0 or shoff + shnum * _SHDR.size > size:
        return None  # no table, or extended numbering (parse() reads those): scan everything
    code = sorted(
        (h[4], h[4] + h[5])
        for h in _SHDR.iter_unpack(memoryview(data)[shoff : shoff + shnum * _SHDR.size])
        if h[2] & SHF_EXECINSTR and h[1] != SHT_NOBITS and h[5] >= min_gap and h[4] + h[5] <= size
    )
    spans, pos = [], 0
    for start, stop in code:
        if start > pos:
            spans.append((pos, start))
        pos = max(pos, stop)
    if pos < size:
        spans.append((pos, size))
    return spans


def _name(table: bytes, offset: int) -> str:
    if offset >= len(table):
        return ""
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("latin-1")


SHT_DYNAMIC = 6
DT_NEEDED = 1
_DYN = struct.Struct("<qQ")


def needed(elf: Elf) -> list[str]:
    """The DT_NEEDED sonames of a shared object or executable, in link order ([] if static)."""
    dynamic = next((s for s in elf.sections if s.type == SHT_DYNAMIC), None)
    if dynamic is None or not 0 < dynamic.link < len(elf.sections):
        return []
    strtab = bytes(elf.content(elf.sections[dynamic.link]))
    data = elf.content(dynamic)
    out = []
    for offset in range(0, len(data) - _DYN.size + 1, _DYN.size):
        tag, value = _DYN.unpack_from(data, offset)
        if tag == 0:  # DT_NULL ends the table
            break
        if tag == DT_NEEDED:
            out.append(_name(strtab, value))
    return out


SHT_DYNSYM = 11
SHN_UNDEF = 0
_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, shndx, value, size


def defined_dynamic_symbols(elf: Elf, wanted: frozenset[str] | None = None) -> set[str]:
    """Names the object defines (not merely references) in .dynsym; only those in `wanted` when given."""
    dynsym = next((s for s in elf.sections if s.type == SHT_DYNSYM), None)
    if dynsym is None or not 0 < dynsym.link < len(elf.sections):
        return set()
    strtab = bytes(elf.content(elf.sections[dynsym.link]))
    data = elf.content(dynsym)
    out = set()
    for offset in range(_SYM.size, len(data) - _SYM.size + 1, _SYM.size):  # entry 0 is the null symbol
        name_off, _info, _other, shndx, _value, _size = _SYM.unpack_from(data, offset)
        if shndx == SHN_UNDEF:
            continue
        name = _name(strtab, name_off)
        if wanted is None or name in wanted:
            out.add(name)
    return out


def undefined_dynamic_symbols(elf: Elf, prefix: str = "") -> list[str]:
    """Names the object references but does not define in .dynsym (what the dynamic linker must find in
    a library it loads), in table order; only those starting with `prefix` when given."""
    dynsym = next((s for s in elf.sections if s.type == SHT_DYNSYM), None)
    if dynsym is None or not 0 < dynsym.link < len(elf.sections):
        return []
    strtab = bytes(elf.content(elf.sections[dynsym.link]))
    data = elf.content(dynsym)
    out = []
    for offset in range(_SYM.size, len(data) - _SYM.size + 1, _SYM.size):  # entry 0 is the null symbol
        name_off, _info, _other, shndx, _value, _size = _SYM.unpack_from(data, offset)
        if shndx != SHN_UNDEF:
            continue
        name = _name(strtab, name_off)
        if name and name.startswith(prefix):
            out.append(name)
    return out
