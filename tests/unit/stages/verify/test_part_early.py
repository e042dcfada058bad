"""What the early child (stages/verify/part.py) is started for, and a Part read from another file than the
reader's is read again (the forked child's answer itself: tests/integration/verify/test_verify_early.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from kestrel_release import early
from kestrel_release.artifacts import wheel as wheel_mod


def _wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/a.py", b"A = 1\n" * 100)
        zf.writestr("demo/b.py", b"B = 2\n" * 100)
    return path


def test_verify_args_are_the_wheel_files_and_project_of_a_verify_command(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "demo-1-py3-none-any.whl")
    missing = str(tmp_path / "gone.whl")

    assert early.verify_args(["-v", "verify", "--project", "kernels", str(wheel), missing]) == ([str(wheel)], "kernels")
    assert early.verify_args(["verify", "--project=p", "--json", "--", str(wheel)]) == ([str(wheel)], "p")
    assert early.verify_args(["publish", str(wheel)]) == ([], None)
    assert early.verify_args([]) == ([], None)


def test_a_part_read_from_another_file_is_read_again_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _wheel(tmp_path / "demo-1-py3-none-any.whl")
    plain = wheel_mod.read_wheel(path)
    other = wheel_mod.read_part(_wheel(tmp_path / "other.whl"), [0, 1])
    lying = wheel_mod.Part([(1, "sha256=forged")] * 2, identity=other.identity)

    read = wheel_mod.read_wheel(path, split=lambda readable: (0, lambda keep: lying))

    assert other.identity != wheel_mod.read_part(path, [0]).identity
    assert [(m.name, m.digest) for m in read.members] == [(m.name, m.digest) for m in plain.members]
