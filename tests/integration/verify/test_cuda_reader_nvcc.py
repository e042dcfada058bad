"""The pure-Python CUDA reader against cuobjdump and against each nvcc recipe's known content."""

from __future__ import annotations

import struct

import pytest

from kestrel_release.artifacts import elf, fatbin
from kestrel_release.artifacts.cuda_binary import CudaFormatError, inspect_bytes
from tests.data.cuda.builders import CASES, build_cuda_matrix, cuobjdump_report, nvcc_version

# name -> (sass, ptx, lto_ir, debug): what each recipe must produce.
EXPECTED = {
    "sm80.cubin": (["sm_80"], [], [], False),
    "sm90.cubin": (["sm_90"], [], [], False),
    "sm90a.cubin": (["sm_90a"], [], [], False),
    "sm90a-ndebug.cubin": (["sm_90a"], [], [], False),
    "sm100a.cubin": (["sm_100a"], [], [], False),
    "sm120f.cubin": (["sm_120"], [], [], False),  # a cubin does not record 'f' (cuda-binaries.md)
    "sm90a-G.cubin": (["sm_90a"], [], [], True),
    "sm90a-lineinfo.cubin": (["sm_90a"], [], [], True),
    "ptx90a.fatbin": (["sm_90a"], ["compute_90a"], [], False),
    "multi.fatbin": (["sm_80", "sm_90", "sm_100a", "sm_120f"], [], [], False),
    "G.fatbin": (["sm_90a"], ["compute_90a"], [], True),
    "lineinfo-all.fatbin": (["sm_90a"], [], [], True),
    "size.fatbin": (["sm_90"], ["compute_90"], [], False),
    "speed-all.fatbin": (["sm_90"], ["compute_90"], [], True),  # LZ4, looked into because of -G
    "none.fatbin": (["sm_90"], ["compute_90"], [], False),
    "sm90a.so": (["sm_90a"], [], [], False),
    "sm90a-ndebug.so": (["sm_90a"], [], [], False),
    "ptx-lineinfo.so": (["sm_90a"], ["compute_90a"], [], True),
    "rdc.so": (["sm_90"], ["compute_90"], [], False),
    "rdc.o": (["sm_90"], ["compute_90"], [], False),
    "lto.o": ([], [], ["lto_90"], False),
    "sm80.o": (["sm_80"], [], [], False),
}


@pytest.fixture(scope="session")
def cuda_matrix():
    if nvcc_version() is None:
        pytest.skip("nvcc is not on PATH: cannot build the CUDA test binaries")
    return build_cuda_matrix()


def test_expected_covers_every_case():
    assert set(EXPECTED) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reader_reports_what_the_recipe_builds(cuda_matrix, name):
    info = inspect_bytes((cuda_matrix / name).read_bytes(), name)
    assert (info.sass, info.ptx, info.lto_ir, info.debug) == EXPECTED[name]
    if "lineinfo" in name or "-G" in name or name.startswith(("G.", "speed")):
        assert str(cuda_matrix / "kernel.cu") in info.source_paths
    if "ndebug" in name:
        assert info.source_paths == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_reader_matches_cuobjdump(cuda_matrix, name):
    truth = cuobjdump_report(cuda_matrix / name)
    if truth is None:
        pytest.skip("cuobjdump not installed (uv sync installs nvidia-cuda-cuobjdump)")
    info = inspect_bytes((cuda_matrix / name).read_bytes(), name)
    # cuobjdump names an sm_120f image sm_120: compare without the family suffix.
    assert ({a.rstrip("f") for a in info.sass}, info.ptx, info.debug) == (set(truth[0]), truth[1], truth[2])


def test_matrix_exercises_lz4_zstd_and_stored_entries(cuda_matrix):
    flags = set()
    for name in CASES:
        if name.endswith(".fatbin"):
            for entry in fatbin.parse_containers(memoryview((cuda_matrix / name).read_bytes()), name):
                flags.add(entry.flags & (fatbin.FLAG_LZ4 | fatbin.FLAG_ZSTD))
    assert flags == {0, fatbin.FLAG_LZ4, fatbin.FLAG_ZSTD}


def test_lineinfo_cubin_flags_the_hidden_ptx_text(cuda_matrix):
    assert inspect_bytes((cuda_matrix / "sm90a-lineinfo.cubin").read_bytes(), "x.cubin").debug_ptx_text
    assert not inspect_bytes((cuda_matrix / "sm90a.cubin").read_bytes(), "x.cubin").debug_ptx_text


def _elf(machine: int, flags: int, osabi: int, abiversion: int, sections: dict[str, bytes] | None = None) -> bytes:
    """A minimal ELF64 with the given named PROGBITS sections (plus .shstrtab)."""
    sections = dict(sections or {})
    names = b"\0" + b"".join(n.encode() + b"\0" for n in sections) + b".shstrtab\0"
    body, offsets, pos = b"", [], 64
    for data in [*sections.values(), names]:
        offsets.append(pos + len(body))
        body += data
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1, osabi, abiversion]) + bytes(7)
    header = struct.pack(
        "<16sHHIQQQIHHHHHH",
        ident,
        2,
        machine,
        1,
        0,
        0,
        shoff,
        flags,
        64,
        0,
        0,
        64,
        len(sections) + 2,
        len(sections) + 1,
    )
    shdrs = bytes(64)
    name_pos = 1
    for (name, data), off in zip([*sections.items(), (".shstrtab", names)], offsets, strict=False):
        shdrs += struct.pack("<IIQQQQIIQQ", name_pos, 1 if name != ".shstrtab" else 3, 0, 0, off, len(data), 0, 0, 1, 0)
        name_pos += len(name) + 1
    return header + body + shdrs


@pytest.mark.parametrize(
    "flags, osabi, abiversion, arch",
    [
        (0x005A055A, 0x33, 7, "sm_90"),  # ABI V1 sm_90
        (0x005A0D5A, 0x33, 7, "sm_90a"),  # ABI V1 sm_90a (CUDA 12.8)
        (0x00500550, 0x33, 7, "sm_80"),  # ABI V1 sm_80: 0x800 means nothing below sm_90
        (0x06005A04, 0x41, 8, "sm_90"),  # ABI V2 (CUDA 13) without .nv.compat
        (0x0600640A, 0x41, 8, "sm_100a"),  # ABI V2 sm_100a (CUDA 12.8 sets 0x8)
    ],
)
def test_cubin_abi_v1_and_v2_flags(flags, osabi, abiversion, arch):
    assert inspect_bytes(_elf(elf.EM_CUDA, flags, osabi, abiversion), "k.cubin").sass == [arch]


def test_nv_compat_marks_arch_specific():
    compat = bytes([2, 0x09, 1, 0])  # fmt 2 (u8), attribute 0x09 = 1
    data = _elf(elf.EM_CUDA, 0x06005A04, 0x41, 8, {".nv.compat": compat})
    assert inspect_bytes(data, "k.cubin").sass == ["sm_90a"]


def test_fatbin_embedded_in_rodata_is_found(cuda_matrix):
    blob = (cuda_matrix / "ptx90a.fatbin").read_bytes()
    host = _elf(62, 0, 0, 0, {".rodata": b"junk\xba\x55\xed\x50" + bytes(4) + blob + b"tail"})
    info = inspect_bytes(host, "libx.so")
    assert (info.sass, info.ptx) == (["sm_90a"], ["compute_90a"])


def test_host_object_without_cuda_reports_nothing():
    info = inspect_bytes(_elf(62, 0, 0, 0, {".text": b"\x90" * 64, ".rodata": b"hello"}), "_C.so")
    assert not info.has_cuda


@pytest.mark.parametrize("name", ["ptx90a.fatbin", "sm90a.cubin", "ptx-lineinfo.so", "G.fatbin", "lineinfo-all.fatbin"])
def test_hostile_bytes_raise_only_cuda_format_error(cuda_matrix, name):
    data = (cuda_matrix / name).read_bytes()
    cuts = sorted({*range(0, 200, 7), *range(0, len(data), max(1, len(data) // 97))})
    variants = [data[:n] for n in cuts]
    for i in range(0, len(data), max(1, len(data) // 61)):  # flip bytes across the file
        variants.append(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :])
    for variant in variants:
        try:
            inspect_bytes(variant, name)
        except CudaFormatError:
            pass


def test_not_a_binary_is_a_format_error():
    with pytest.raises(CudaFormatError, match="not an ELF, PE or Mach-O file or a fat binary"):
        inspect_bytes(b"#!/bin/sh\necho hi\n", "tool.so")
