"""A big wheel's last members read by a second process (stages/verify/part.py) give the very report one
process gives: same findings in the same order, same CUDA table, same hashes; a child that fails or is
stopped changes nothing but the speed."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from kestrel_release.process import proc
from kestrel_release.stages import verify as verify_stage
from kestrel_release.stages.verify import part as verify_part
from kestrel_release.stages.verify.pypi import standalone_config
from tests.factories import FATBIN_PTX, fatbin_bytes, fatbin_entry, make_wheel

PKG = "kestrel_kernels"
_RNG = random.Random(7)
_B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
TOKEN = "ghp_" + "".join(_RNG.choice(_B62) for _ in range(36))


def _big_wheel(directory: Path) -> Path:
    """60 modules, then (in the half a child reads) a token, a build path, a fat binary and a RECORD lie."""
    files = {f"{PKG}/__init__.py": b'__version__ = "0.1.0"\n'}
    for i in range(60):
        noise = "".join(_RNG.choice(_B62 + " \n") for _ in range(3000))
        files[f"{PKG}/mod_{i:02d}.py"] = f"# module {i}\nDATA = '''{noise}'''\n".encode()
    files[f"{PKG}/zz_settings.py"] = f"TOKEN = '{TOKEN}'\n".encode()
    files[f"{PKG}/zz_paths.py"] = b"SRC = '/home/alice/src/kestrel/build/lib'\n"
    files[f"{PKG}/kernels/zz.fatbin"] = fatbin_bytes([fatbin_entry(FATBIN_PTX, 90, b".version 8.4\n.target sm_90\n")])

    def lie(rows: list[list[str]]) -> list[list[str]]:
        return [[r[0], "sha256=" + "A" * 43, r[2]] if r[0].endswith("mod_59.py") else r for r in rows]

    return make_wheel(directory, files, record_edit=lie)


def _verify(path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, *, split: bool) -> tuple:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(cache))  # a first verify of these bytes: no stored verdict
    monkeypatch.setattr(verify_part, "MIN_MEMBERS", 2 if split else 10**9)
    monkeypatch.setattr(verify_part, "MIN_BYTES", 0)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    report = verify_stage.run(standalone_config(path.parent), [path], project=False, record=False)
    wheel = report.wheels[0]
    return (
        wheel.sha256,
        [(f.severity, f.rule, f.member, f.message) for f in wheel.findings],
        [(c.member, c.sass, c.ptx, c.entries) for c in wheel.cuda],
        wheel.kernels,
    )


def _spawned(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen]:
    children: list[subprocess.Popen] = []
    spawn = proc.spawn

    def spy(argv: list[str], **kwargs: object) -> subprocess.Popen:
        child = spawn(argv, **kwargs)
        children.append(child)
        return child

    monkeypatch.setattr(proc, "spawn", spy)
    return children


def test_a_child_reading_the_last_members_gives_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big_wheel(tmp_path / "dist")
    alone = _verify(path, tmp_path / "c1", monkeypatch, split=False)
    children = _spawned(monkeypatch)
    shared = _verify(path, tmp_path / "c2", monkeypatch, split=True)

    assert [c.returncode for c in children] == [0]  # one child ran, and it answered
    assert shared == alone
    rules = {(rule, member) for _sev, rule, member, _msg in shared[1]}
    # What only the child's half holds is found: the token, the build path, the RECORD lie, the fat binary.
    assert ("secret", f"{PKG}/zz_settings.py") in rules
    assert ("build-path", f"{PKG}/zz_paths.py") in rules
    assert any(rule == "record-mismatch" and member.endswith("mod_59.py") for rule, member in rules)
    assert [c[0] for c in shared[2]] == [f"{PKG}/kernels/zz.fatbin"]
    assert TOKEN not in repr(shared)


def test_a_child_that_fails_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_wheel(tmp_path / "dist")
    alone = _verify(path, tmp_path / "c1", monkeypatch, split=False)
    children = _spawned(monkeypatch)
    monkeypatch.setattr(verify_part, "_child_argv", lambda: [sys.executable, "-c", "import sys; sys.exit(3)"])

    assert _verify(path, tmp_path / "c2", monkeypatch, split=True) == alone
    assert [c.returncode for c in children] == [3]


def test_a_stopped_read_stops_its_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_wheel(tmp_path / "dist")
    children = _spawned(monkeypatch)
    monkeypatch.setattr(verify_part, "MIN_MEMBERS", 2)
    monkeypatch.setattr(verify_part, "MIN_BYTES", 0)
    monkeypatch.setattr(verify_part, "_child_argv", lambda: [sys.executable, "-c", "import time; time.sleep(60)"])
    scan = verify_part.Scan.new("", (), ())
    members = [(i, verify_part.Member(f"m{i}", 10, 10, 8)) for i in range(4)]
    plan = verify_part.splitter(path, scan)(members)
    assert plan is not None and plan[0] < len(members)

    assert plan[1](False) is None
    assert children[0].wait(timeout=30) < 0  # killed, not left running
