"""A big member is hashed chunk by chunk while it inflates (artifacts/wheel.py): the same bytes and RECORD
digest as inflating then hashing, and the same problems for a truncated, lying or corrupt member."""

from __future__ import annotations

import random
import zipfile
import zlib
from pathlib import Path

import pytest

from kestrel_release.artifacts import wheel as wheel_mod
from kestrel_release.artifacts import wheel_members
from tests.factories import patch_declared_size


def _deflate(data: bytes) -> memoryview:
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    return memoryview(packer.compress(data) + packer.flush())


SAMPLES = {
    "random": random.Random(3).randbytes(300_000),
    "zeros": b"\0" * 2_000_000,  # a long match spans many output chunks: zlib holds output back
    "mixed": (b"abc" * 50_000 + random.Random(4).randbytes(900)) * 5,
}


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheel_members, "INFLATE_CHUNK", 1 << 14)


@pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())
def test_chunked_inflate_gives_the_bytes_and_their_record_digest(data: bytes) -> None:
    problems: list = []
    out = wheel_members.inflate_hashing(_deflate(data), wheel_mod.Member("m", len(data), 0, 8), problems)
    assert out == (data, wheel_mod.record_digest(data))
    assert problems == []


@pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())
def test_a_truncated_or_lying_member_is_refused_as_before(data: bytes) -> None:
    raw = _deflate(data)
    problems: list = []
    assert wheel_members.inflate_hashing(raw[: len(raw) // 2], wheel_mod.Member("m", len(data), 0, 8), problems) is None
    assert [p[0] for p in problems] == ["zip-format"] and "truncated" in problems[0][2]
    problems = []
    assert wheel_members.inflate_hashing(raw, wheel_mod.Member("m", len(data) - 1, 0, 8), problems) is None
    assert [p[0] for p in problems] == ["zip-bomb"]


def test_a_wheel_reads_the_same_with_and_without_hashing_while_inflating(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "demo-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in SAMPLES.items():
            zf.writestr(f"demo/{name}.bin", data)
        zf.writestr("demo/small.py", b"x = 1\n")
    seen: dict[str, list] = {"plain": [], "chunked": []}

    monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 1 << 40)
    plain = wheel_mod.read_wheel(path, lambda m, data: seen["plain"].append((m.name, bytes(data))))
    monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 100_000)
    chunked = wheel_mod.read_wheel(path, lambda m, data: seen["chunked"].append((m.name, bytes(data))))

    assert [(m.name, m.digest, m.actual_size) for m in chunked.members] == [
        (m.name, m.digest, m.actual_size) for m in plain.members
    ]
    assert seen["chunked"] == seen["plain"] and len(seen["plain"]) == 4
    assert chunked.problems == plain.problems == []


def test_a_big_member_declaring_less_than_it_inflates_to_is_a_bomb(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "demo-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/zeros.bin", SAMPLES["zeros"])
    path.write_bytes(patch_declared_size(path.read_bytes(), "demo/zeros.bin", 1_500_000))
    monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 100_000)
    read = wheel_mod.read_wheel(path)
    assert ("zip-bomb", "demo/zeros.bin", "inflates past its declared size: rebuild the wheel") in read.problems


@pytest.mark.parametrize("big", [False, True], ids=["whole", "chunked"])
def test_corrupt_deflate_data_is_a_problem_not_an_exception(big: bool, monkeypatch) -> None:
    data = SAMPLES["random"]
    raw = bytearray(_deflate(b"header " * 2000 + data))
    raw[40:200] = b"\xff" * 160  # an invalid block in the middle of the stream
    if big:
        monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 1)
    problems: list = []
    view = memoryview(bytes(raw))
    member = wheel_mod.Member("demo/x.bin", 14_000 + len(data), len(raw), 8)
    out = (
        wheel_members.inflate_hashing(view, member, problems) if big else wheel_members.inflate(view, member, problems)
    )
    assert out is None
    assert problems == [("zip-format", "demo/x.bin", "corrupt deflate data: rebuild the wheel")]


def test_the_reader_inflates_with_isa_l_a_dependency_of_the_tool() -> None:
    assert wheel_members.inflating().__name__ == "isal.isal_zlib"


def test_with_checks_a_big_member_is_hashed_beside_them_with_the_same_result(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "demo-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in SAMPLES.items():
            zf.writestr(f"demo/{name}.bin", data)
    monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 1 << 40)
    plain = wheel_mod.read_wheel(path)
    monkeypatch.setattr(wheel_members, "HASH_WHILE_INFLATING", 100_000)
    worked: dict[str, bytes] = {}
    beside = wheel_mod.read_wheel(path, lambda m, done: None, lambda m, data: worked.setdefault(m.name, bytes(data)))

    assert [(m.name, m.digest, m.actual_size) for m in beside.members] == [
        (m.name, m.digest, m.actual_size) for m in plain.members
    ]
    assert worked == {f"demo/{name}.bin": data for name, data in SAMPLES.items()}
