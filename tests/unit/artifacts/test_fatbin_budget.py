"""The CUDA reader's decompression budget: a fat-binary header that lies about its sizes, or claims more than any
real build, is a CudaFormatError after bounded work; honest entries are read whole, in chunks."""

from __future__ import annotations

import hashlib

import pytest
import zstandard

from kestrel_release.artifacts import cuda_binary, fatbin
from kestrel_release.artifacts.cuda_binary import CudaFormatError, inspect_bytes
from tests.factories import FATBIN_DEBUG, FATBIN_PTX, FATBIN_ZSTD, fatbin_bytes, fatbin_entry, zstd_zeros

PTX_FLAGS = 0x11 | FATBIN_ZSTD | FATBIN_DEBUG  # 64-bit, linux, zstd, -G: the reader looks inside


def _ptx(payload: bytes, declared: int, ident: bytes = b"k.cu") -> bytes:
    return fatbin_entry(FATBIN_PTX, 90, payload, flags=PTX_FLAGS, uncompressed_size=declared, identifier=ident)


def test_a_claim_no_stored_bytes_can_give_is_refused_before_decompressing():
    # 4 GiB of zeros in 128 KiB of zstd (32768:1): the quoted 3 KB wheel; main inflated it for minutes.
    blob = fatbin_bytes([_ptx(zstd_zeros(1 << 31), 1 << 31)] * 2)
    with pytest.raises(CudaFormatError, match=r"k\.fatbin: a compressed fat-binary entry declares 2147483648 bytes"):
        inspect_bytes(blob, "pkg/k.fatbin")


def test_a_header_declaring_more_than_the_frame_gives_is_a_lie():
    text = b".version 8.8\n.target sm_90\n" * 1000
    frame = zstandard.ZstdCompressor().compress(text)
    with pytest.raises(CudaFormatError, match=f"inflates to only {len(text)} bytes, not the {len(text) + 100}"):
        inspect_bytes(fatbin_bytes([_ptx(frame, len(text) + 100)]), "k.fatbin")


def test_a_header_declaring_less_than_the_frame_gives_stops_at_the_declared_size():
    frame = zstd_zeros(64 << 20)  # 64 MiB of output behind a header that says 1 MiB
    with pytest.raises(CudaFormatError, match="inflates to more bytes, not the 1048576"):
        inspect_bytes(fatbin_bytes([_ptx(frame, 1 << 20)]), "k.fatbin")


def test_one_binary_and_one_wheel_have_a_total(monkeypatch):
    monkeypatch.setattr(fatbin, "MAX_PER_BINARY", 3 << 20)
    monkeypatch.setattr(fatbin, "MAX_PER_WHEEL", 5 << 20)
    entry = _ptx(zstd_zeros(1 << 20), 1 << 20)  # honest: 1 MiB of zeros each
    assert inspect_bytes(fatbin_bytes([entry] * 3), "a.fatbin").ptx == ["compute_90"]
    with pytest.raises(CudaFormatError, match="more than 3 MiB uncompressed in one binary"):
        inspect_bytes(fatbin_bytes([entry] * 4), "b.fatbin")
    wheel = cuda_binary.wheel_budget()
    inspect_bytes(fatbin_bytes([entry] * 3), "c.fatbin", wheel)
    inspect_bytes(fatbin_bytes([entry] * 2), "d.fatbin", wheel)
    with pytest.raises(CudaFormatError, match=r"e.fatbin: .* more than 5 MiB uncompressed in one wheel"):
        inspect_bytes(fatbin_bytes([entry]), "e.fatbin", wheel)


def test_a_path_across_decompressed_chunks_is_found_whole():
    path = b"/home/alice/kernels/csrc/attention/flash_fwd.cu"
    cut = fatbin._CHUNK - 10  # the path straddles the first chunk boundary of the streamed PTX text
    filler = b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() for i in range(cut // 64 + 1))  # 2:1 at best
    text = filler[: cut - 1] + b" " + path + b"\n" + filler[:1000]
    frame = zstandard.ZstdCompressor().compress(text)
    info = inspect_bytes(fatbin_bytes([_ptx(frame, len(text), ident=b"")]), "k.fatbin")
    assert info.source_paths == [path.decode()]
