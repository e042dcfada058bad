"""The CUDA reader on committed release builds of CUDA 11.8, 12.4, 12.8 and 13.0, on a Windows DLL and
an aarch64 shared object (tests/data/cuda/release, made by make_release_builds.sh), against cuobjdump."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kestrel_release.artifacts import binformat, elf
from kestrel_release.artifacts.cuda_binary import CudaFormatError, inspect_bytes
from tests.data.cuda.release_builds import EMBEDDED, EXPECTED, RELEASE


def test_every_committed_binary_has_an_expectation():
    assert {p.name for p in RELEASE.iterdir() if p.suffix != ".md"} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reader_reports_each_release_build(name):
    data = (RELEASE / name).read_bytes()
    info = inspect_bytes(data, name)
    assert (info.format, info.machine, info.sass, info.ptx, info.debug) == EXPECTED[name]


@pytest.mark.parametrize(
    "name", ["cu118-sm90-rdc.cubin", "cu124-sm90a-rdc.cubin", "cu128-sm90a-rdc.cubin", "cu130-sm90a-rdc.cubin"]
)
def test_shared_memory_placeholder_is_not_debug_info(name):
    """Relocatable release builds carry `.nv_debug.shared` (no file content); cuobjdump sees no debug info."""
    image = elf.parse((RELEASE / name).read_bytes(), name)
    assert any(s.name == ".nv_debug.shared" for s in image.sections)
    assert not inspect_bytes((RELEASE / name).read_bytes(), name).debug


@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_dll_embeds_the_fat_binary_cuobjdump_was_compared_with(name):
    assert (RELEASE / EMBEDDED[name]).read_bytes() in (RELEASE / name).read_bytes()


def test_dll_section_is_found_by_the_section_table_and_the_fallback_by_the_scan():
    from kestrel_release.artifacts import pe

    with_section = pe.parse((RELEASE / "kernel_sm90a.dll").read_bytes(), "k.dll")
    plain = pe.parse((RELEASE / "rdata_sm90a.dll").read_bytes(), "r.dll")
    assert ".nv_fatb" in [s.name for s in with_section.sections]
    assert not any(s.name.startswith(".nv") for s in plain.sections)


def _macho_thin(cpu: int) -> bytes:
    # mach_header_64: magic, cputype, cpusubtype, filetype (MH_BUNDLE), ncmds, sizeofcmds, flags, reserved
    return struct.pack("<IIIIIIII", 0xFEEDFACF, cpu, 0, 8, 0, 0, 0, 0)


def _macho_fat(cpus: list[int]) -> bytes:
    arches = b"".join(struct.pack(">IIIII", cpu, 0, 4096 * (i + 1), 32, 12) for i, cpu in enumerate(cpus))
    return struct.pack(">II", 0xCAFEBABE, len(cpus)) + arches + bytes(64)


@pytest.mark.parametrize(
    "data, machine",
    [
        (_macho_thin(0x0100000C), "aarch64"),
        (_macho_thin(0x01000007), "x86_64"),
        (_macho_fat([0x01000007, 0x0100000C]), "aarch64+x86_64"),
        (struct.pack(">IIIIIII", 0xFEEDFACE, 7, 3, 8, 0, 0, 0), "i686"),  # 32-bit, big-endian header
    ],
)
def test_macho_is_recognised_as_cuda_free(data, machine):
    info = inspect_bytes(data, "_C.cpython-312-darwin.so")
    assert (info.format, info.machine, info.has_cuda, info.debug) == ("macho", machine, False, False)


def test_java_class_is_not_a_universal_macho():
    assert binformat.identify(b"\xca\xfe\xba\xbe\x00\x00\x00\x34" + bytes(64)) is None


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("manylinux_2_34_x86_64", ("elf", ("x86_64",))),
        ("manylinux2014_aarch64", ("elf", ("aarch64",))),
        ("musllinux_1_2_x86_64", ("elf", ("x86_64",))),
        ("linux_ppc64le", ("elf", ("ppc64le",))),
        ("win_amd64", ("pe", ("x86_64",))),
        ("win_arm64", ("pe", ("aarch64",))),
        ("win32", ("pe", ("i686",))),
        ("macosx_11_0_arm64", ("macho", ("aarch64",))),
        ("macosx_10_9_universal2", ("macho", ("x86_64", "aarch64"))),
        ("any", None),
    ],
)
def test_platform_tag_to_expected_binary(tag, expected):
    got = binformat.expected_binary(tag)
    assert (got and (got.format, got.machines)) == expected


@pytest.mark.parametrize(
    "name, tag, ok",
    [
        ("aarch64_sm90a.so", "manylinux_2_28_aarch64", True),
        ("aarch64_sm90a.so", "manylinux_2_34_x86_64", False),
        ("kernel_sm90a.dll", "win_amd64", True),
        ("kernel_sm90a.dll", "manylinux_2_34_x86_64", False),
        ("kernel_sm90a.dll", "win_arm64", False),
        ("aarch64_sm90a.so", "win_amd64", False),
    ],
)
def test_binaries_match_their_platform(name, tag, ok):
    kind = binformat.identify((RELEASE / name).read_bytes())
    assert binformat.matches(kind, binformat.expected_binary(tag)) is ok


def test_universal2_needs_both_slices():
    universal = binformat.expected_binary("macosx_10_9_universal2")
    assert binformat.matches(binformat.identify(_macho_fat([0x01000007, 0x0100000C])), universal)
    assert not binformat.matches(binformat.identify(_macho_thin(0x0100000C)), universal)
    assert binformat.matches(
        binformat.identify(_macho_fat([0x01000007, 0x0100000C])), binformat.expected_binary("macosx_11_0_arm64")
    )


@pytest.mark.parametrize("name", ["kernel_sm90a.dll", "rdata_sm90a.dll", "aarch64_sm90a.so", "cu124-sm90a-rdc.cubin"])
def test_hostile_variants_raise_only_cuda_format_error(name):
    data = (RELEASE / name).read_bytes()
    variants = [data[:n] for n in range(0, len(data), max(1, len(data) // 97))]
    variants += [
        data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :] for i in range(0, len(data), max(1, len(data) // 151))
    ]
    for variant in variants:
        try:
            inspect_bytes(variant, name)
        except CudaFormatError:
            pass


@pytest.mark.parametrize(
    "name", sorted(n for n in EXPECTED if n.endswith(".cubin") and (RELEASE / n).read_bytes()[8] == 8)
)
def test_v2_top_flags_byte_is_the_toolkit_note_index_not_debug(name):
    """ABI V2: e_flags >> 24 is the index of `.note.nv.cuver`/`.note.nv.cuinfo` (6 in a release build, 9-16 behind
    -lineinfo/-G sections, 13 in the note13 build); debug info is the sections, as cuobjdump shows it."""
    image = elf.parse((RELEASE / name).read_bytes(), name)
    notes = [i for i, s in enumerate(image.sections) if s.name.startswith(".note.nv.cu")]
    assert notes == [image.flags >> 24]
    assert inspect_bytes((RELEASE / name).read_bytes(), name).debug == EXPECTED[name][4]


@pytest.mark.parametrize(
    "identifier, reported",
    [
        (b"lto", []),  # CUDA 13 libcurand's LTO-IR entries: a label
        (b"cublasLt", []),
        (b"kernel.cu", ["kernel.cu"]),  # nvcc -G kernel.cu: the relative source
        (b"/home/alice/src/attn.cu", ["/home/alice/src/attn.cu"]),
    ],
)
def test_only_an_identifier_naming_a_source_is_a_source_path(identifier, reported):
    from tests.factories import fatbin_bytes, fatbin_entry

    lto = fatbin_entry(8, 90, b"\x00" * 64, identifier=identifier)
    ptx = fatbin_entry(1, 90, b".version 9.0\n.target sm_90\n", identifier=identifier)
    info = inspect_bytes(fatbin_bytes([lto, ptx]), "nvidia/curand/lib/libcurand.so.10.fatbin")
    assert (info.ptx, info.lto_ir, info.source_paths) == (["compute_90"], ["lto_90"], reported)


# Every committed real binary names the toolkit that wrote it (ABI V1 e_version, V2 .note.nv.tkinfo,
# PTX entries by their ISA version): verify's coverage matrix is per toolkit.
@pytest.mark.parametrize(
    ("name", "images"),
    [
        ("cu118-sm90.cubin", [("sass", "sm_90", "11.8")]),
        ("cu124-sm90a.cubin", [("sass", "sm_90a", "12.4")]),
        ("cu128-sm100a.cubin", [("sass", "sm_100a", "12.8")]),
        ("cu129-sm100a-note13.cubin", [("sass", "sm_100a", "12.9")]),
        ("cu129-sm103a.cubin", [("sass", "sm_103a", "12.9")]),
        ("cu130-sm90a.cubin", [("sass", "sm_90a", "13.0")]),
        ("cu130-sm90a-ptx.fatbin", [("ptx", "compute_90a", "13.0"), ("sass", "sm_90a", "13.0")]),
    ],
)
def test_each_image_names_its_toolkit(name, images):
    data = (Path(__file__).resolve().parents[2] / "data" / "cuda" / "release" / name).read_bytes()
    info = inspect_bytes(data, name)
    assert sorted((i["kind"], i["arch"], i["cuda"]) for i in info.entries) == images
