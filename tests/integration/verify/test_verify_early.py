"""`verify` of one wheel forks a child at start-up that reads the wheel while the CLI imports
(kestrel_release/early.py, stages/verify/part.py): the report is the one the CLI gives reading it all itself, in a
standalone directory, inside a project and with --project; several wheels start no child."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

from kestrel_release import early
from kestrel_release.artifacts import wheel as wheel_mod
from kestrel_release.stages.verify import part
from tests.factories import make_verify_project
from tests.helpers import ROOT, run_cli
from tests.integration.verify.test_verify_split import PKG, TOKEN, _big_wheel

EARLY = "read by a child forked at start-up"


def _without_child(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """The same command through entry.main, which never forks (only __main__ starts the early child)."""
    code = "import sys; from kestrel_release.entry import main; sys.argv[1:] = sys.argv[2:]; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "--", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def _both(args: list[str], cwd: Path, tmp_path: Path) -> tuple[dict, dict, str]:
    early = run_cli(["-v", *args], cwd=cwd, env={"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "c1")})
    code, out, _err = _without_child(["-v", *args], cwd, {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "c2")})
    assert early.code == code, early.output
    return json.loads(early.stdout), json.loads(out), early.stderr


def test_standalone_verify_reads_through_the_early_child_with_the_same_report(tmp_path: Path) -> None:
    wheel = _big_wheel(tmp_path / "dist")
    here = tmp_path / "elsewhere"
    here.mkdir()

    with_child, alone, err = _both(["verify", "--json", str(wheel)], here, tmp_path)

    assert EARLY in err
    assert with_child == alone
    found = {(f["rule"], f["member"]) for w in with_child["wheels"] for f in w["findings"]}
    assert ("secret", f"{PKG}/zz_settings.py") in found and ("build-path", f"{PKG}/zz_paths.py") in found
    assert TOKEN not in json.dumps(with_child) + err


def test_project_verify_reads_through_the_early_child_with_the_project_rules(tmp_path: Path) -> None:
    project = make_verify_project(tmp_path / "proj", verify='forbid = ["**/zz_paths.py"]')
    wheel = _big_wheel(project / "dist")

    inside, alone, err = _both(["verify", "--json", str(wheel)], project, tmp_path)
    assert EARLY in err and inside == alone
    assert any(
        f["member"] == f"{PKG}/zz_paths.py" and f["rule"] != "build-path" for f in inside["wheels"][0]["findings"]
    )

    flagged, alone_flagged, err = _both(["verify", "--json", "--project", str(project), str(wheel)], ROOT, tmp_path)
    assert EARLY in err and flagged == alone_flagged == inside


def test_several_wheels_start_no_child(tmp_path: Path) -> None:
    one = _big_wheel(tmp_path / "a")
    two = _big_wheel(tmp_path / "b")
    here = tmp_path / "elsewhere"
    here.mkdir()

    with_child, alone, err = _both(["verify", "--json", str(one), str(two)], here, tmp_path)

    assert EARLY not in err and with_child == alone


def _wheel(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("demo/a.py", b"A = 1\n" * 100)
        zf.writestr("demo/b.py", b"B = 2\n" * 100)
    return path


def _answer(data: bytes) -> early.Forked:
    child = early.fork_call(lambda: data)
    assert child is not None
    return child


def test_an_answer_read_with_other_settings_or_members_is_not_used(tmp_path: Path) -> None:
    path = _wheel(tmp_path / "demo-1-py3-none-any.whl")
    scan = part.Scan.new("", (), ("libcuda.so*",))
    theirs = part.Scan.new("/elsewhere", (), ("libcuda.so*",))
    done = wheel_mod.read_part(path, [0, 1])

    assert part._take_early(_answer(pickle.dumps((theirs.params(), [0, 1], done, theirs))), True, scan, [0, 1]) is None
    assert part._take_early(_answer(pickle.dumps((scan.params(), [1], done, scan))), True, scan, [0, 1]) is None
    assert part._take_early(_answer(b"not a pickle"), True, scan, [0, 1]) is None
    used = part._take_early(_answer(pickle.dumps((scan.params(), [0, 1], done, scan))), True, scan, [0, 1])
    assert used is not None and used.read == done.read


def test_a_failed_or_unwanted_child_gives_nothing(tmp_path: Path) -> None:
    scan = part.Scan.new("", (), ())

    def fail() -> bytes:
        raise RuntimeError("the child failed")

    failed = early.fork_call(fail)
    assert failed is not None and part._take_early(failed, True, scan, [0]) is None
    assert part._take_early(_answer(b"x"), False, scan, [0]) is None


def test_the_early_child_s_reader_loads_neither_the_rules_nor_the_cli() -> None:
    probe = "import sys; from kestrel_release.stages.verify import part; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "kestrel_release.stages.verify.part" in loaded
    heavy = {
        "typer",
        "click",
        "rich",
        "packaging.metadata",
        "kestrel_release.stages.verify.rules",
        "kestrel_release.targets",
    }
    assert not heavy & loaded


def test_a_wheel_rebuilt_in_place_then_bumped_is_verified_as_its_new_bytes(tmp_path: Path) -> None:
    """The second run: the same file rebuilt with other bytes (a toolchain change: another payload, a token added),
    then a version bump's new wheel, each verified with the same cache dir; the early child and the verdict cache
    must both see the new bytes and the new version."""
    from tests.factories import make_wheel

    here = tmp_path / "elsewhere"
    here.mkdir()
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}

    def verify(wheel: Path) -> dict:
        done = run_cli(["-v", "verify", "--json", str(wheel)], cwd=here, env=env)
        assert EARLY in done.stderr and TOKEN not in done.output
        return json.loads(done.stdout)["wheels"][0]

    first_wheel = make_wheel(tmp_path / "dist")
    first = verify(first_wheel)
    first_wheel.unlink()
    rebuilt_files = {
        "kestrel_kernels/__init__.py": b'__version__ = "0.1.0"\n',
        "kestrel_kernels/cfg.py": f"T = '{TOKEN}'\n".encode(),
    }
    rebuilt_wheel = make_wheel(tmp_path / "dist", rebuilt_files)
    assert rebuilt_wheel == first_wheel  # the same path, other bytes
    rebuilt = verify(rebuilt_wheel)
    bumped = verify(make_wheel(tmp_path / "dist", version="0.2.0"))

    assert rebuilt["sha256"] == hashlib.sha256(rebuilt_wheel.read_bytes()).hexdigest() != first["sha256"]
    assert ("secret", "kestrel_kernels/cfg.py") in {(f["rule"], f["member"]) for f in rebuilt["findings"]}
    assert not any(f["rule"] == "secret" for f in first["findings"])
    assert (first["version"], rebuilt["version"], bumped["version"]) == ("0.1.0", "0.1.0", "0.2.0")
    assert not any(f["rule"] == "metadata" for f in bumped["findings"])
