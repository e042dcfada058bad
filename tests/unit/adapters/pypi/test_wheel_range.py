"""A remote wheel's METADATA by byte ranges: three bounded reads, zip64 included, and one clear refusal each."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from kestrel_release.adapters.pypi import wheel_range

METADATA = "Metadata-Version: 2.4\nName: torch\nVersion: 2.15.0\nRequires-Dist: cuda-toolkit[cudart]==13.2.2\n"


def _zip(members: dict[str, bytes], force_zip64: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            with zf.open(name, "w", force_zip64=force_zip64) as fh:
                fh.write(data)
    return buf.getvalue()


def _reader(blob: bytes, asked: list[tuple[int, int]]):
    def read(url: str, start: int, length: int) -> bytes:
        asked.append((start, length))
        return blob[start:] if start < 0 else blob[start : start + length]

    return read


def test_the_metadata_member_is_read_in_three_bounded_reads() -> None:
    blob = _zip({"torch/lib/a.so": bytes(range(256)) * 4096, "torch-2.15.0.dist-info/METADATA": METADATA.encode()})
    asked: list[tuple[int, int]] = []
    assert wheel_range.metadata("u", _reader(blob, asked)) == METADATA
    assert len(asked) == 3 and asked[0] == (-wheel_range.TAIL, wheel_range.TAIL)
    assert all(length <= wheel_range.TAIL + len(METADATA) + 100 for _, length in asked)


def test_a_zip64_archive_is_read_through_its_zip64_end_record() -> None:
    blob = _zip({"torch-2.15.0.dist-info/METADATA": METADATA.encode()}, force_zip64=True)
    # zipfile writes zip64 end records only for big archives: plant the 0xFFFFFFFF markers a big one has.
    at = blob.rfind(b"PK\x05\x06")
    directory = blob.rfind(b"PK\x01\x02")
    end64 = b"PK\x06\x06" + (44).to_bytes(8, "little") + b"\x2d\x00\x2d\x00" + bytes(8) + (1).to_bytes(8, "little") * 2
    end64 += (at - directory).to_bytes(8, "little") + directory.to_bytes(8, "little")
    locator = b"PK\x06\x07" + bytes(4) + at.to_bytes(8, "little") + (1).to_bytes(4, "little")
    eocd = bytearray(blob[at:])
    eocd[12:20] = b"\xff" * 8
    blob = blob[:at] + end64 + locator + bytes(eocd)
    assert wheel_range.metadata("u", _reader(blob, [])) == METADATA


@pytest.mark.parametrize(
    ("blob", "says"),
    [
        (b"not a zip at all", "no zip end record in its last 64 KiB"),
        (_zip({"torch/__init__.py": b""}), "no *.dist-info/METADATA in its central directory"),
    ],
)
def test_what_is_not_a_readable_wheel_says_why(blob: bytes, says: str) -> None:
    with pytest.raises(wheel_range.NotAWheel, match=rf"^{re.escape(says)}$"):
        wheel_range.metadata("u", _reader(blob, []))


def test_a_central_directory_larger_than_the_bound_is_not_read() -> None:
    blob = bytearray(_zip({"torch-2.15.0.dist-info/METADATA": METADATA.encode()}))
    at = blob.rfind(b"PK\x05\x06")
    blob[at + 12 : at + 16] = (wheel_range.DIRECTORY_MAX + 1).to_bytes(4, "little")
    asked: list[tuple[int, int]] = []
    with pytest.raises(wheel_range.NotAWheel, match=r"central directory is \d+ bytes, more than"):
        wheel_range.metadata("u", _reader(bytes(blob), asked))
    assert len(asked) == 1
