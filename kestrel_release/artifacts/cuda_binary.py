"""What CUDA code a binary carries, read in pure Python (no cuobjdump, nothing executed).

Handles standalone cubins (ABI V1 and V2, `.nv.compat`), standalone fat binaries,
host objects (`.so`, `.o`, x86_64 or aarch64 ELF) with `.nv_fatbin` / `__nv_relfatbin`
sections, Windows DLLs with a `.nv_fatb` PE section, and fatbins/cubins embedded as
byte arrays elsewhere (a bounded magic scan). Mach-O files are recognised as CUDA-free.
Layouts: docs/cuda-binaries.md.

Entry point: `inspect_bytes(data, name, budget) -> CudaInfo`; it raises only CudaFormatError.
Decompression draws on a per-binary budget and on the caller's (one per wheel: `wheel_budget()`).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from kestrel_release.artifacts import binformat, elf, fatbin, pe
from kestrel_release.artifacts.errors import CudaFormatError

__all__ = ["CudaFormatError", "CudaInfo", "inspect_bytes", "is_cuda_candidate", "wheel_budget"]

CUDA_SUFFIXES = (".cubin", ".fatbin", ".so", ".o", ".dll", ".pyd", ".dylib")
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
# PE section names are cut to 8 bytes: nvcc's Windows output names its section `.nv_fatb`.
PE_FATBIN_PREFIXES = (".nv_fatb", "__nv_rel")
SHT_NV_COMPAT = 0x70000086
SHT_CUDA_SHARED = 0x7000000A  # `.nv_debug.shared`: a shared-memory placeholder, not debug info
MAX_SCAN_HITS = 4096  # magic-scan candidates examined per section: bounds work on hostile input
COMPAT_ARCH_SPECIFIC = 0x09
# Sections that carry source paths or source text in a cubin.
PATH_SECTIONS = (
    ".debug_line",
    ".debug_line_str",
    ".debug_str",
    ".nv.global.init",
    ".nv_debug_ptx_txt",
    ".nv_debug_line_sass",
)
# A path starts at a '/' not preceded by a path character. The pattern starts with its literal (the
# look-behind comes after it) so `re` jumps from '/' to '/': ~40x faster than a leading look-behind,
# which made the engine try every byte of a decompressed image (86 s per GiB of zeros).
_PATH_RE = re.compile(rb"/(?<![\w.+@~-]/)[\w.+@~-]+(?:/[\w.+@~-]+)+")
_PATH_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.+@~-/")
MAX_PATH_MATCHES = 100_000  # matches looked at per binary: bounds a scan of text made of slashes
_OVERLAP = 4096  # a path cut by a chunk boundary is completed from this much of the previous chunk
_CUBIN_MAGIC = b"\x7fELF\x02\x01\x01"
MAX_PATHS = 50  # enough to act on; keeps reports small on a hostile binary
# What nvcc compiles (an entry's identifier names it): CUDA/C/C++ sources, PTX, preprocessed and object files.
_SOURCE_SUFFIX = re.compile(
    r"\.(?:cu|cuh|cup|c|cc|cpp|cxx|c\+\+|h|hh|hpp|hxx|inl|ptx|i|ii|gpu|o|obj|cubin|fatbin|ltoir|bc)$", re.I
)


@dataclass
class CudaInfo:
    """The CUDA content of one binary. Lists are sorted and de-duplicated."""

    member: str
    format: str = ""  # binformat's name: elf, pe, macho, cubin, fatbin
    machine: str = ""  # x86_64, aarch64, ... ("cuda" for cubins and fat binaries)
    sass: list[str] = field(default_factory=list)
    ptx: list[str] = field(default_factory=list)
    lto_ir: list[str] = field(default_factory=list)
    debug: bool = False
    debug_ptx_text: bool = False  # -lineinfo: the full PTX text hides in .nv_debug_ptx_txt
    source_paths: list[str] = field(default_factory=list)
    # One row per code image: {kind: sass|ptx|lto, arch: sm_90a / compute_90, bytes: stored size in the
    # binary, compressed, cuda: the toolkit that wrote it ("12.8", "13.0", "12" when only the major is
    # known, "" unknown)}; what size forecasts and `explain` read.
    entries: list[dict] = field(default_factory=list)

    @property
    def has_cuda(self) -> bool:
        return bool(self.sass or self.ptx or self.lto_ir)

    def to_json(self) -> dict:
        return {
            "member": self.member,
            "format": self.format,
            "machine": self.machine,
            "sass": self.sass,
            "ptx": self.ptx,
            "lto_ir": self.lto_ir,
            "debug": self.debug,
            "source_paths": self.source_paths,
            "entries": self.entries,
        }


class _Collector:
    def __init__(self, name: str, budget: fatbin.Budget | None = None, toolkits: bool = False) -> None:
        self.name = name
        self.toolkits = toolkits  # decompress cubins to read their toolkit note (explain), not only stored ones
        self.entries: list[dict] = []
        self.budget = fatbin.Budget(fatbin.MAX_PER_BINARY, "one binary", budget)
        self.kind = binformat.BinaryKind("", ())
        self.sass: set[str] = set()
        self.ptx: set[str] = set()
        self.lto: set[str] = set()
        self.debug = False
        self.debug_ptx = False
        self.paths: dict[str, None] = {}
        self.matches = 0

    def add_paths(self, blob: binformat.ByteData, end: int | None = None) -> None:
        """Absolute paths in `blob[:end]` (bytes-like: a decompressed image is not copied again)."""
        for match in _PATH_RE.finditer(blob, 0, len(blob) if end is None else end):
            self.matches += 1
            if len(self.paths) >= MAX_PATHS or self.matches > MAX_PATH_MATCHES:
                return
            self.paths.setdefault(match.group().decode("utf-8", "replace"), None)

    def add_paths_from(self, chunks: Iterable[bytes | memoryview]) -> None:
        """add_paths over an image that arrives in chunks, never held whole (a PTX text)."""
        tail = b""
        for chunk in chunks:
            blob = tail + bytes(chunk)
            # Scan up to the last non-path byte: what follows may continue in the next chunk.
            cut = next(
                (i for i in range(len(blob) - 1, max(-1, len(blob) - _OVERLAP - 1), -1) if blob[i] not in _PATH_CHARS),
                max(0, len(blob) - _OVERLAP),
            )
            self.add_paths(blob, cut)
            tail = blob[cut:]
        self.add_paths(tail)

    def result(self) -> CudaInfo:
        return CudaInfo(
            self.name,
            self.kind.format,
            self.kind.machine,
            sorted(self.sass, key=_arch_key),
            sorted(self.ptx, key=_arch_key),
            sorted(self.lto, key=_arch_key),
            self.debug,
            self.debug_ptx,
            list(self.paths),
            self.entries,
        )


def _arch_key(arch: str) -> tuple[int, str]:
    digits = re.search(r"\d+", arch)
    return (int(digits.group()) if digits else 0, arch)


def is_cuda_candidate(name: str) -> bool:
    """Members whose bytes may hold CUDA code: cubins, fatbins, shared objects, objects."""
    base = name.rsplit("/", 1)[-1]
    return base.endswith(CUDA_SUFFIXES) or ".so." in base


def wheel_budget() -> fatbin.Budget:
    """The decompression budget every binary of one wheel shares (pass it to inspect_bytes)."""
    return fatbin.Budget(fatbin.MAX_PER_WHEEL, "one wheel")


def inspect_bytes(
    data: bytes | memoryview, name: str, budget: fatbin.Budget | None = None, *, toolkits: bool = False
) -> CudaInfo:
    """Report SASS, PTX, LTO-IR, debug info and source paths of one binary.

    Raises CudaFormatError (and nothing else) on malformed or truncated input, and on fat-binary
    headers whose declared sizes are implausible or exceed this binary's or `budget`'s allowance.
    """
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise CudaFormatError(f"{name}: not a byte buffer") from None
    out = _Collector(name, budget, toolkits)
    kind = binformat.identify(view)
    if kind is None and elf.is_elf(view):
        kind = binformat.BinaryKind("elf", ("unknown",))  # e_machine 0 or cut short: elf.parse says what
    if kind is None:
        raise CudaFormatError(f"{name}: not an ELF, PE or Mach-O file or a fat binary")
    out.kind = kind
    try:
        if kind.format == "fatbin":
            _entries(fatbin.parse_containers(view, name), out)
        elif kind.format in ("elf", "cubin") and view[4] == 2 and view[5] == 1:
            _elf(elf.parse(view, name), out)
        elif kind.format == "pe":
            _pe(pe.parse(view, name), out)
        # Mach-O (macOS has no CUDA) and 32-bit or big-endian ELF (no CUDA since 12.0): CUDA-free.
    except (ValueError, IndexError, OverflowError, MemoryError, struct.error) as exc:
        raise CudaFormatError(f"{name}: malformed binary ({type(exc).__name__})") from None
    return out.result()


def _elf(image: elf.Elf, out: _Collector) -> None:
    if image.machine == elf.EM_CUDA:
        _cubin(image, out)
    else:
        _host(image, out)


def _cubin(image: elf.Elf, out: _Collector, family: str = "") -> None:
    v2 = image.osabi == 0x41 or image.abiversion >= 8
    sm = (image.flags >> 8) & 0xFF if v2 else image.flags & 0xFF
    arch_specific = (v2 and image.flags & 0x8) or (not v2 and image.flags & 0x800 and sm >= 90)
    if not arch_specific:
        arch_specific = _compat(image).get(COMPAT_ARCH_SPECIFIC) == 1
    out.sass.add(f"sm_{sm}{'a' if arch_specific else family}")
    if not family:  # a standalone cubin (a fat binary's entries are counted by _entries)
        arch = f"sm_{sm}{'a' if arch_specific else ''}"
        # an embedded cubin's view runs to its section's end: count up to its last section
        end = max((sec.offset + sec.size for sec in image.sections if sec.type != elf.SHT_NOBITS), default=0)
        size = len(image.data) if image.data[:4] and end >= len(image.data) * 0.9 else max(end, 1)
        out.entries.append(_row("sass", arch, min(size, len(image.data)), False, cubin_toolkit(image)))
    _cubin_leaks(image, out)


def _row(kind: str, arch: str, size: int, compressed: bool, cuda: str) -> dict:
    return {"kind": kind, "arch": arch, "bytes": size, "compressed": compressed, "cuda": cuda}


def cubin_toolkit(image: elf.Elf) -> str:
    """The toolkit that wrote a cubin: ABI V1's e_version (x10), V2's `.note.nv.cuinfo` (13.x), else the
    release in `.note.nv.tkinfo` (a 12.9 V2 cubin: "12.9"); a V2 cubin with only the older
    `.note.nv.cuver` is CUDA 12.8/12.9 ("12"); "" when nothing says."""
    if not (image.osabi == 0x41 or image.abiversion >= 8):
        return f"{image.version // 10}.{image.version % 10}" if image.version >= 100 else ""
    note = image.section(".note.nv.cuinfo")
    if note is not None:
        body = bytes(image.content(note))
        if len(body) >= 12:
            namesz, descsz = struct.unpack_from("<II", body)
            off = 12 + ((namesz + 3) & ~3)
            if descsz >= 6 and off + 6 <= len(body):
                version = struct.unpack_from("<H", body, off + 4)[0]
                return f"{version // 10}.{version % 10}"
    # `.note.nv.tkinfo` (12.8+) holds ptxas' version line: "Cuda compilation tools, release 12.9, V12.9.86".
    info = image.section(".note.nv.tkinfo")
    if info is not None:
        found = _TOOLKIT_LINE.search(bytes(image.content(info)[:4096]))
        if found:
            return found.group(1).decode()
    return "12" if image.section(".note.nv.cuver") is not None else ""


_TOOLKIT_LINE = re.compile(rb"release (\d+\.\d+)")


# PTX ISA version -> the toolkit that introduced it (PTX ISA release notes): JIT needs that driver.
_PTX_ISA_TOOLKIT = {(7, 8): "11.8", (8, 0): "12.0", (8, 1): "12.1", (8, 2): "12.2", (8, 3): "12.3",
                    (8, 4): "12.4", (8, 5): "12.5", (8, 6): "12.7", (8, 7): "12.8", (8, 8): "12.9",
                    (9, 0): "13.0", (9, 1): "13.1"}  # fmt: skip


def ptx_toolkit(isa: tuple[int, int]) -> str:
    if isa in _PTX_ISA_TOOLKIT:
        return _PTX_ISA_TOOLKIT[isa]
    if isa[0] >= 9:
        return f"{isa[0] + 4}"  # a newer CUDA 13+ ISA: at least that major
    return "12" if isa[0] == 8 else ("11" if isa[0] == 7 else "")


def _cubin_leaks(image: elf.Elf, out: _Collector) -> None:
    # Debug info is what cuobjdump shows: DWARF, line and PTX-text sections with content. No e_flags bit
    # says it in either ABI: a V2 cubin's top byte is the index of its toolkit note (6 in a release
    # build, 9-16 behind -lineinfo/-G sections, 15 in flashinfer's release fmha cubins).
    for section in image.sections:
        name = section.name
        if name.startswith((".debug_", ".nv_debug_")) and _is_debug_section(section):  # the cheap test first
            out.debug = True
        if name == ".nv_debug_ptx_txt":
            out.debug_ptx = True
        if name in PATH_SECTIONS:
            out.add_paths(image.content(section))


def _is_debug_section(section: elf.Section) -> bool:
    """DWARF, line tables and the PTX text that -G/-lineinfo add, with content.

    .debug_frame is in every cubin (unwind tables); `.nv_debug.shared` (SHT_CUDA_SHARED,
    no file content) is the global shared-memory placeholder of relocatable release builds.
    """
    if section.type in (elf.SHT_NOBITS, SHT_CUDA_SHARED) or section.size == 0:
        return False
    name = section.name
    return (name.startswith(".debug_") and name != ".debug_frame") or name.startswith(".nv_debug_")


def _compat(image: elf.Elf) -> dict[int, int]:
    """`.nv.compat` records {attribute: value} (fmt 2: u8, fmt 3: u16, fmt 4: bytes)."""
    section = next((s for s in image.sections if s.type == SHT_NV_COMPAT or s.name == ".nv.compat"), None)
    if section is None:
        return {}
    blob, pos, attrs = bytes(image.content(section)), 0, {}
    while pos + 2 <= len(blob):
        fmt, attr = blob[pos], blob[pos + 1]
        if fmt == 2 and pos + 3 <= len(blob):
            attrs[attr], pos = blob[pos + 2], pos + 4
        elif fmt == 3 and pos + 4 <= len(blob):
            attrs[attr], pos = int.from_bytes(blob[pos + 2 : pos + 4], "little"), pos + 4
        elif fmt == 4 and pos + 4 <= len(blob):
            pos += 4 + int.from_bytes(blob[pos + 2 : pos + 4], "little")
        else:
            break
    return attrs


def _host(image: elf.Elf, out: _Collector) -> None:
    for section in image.sections:
        if section.type == elf.SHT_NOBITS or section.size == 0:
            continue
        content = image.content(section)
        if section.name in FATBIN_SECTIONS:
            _entries(fatbin.parse_containers(content, f"{out.name}:{section.name}"), out)
        elif not section.name.startswith((".debug_", ".symtab", ".strtab", ".dynsym", ".dynstr")):
            _scan(content, out)


def _pe(image: pe.Pe, out: _Collector) -> None:
    for section in image.sections:
        content = image.content(section)
        if section.name.startswith(PE_FATBIN_PREFIXES):
            _entries(fatbin.parse_containers(content, f"{out.name}:{section.name}"), out)
        elif not section.name.startswith((".debug", "/")):
            _scan(content, out)  # the fallback: a fat binary in .rdata or a renamed section


def _scan(content: memoryview, out: _Collector) -> None:
    """Find fatbins and cubins embedded as plain byte arrays (e.g. in .rodata)."""
    raw = content.obj if isinstance(content.obj, bytes) and len(content) == len(content.obj) else None
    blob = raw if raw is not None else bytes(content)
    pos, hits = blob.find(fatbin.MAGIC_BYTES), 0
    while pos >= 0 and hits < MAX_SCAN_HITS:
        hits += 1
        found = fatbin.container_at(content, pos, out.name)
        if found:
            _entries(found[0], out)
        pos = blob.find(fatbin.MAGIC_BYTES, found[1] if found else pos + 4)
    pos = blob.find(_CUBIN_MAGIC)
    while pos >= 0 and hits < 2 * MAX_SCAN_HITS:
        hits += 1
        if int.from_bytes(blob[pos + 18 : pos + 20], "little") == elf.EM_CUDA:
            try:
                _cubin(elf.parse(content[pos:], out.name), out)
            except CudaFormatError:
                pass  # a magic by coincidence, not an image
        pos = blob.find(_CUBIN_MAGIC, pos + 4)


def source_identifier(identifier: str) -> str | None:
    """An entry's identifier when it is the source file nvcc compiled ("/src/attn.cu", "kernel.cu"), None
    when it is a label a tool wrote there ("lto" in CUDA 13's libcurand): only a path is a source path."""
    ident = identifier.strip()
    return ident if ident and ("/" in ident or "\\" in ident or _SOURCE_SUFFIX.search(ident)) else None


def _entries(entries: list[fatbin.Entry], out: _Collector) -> None:
    for entry in entries:
        if entry.flags & fatbin.FLAG_DEBUG:
            out.debug = True
        source = source_identifier(entry.identifier)
        if source:
            out.paths.setdefault(source, None)
        size = len(entry.payload)
        if entry.kind == fatbin.KIND_ELF:
            out.sass.add(entry.arch)
            # Only the major is in the entry header: V2 below sm_100 is CUDA 13 (12.8 used V2 from sm_100).
            cuda = "13" if entry.version[0] >= 8 and entry.sm < 100 else ""
            # Stored cubins are free to look into; compressed ones only when the
            # header says there is something to see (debug build or a source identifier) or asked to.
            if not entry.compressed or source or entry.flags & fatbin.FLAG_DEBUG or out.toolkits:
                image = elf.parse(entry.data(out.name, out.budget), out.name)
                cuda = cubin_toolkit(image) or cuda
                _cubin_leaks(image, out)
            out.entries.append(_row("sass", entry.arch, size, entry.compressed, cuda))
        elif entry.kind == fatbin.KIND_PTX:
            out.ptx.add(entry.arch)
            out.entries.append(_row("ptx", entry.arch, size, entry.compressed, ptx_toolkit(entry.version)))
            if source or entry.flags & fatbin.FLAG_DEBUG:
                out.add_paths_from(entry.chunks(out.name, out.budget))
        elif entry.kind == fatbin.KIND_LTO:
            out.lto.add(entry.arch)
            out.entries.append(_row("lto", entry.arch, size, entry.compressed, ""))
