"""Fat-binary containers separated by zero padding, as MSVC's linker lays them out in a DLL's `__nv_rel`
section (bitsandbytes 0.45.5 win_amd64: containers aligned to 16 bytes, so 8 zero bytes between two)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kestrel_release.artifacts import fatbin, pe
from kestrel_release.artifacts.cuda_binary import CudaFormatError, inspect_bytes

RELEASE = Path(__file__).resolve().parents[2] / "data" / "cuda" / "release"
CONTAINER = (RELEASE / "cu130-sm90a-ptx.fatbin").read_bytes()  # one real container: sm_90a SASS + PTX


def _pad8(blob: bytes) -> bytes:
    return blob + bytes(-len(blob) % 8)


@pytest.mark.parametrize("gap", [8, 16, 4096, 70_000])
def test_containers_after_zero_padding_are_all_read(gap):
    section = _pad8(CONTAINER) + bytes(gap) + _pad8(CONTAINER) + bytes(24)
    entries = fatbin.parse_containers(memoryview(section), "s")
    one = fatbin.parse_containers(memoryview(CONTAINER), "s")
    assert [e.arch for e in entries] == [e.arch for e in one] * 2


def test_non_zero_bytes_between_containers_still_raise():
    section = _pad8(CONTAINER) + b"\x01" + bytes(15) + _pad8(CONTAINER)
    with pytest.raises(CudaFormatError, match="bad fat-binary magic"):
        fatbin.parse_containers(memoryview(section), "s")


def _split_with_gap(container: bytes, gap: int) -> bytes:
    """The container's first entry and the rest as two containers, `gap` zero bytes apart."""
    magic, version, header_size, _size = struct.unpack_from("<IHHQ", container)
    body = container[header_size:]
    _kind, _ver, entry_header, payload = struct.unpack_from("<HHIQ", body)
    first, rest = body[: entry_header + payload], body[entry_header + payload :]
    head = struct.pack("<IHHQ", magic, version, header_size, len(first)) + first
    assert len(head) % 8 == 0
    return head + bytes(gap) + struct.pack("<IHHQ", magic, version, header_size, len(rest)) + rest


def test_dll_whose_nv_rel_section_pads_its_containers_reports_both():
    """The committed DLL with its `.nv_fatb` section named `__nv_rel` holding SASS and PTX in two padded
    containers; before the fix the second was 'bad fat-binary magic' (exit 5 on a wheel PyPI serves)."""
    dll = bytearray((RELEASE / "kernel_sm90a.dll").read_bytes())
    section = next(s for s in pe.parse(bytes(dll), "k.dll").sections if s.name == ".nv_fatb")
    assert bytes(dll[section.offset : section.offset + section.size]) == CONTAINER
    split = _split_with_gap(CONTAINER, 8)
    dll[section.offset : section.offset + len(split)] = split  # the raw data is padded to 512: room for it
    header = dll.find(b".nv_fatb")
    dll[header : header + 12] = b"__nv_rel" + struct.pack("<I", len(split))  # name, VirtualSize
    info = inspect_bytes(bytes(dll), "bitsandbytes/libbitsandbytes_cuda117.dll")
    assert (info.format, info.sass, info.ptx) == ("pe", ["sm_90a"], ["compute_90a"])
    assert [s.size for s in pe.parse(bytes(dll), "k.dll").sections if s.name == "__nv_rel"] == [len(split)]
