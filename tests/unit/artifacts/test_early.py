"""Members inflated while the CLI imports (artifacts/early.py): the reader gets the same bytes, digests and
problems as reading the wheel itself, uses them only for the same file, and never waits on a member the
early thread did not start."""

from __future__ import annotations

import os
import random
import zipfile
from pathlib import Path

import pytest

from kestrel_release.artifacts import early
from kestrel_release.artifacts import wheel as wheel_mod
from tests.factories import patch_declared_size

PAYLOADS = {
    "demo/big.bin": random.Random(1).randbytes(400_000),
    "demo/zeros.bin": b"\0" * 300_000,
    "demo/code.py": b"x = 1\n" * 1000,
    "demo/stored.txt": b"kept as is",
}


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(early, "_slots", {})
    monkeypatch.setattr(early, "_started", True)  # as after __main__'s start(); the tests run _run themselves
    monkeypatch.setattr(wheel_mod, "HASH_WHILE_INFLATING", 200_000)  # one member takes the chunked path


def _wheel(path: Path, payloads: dict[str, bytes] = PAYLOADS) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in payloads.items():
            zf.writestr(name, data, zipfile.ZIP_STORED if name.endswith(".txt") else zipfile.ZIP_DEFLATED)
    return path


def _read(path: Path) -> tuple[wheel_mod.WheelFile, list[tuple[str, bytes]]]:
    seen: list[tuple[str, bytes]] = []
    read = wheel_mod.read_wheel(path, lambda m, data: seen.append((m.name, bytes(data))))
    return read, seen


def _inflated_by_reader(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = wheel_mod._member_bytes

    def counting(view, info, member, problems):
        calls.append(member.name)
        return real(view, info, member, problems)

    monkeypatch.setattr(wheel_mod, "_member_bytes", counting)
    return calls


def test_the_reader_takes_what_was_inflated_early_and_reads_the_same(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    monkeypatch.setattr(early, "_started", False)
    plain, plain_seen = _read(path)  # no early thread in this process: the reader does it all
    monkeypatch.setattr(early, "_started", True)

    early._run([str(path)], wheel_mod.inflate_early)
    inflated = _inflated_by_reader(monkeypatch)
    taken, taken_seen = _read(path)

    assert inflated == ["demo/stored.txt"]  # every deflated member came from the early thread
    assert [(m.name, m.digest, m.actual_size) for m in taken.members] == [
        (m.name, m.digest, m.actual_size) for m in plain.members
    ]
    assert taken_seen == plain_seen and dict(taken_seen) == PAYLOADS
    assert taken.sha256 == plain.sha256 and taken.problems == plain.problems == []


def test_a_file_changed_after_the_early_read_is_read_again(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    early._run([str(path)], wheel_mod.inflate_early)
    changed = {name: (data[::-1] if name.endswith(".bin") else data) for name, data in PAYLOADS.items()}
    _wheel(tmp_path / "other.whl", changed).replace(path)  # same name, other file
    inflated = _inflated_by_reader(monkeypatch)

    read, seen = _read(path)

    assert sorted(inflated) == sorted(PAYLOADS)
    assert dict(seen) == changed
    assert {m.name: m.digest for m in read.members} == {n: wheel_mod.record_digest(d) for n, d in changed.items()}


def test_a_rewrite_in_place_of_the_same_size_is_read_again(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    early._run([str(path)], wheel_mod.inflate_early)
    st = path.stat()
    path.write_bytes(path.read_bytes())  # same bytes, same size, a new ctime
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime put back
    inflated = _inflated_by_reader(monkeypatch)

    _read(path)

    assert sorted(inflated) == sorted(PAYLOADS)


def test_a_member_with_a_problem_is_left_to_the_reader_which_reports_it(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    path.write_bytes(patch_declared_size(path.read_bytes(), "demo/big.bin", 399_000))
    early._run([str(path)], wheel_mod.inflate_early)
    inflated = _inflated_by_reader(monkeypatch)

    read, _seen = _read(path)

    assert sorted(inflated) == ["demo/big.bin", "demo/stored.txt"]
    assert ("zip-bomb", "demo/big.bin", "inflates past its declared size: rebuild the wheel") in read.problems


def test_a_zip_bomb_is_not_inflated_early(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl", {"demo/zeros.bin": b"\0" * 3_000_000})
    monkeypatch.setattr(wheel_mod, "BOMB_SIZE", 1_000_000)

    early._run([str(path)], wheel_mod.inflate_early)

    assert early._slots == {}
    assert wheel_mod.read_wheel(path).problems[0][0] == "zip-bomb"


def test_the_early_thread_leaves_a_wheel_the_reader_has_reached(tmp_path: Path) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    with open(path, "rb") as fh:
        taker = early.taker(fh.fileno())
        first = zipfile.ZipFile(fh).infolist()[0]
    assert taker is not None and taker.take(first) is None  # the reader claims the first member

    early._run([str(path)], wheel_mod.inflate_early)

    assert all(slot is None for slot in early._slots.values())  # nothing inflated twice, nothing held


def test_the_budget_bounds_what_is_inflated_early(tmp_path: Path, monkeypatch) -> None:
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    monkeypatch.setattr(early, "BUDGET", 500_000)

    early._run([str(path)], wheel_mod.inflate_early)

    assert len(early._slots) == 1  # big.bin (400,000 declared bytes); zeros.bin would pass the budget


def test_verify_wheels_are_the_wheel_files_of_a_verify_command_line(tmp_path: Path) -> None:
    one = _wheel(tmp_path / "a-1-py3-none-any.whl")
    folder = tmp_path / "dist"
    folder.mkdir()
    two = _wheel(folder / "b-1-py3-none-any.whl")
    (folder / "notes.txt").write_text("not a wheel")

    args = ["-v", "verify", str(one), "--target", "pypi", str(folder), str(tmp_path / "missing.whl")]
    assert early.verify_wheels(args) == [str(one), str(two)]
    assert early.verify_wheels(["publish", str(one)]) == []
    assert early.verify_wheels(["verify", "--json", "--", str(one)]) == [str(one)]
    assert early.verify_wheels([]) == []


def test_no_taker_in_a_process_that_started_no_early_thread(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(early, "_started", False)
    path = _wheel(tmp_path / "demo-0.1.0-py3-none-any.whl")
    with open(path, "rb") as fh:
        assert early.taker(fh.fileno()) is None
