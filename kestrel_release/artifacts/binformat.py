"""Which kind of binary a file is (ELF, PE/COFF, Mach-O, cubin, fat binary) and for which
machine, from its header alone; and which kind a wheel's platform tag calls for.

Why: a wheel whose `.so` was built for another machine, or whose DLL landed in a Linux
wheel, installs cleanly and fails at import. Both halves are here so the verify rule
is a comparison. Never raises on any input: an unknown header is simply not a binary.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import TypeAlias

from kestrel_release.platforms import arches

__all__ = ["BinaryKind", "Expected", "expected_binary", "identify", "loaded_on_the_platform", "matches"]

# Header numbers -> machine names: the one CPU table (platforms/arches.py), plus the GPU's ELF.
ELF_MACHINES = {**arches.binary_machines("elf"), 190: "cuda"}
PE_MACHINES = arches.binary_machines("pe")
MACHO_CPUS = arches.binary_machines("macho")
MACHO_THIN = {b"\xfe\xed\xfa\xce": ">", b"\xfe\xed\xfa\xcf": ">", b"\xce\xfa\xed\xfe": "<", b"\xcf\xfa\xed\xfe": "<"}
MACHO_FAT = (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf")  # fat headers are big-endian on disk
MAX_FAT_ARCHES = 20  # 0xCAFEBABE is also a Java class file, whose "count" is its version (>= 45)
FATBIN_MAGIC = b"\x50\xed\x55\xba"


@dataclass(frozen=True)
class BinaryKind:
    format: str  # "elf", "pe", "macho", "cubin", "fatbin"
    machines: tuple[str, ...]  # one, except a universal (fat) Mach-O

    @property
    def machine(self) -> str:
        return "+".join(self.machines)


@dataclass(frozen=True)
class Expected:
    format: str
    machines: tuple[str, ...]  # every one must be present (a universal2 wheel needs both slices)

    def describe(self) -> str:
        return f"{_FORMAT_NAMES[self.format]} for {'+'.join(self.machines)}"


_FORMAT_NAMES = {"elf": "ELF", "pe": "a PE/COFF DLL", "macho": "Mach-O", "cubin": "a cubin", "fatbin": "a fat binary"}


def describe(kind: BinaryKind) -> str:
    return f"{_FORMAT_NAMES[kind.format]} for {kind.machine}"


def expected_binary(platform: str) -> Expected | None:
    """The binary a wheel platform tag calls for ('manylinux_2_34_aarch64' -> ELF aarch64), or
    None where no single answer exists ('any', and tags no platform module knows)."""
    from kestrel_release import platforms

    p = platforms.parse(platform)
    fmt = platforms.for_system(p.system).binary_format if p is not None else ""
    machines = tuple(arches.machine(a) for a in p.arches) if p is not None else ()
    if not fmt or not machines or None in machines:
        return None
    return Expected(fmt, machines)  # type: ignore[arg-type]


def loaded_on_the_platform(member: str) -> bool:
    """Shared libraries, extension modules, objects and suffix-less executables: what runs on the
    wheel's own platform. Other suffixes are payloads for another machine on purpose (the Windows
    `.exe` launchers some tools vendor in every wheel, firmware `.bin`), so they are not judged."""
    base = member.rsplit("/", 1)[-1]
    return base.endswith((".so", ".pyd", ".dll", ".dylib", ".o")) or ".so." in base or "." not in base


# What the readers take: a whole file's bytes, a view into a member, or the mmap of an open file.
ByteData: TypeAlias = "bytes | bytearray | memoryview | mmap.mmap"


def matches(kind: BinaryKind, expected: Expected) -> bool:
    return kind.format == expected.format and set(expected.machines) <= set(kind.machines)


def identify(data: ByteData) -> BinaryKind | None:
    """The kind of binary `data` starts with, or None if it is not one."""
    head = bytes(data[:8])
    try:
        if head[:4] == b"\x7fELF":
            return _elf(data)
        if head[:4] == FATBIN_MAGIC:
            return BinaryKind("fatbin", ("cuda",))
        if head[:2] == b"MZ":
            return _pe(data)
        if head[:4] in MACHO_THIN:
            (cpu,) = struct.unpack_from(MACHO_THIN[head[:4]] + "I", data, 4)
            return BinaryKind("macho", (MACHO_CPUS.get(cpu, hex(cpu)),))
        if head[:4] in MACHO_FAT:
            return _fat_macho(data, head[:4] == MACHO_FAT[1])
    except struct.error:
        return None
    return None


def _elf(data: ByteData) -> BinaryKind | None:
    if len(data) < 20 or data[5] not in (1, 2):
        return None
    (machine,) = struct.unpack_from("<H" if data[5] == 1 else ">H", data, 18)
    if machine == 0:
        return None  # EM_NONE: a damaged header, which the CUDA reader reports on its own
    name = ELF_MACHINES.get(machine, f"em_{machine}")
    if name == "cuda":
        return BinaryKind("cubin", ("cuda",))
    if data[5] == 1:  # little-endian class
        name = arches.LITTLE_ENDIAN.get(name, name)
    return BinaryKind("elf", (name,))


def pe_header_offset(data: ByteData) -> int | None:
    """Offset of the 'PE\\0\\0' signature named by the DOS header, or None."""
    if len(data) < 0x40:
        return None
    (offset,) = struct.unpack_from("<I", data, 0x3C)
    if offset + 24 > len(data) or bytes(data[offset : offset + 4]) != b"PE\0\0":
        return None
    return offset


def _pe(data: ByteData) -> BinaryKind | None:
    offset = pe_header_offset(data)
    if offset is None:
        return None  # a file that happens to start with "MZ"
    (machine,) = struct.unpack_from("<H", data, offset + 4)
    return BinaryKind("pe", (PE_MACHINES.get(machine, hex(machine)),))


def _fat_macho(data: ByteData, fat64: bool) -> BinaryKind | None:
    (count,) = struct.unpack_from(">I", data, 4)
    if not 0 < count <= MAX_FAT_ARCHES:
        return None
    size = 32 if fat64 else 20
    cpus = [struct.unpack_from(">I", data, 8 + i * size)[0] for i in range(count)]
    return BinaryKind("macho", tuple(sorted({MACHO_CPUS.get(c, hex(c)) for c in cpus})))
