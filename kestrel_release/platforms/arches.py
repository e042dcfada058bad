"""The one table of CPU architectures: each CPU's name, the other words that name it, and the
numbers binary headers give it.

Why one table: wheel tags, `platform.machine()`, Windows and macOS all spell the same CPU
differently (x86_64, AMD64, x64; aarch64, arm64), and a binary names it by a number (ELF
e_machine, PE Machine, Mach-O cputype). Every reader translates through here, so a new CPU is
one row. Which OS builds for which CPU is each platform module's own list (linux.py, ...).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    name: str  # as Linux wheel tags, adapters.host.Host.arch and inspect.binformat spell it
    spellings: tuple[str, ...] = ()  # other words for the same CPU (platform.machine(), Windows, macOS)
    binary: str = ""  # the machine a binary header reports, where it is coarser ("arm": any 32-bit ARM)
    elf: int | None = None  # ELF e_machine
    pe: int | None = None  # PE/COFF Machine
    macho: int | None = None  # Mach-O cputype

    @property
    def machine(self) -> str:
        return self.binary or self.name


ARCHES: tuple[Arch, ...] = (
    Arch("x86_64", ("amd64", "x64"), elf=62, pe=0x8664, macho=0x01000007),
    Arch("aarch64", ("arm64",), elf=183, pe=0xAA64, macho=0x0100000C),
    Arch("i686", ("i386", "x86"), elf=3, pe=0x14C, macho=7),
    Arch("armv7l", binary="arm", elf=40, pe=0x1C4, macho=12),
    Arch("armv6l", binary="arm"),
    Arch("ppc64le"),  # ELF says ppc64; the little-endian class makes it ppc64le (LITTLE_ENDIAN)
    Arch("ppc64", elf=21, macho=0x01000012),
    Arch("s390x", elf=22),
    Arch("riscv64", elf=243),
    Arch("ppc", macho=18),  # old Mac binaries only
    Arch("arm64_32", macho=0x0200000C),  # watchOS binaries only
)
# An ELF machine whose little-endian flavour is another CPU name.
LITTLE_ENDIAN = {"ppc64": "ppc64le"}
X86_64, AARCH64 = "x86_64", "aarch64"  # for code that compares with them (the default CPU, Windows/macOS arm64)

_BY_WORD = {word: a.name for a in ARCHES for word in (a.name, *a.spellings)}


def canonical(word: str) -> str | None:
    """The CPU a word names ('AMD64'.lower() -> 'x86_64', 'arm64' -> 'aarch64'); None if none does."""
    return _BY_WORD.get(word)


def binary_machines(field: str) -> dict[int, str]:
    """{header number: machine name} for one header field ('elf', 'pe', 'macho')."""
    return {getattr(a, field): a.machine for a in ARCHES if getattr(a, field) is not None}


def machine(name: str) -> str | None:
    """The machine a binary for CPU `name` reports ('armv7l' -> 'arm'); None for an unknown CPU."""
    return next((a.machine for a in ARCHES if a.name == name), None)
