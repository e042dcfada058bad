"""Every failure's advice, followed literally once the cause is fixed, completes the release.

Before: after a smoke-test failure `--resume` repeated it, `--resume --force` stopped on "already on testpypi with
other bytes — bump the version", and in a rehearsal only deleting `dist-all.rehearsal` got out; a failed build
said "run release --resume", which without the run's other options is refused. Each test here breaks a tiny C
extension (mini-ext) in one way, runs the release, fixes the source, commits, and runs the command the error's
hint names (from `--json`'s error object), as written.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import C_EXT_SOURCE, make_c_ext_project
from tests.helpers import run_in_process

pytestmark = pytest.mark.slow

BROKEN_INIT = C_EXT_SOURCE.replace(
    "{ return PyModule_Create(&mod); }", '{ PyErr_SetString(PyExc_ImportError, "kernel table missing"); return NULL; }'
)
FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True
    )


def _project(tmp_path: Path, c_source: str) -> Path:
    root = make_c_ext_project(tmp_path / "mini")
    (root / "src" / "c.c").write_text(c_source)
    init = root / "src" / "mini_ext" / "__init__.py"
    init.write_text(init.read_text() + "from mini_ext import _c\n")  # the import the smoke test makes
    (root / ".gitignore").write_text("/dist-all*/\n/build/\n*.egg-info/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "mini-ext")
    return root


def _fix(root: Path, path: str, text: str) -> None:
    (root / path).write_text(text)
    _git(root, "commit", "-qam", "fix")


def _advice(result) -> list[str]:
    """The command in the failure's hint: `kestrel-release release ...` up to its end or a remark in brackets."""
    hint = json.loads(result.stdout)["error"]["hint"] or ""
    assert "kestrel-release release " in hint, hint
    text = hint[hint.index("kestrel-release release ") :].split(" (", 1)[0]
    args = shlex.split(text)
    assert args[:2] == ["kestrel-release", "release"], args
    return args[1:]


def _version(result) -> str:
    return json.loads(result.stdout)["version"]


def _error(result) -> dict:
    return json.loads(result.stdout)["error"]


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), **FAST}


def test_smoke_failure_of_a_real_release_then_the_advice_releases_a_new_version(tmp_path, env):
    root = _project(tmp_path, BROKEN_INIT)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        env = {
            **env,
            "TWINE_REPOSITORY_URL": box.upload_url,
            "TWINE_USERNAME": box.username,
            "TWINE_PASSWORD": box.password,
        }
        failed = run_in_process(
            ["release", "--project", str(root), "--targets", "testpypi", "--yes", "--json"], env=env
        )
        assert failed.code == 6, failed.output
        error = _error(failed)
        assert "`import mini_ext` fails: ImportError: kernel table missing" in error["message"], error
        assert "can never be replaced" in error["hint"] and "--resume" not in error["hint"], error
        _fix(root, "src/c.c", C_EXT_SOURCE)
        done = run_in_process([*_advice(failed), "--json"], env=env)
        assert done.code == 0, done.output
        assert _version(done) == "0.1.1"
        assert sorted(f.split("-")[1] for f in box.files()) == ["0.1.0", "0.1.1"]


def test_resume_force_after_a_smoke_failure_gets_advice_that_works(tmp_path, env):
    """The circle of old: --resume --force rebuilt onto an index holding other bytes of the version."""
    root = _project(tmp_path, BROKEN_INIT)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        env = {
            **env,
            "TWINE_REPOSITORY_URL": box.upload_url,
            "TWINE_USERNAME": box.username,
            "TWINE_PASSWORD": box.password,
        }
        base = ["release", "--project", str(root), "--targets", "testpypi", "--python", "3.12", "--yes", "--json"]
        assert run_in_process(base, env=env).code == 6
        _fix(root, "src/c.c", C_EXT_SOURCE)
        conflict = run_in_process([*base, "--resume", "--force"], env=env)
        assert conflict.code == 6, conflict.output
        assert "with other bytes" in _error(conflict)["message"]
        done = run_in_process([*_advice(conflict), "--json"], env=env)
        assert done.code == 0, done.output
        assert _version(done) == "0.1.1"


def test_smoke_failure_of_a_rehearsal_then_the_advice_and_resume_force_both_work(tmp_path, env):
    root = _project(tmp_path, BROKEN_INIT)
    base = ["release", "--project", str(root), "--rehearse", "--targets", "testpypi,pypi", "--python", "3.12", "--json"]
    failed = run_in_process(base, env=env)
    assert failed.code == 6, failed.output
    assert "start a new rehearsal" in _error(failed)["hint"], _error(failed)
    rejected = json.loads((root / "dist-all" / ".release-state.json").read_text())["artifacts"]
    cached = [p for p in (tmp_path / "cache" / "wheels").glob("*/*.whl")] if (tmp_path / "cache").is_dir() else []
    import hashlib

    assert not {hashlib.sha256(p.read_bytes()).hexdigest() for p in cached} & set(rejected.values()), (
        "the rejected wheel stays in the wheel cache"
    )
    _fix(root, "src/c.c", C_EXT_SOURCE)
    # What a user tries first: rebuild and go on. The rehearsal's stand-ins hold only its own uploads: emptied.
    resumed = run_in_process([*base, "--resume", "--force"], env=env)
    assert resumed.code == 0, resumed.output
    # And the advice itself, from the same failure again.
    _fix(root, "src/c.c", BROKEN_INIT)
    again = run_in_process(base, env=env)
    assert again.code == 6, again.output
    _fix(root, "src/c.c", C_EXT_SOURCE)
    done = run_in_process([*_advice(again), "--json"], env=env)
    assert done.code == 0, done.output


def test_a_failed_build_then_the_advice_resumes(tmp_path, env):
    root = _project(tmp_path, C_EXT_SOURCE.replace("PyMODINIT_FUNC", "PyMODINIT_FUNC this is not C"))
    failed = run_in_process(
        [
            "release",
            "--project",
            str(root),
            "--rehearse",
            "--targets",
            "testpypi,pypi",
            "--python",
            "3.12",
            "--bump",
            "patch",
            "--json",
        ],
        env=env,
    )
    assert failed.code == 4, failed.output
    args = _advice(failed)
    assert "--resume" in args and "--rehearse" in args and "--bump" in args, args
    _fix(root, "src/c.c", C_EXT_SOURCE)
    done = run_in_process([*args, "--json"], env=env)
    assert done.code == 0, done.output
    assert _version(done) == "0.1.1"


def test_a_failed_verify_then_the_advice_rebuilds(tmp_path, env):
    root = _project(tmp_path, C_EXT_SOURCE)
    (root / "src" / "mini_ext" / "kernel.cu").write_text("// a source the wheel must not ship\n")
    (root / "setup.py").write_text(
        (root / "setup.py").read_text().replace("setup(", 'setup(package_data={"mini_ext": ["*.cu"]}, ')
    )
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "ships a .cu")
    failed = run_in_process(
        ["release", "--project", str(root), "--rehearse", "--targets", "testpypi,pypi", "--python", "3.12", "--json"],
        env=env,
    )
    assert failed.code == 5, failed.output
    args = _advice(failed)
    assert args[-2:] == ["--resume", "--force"], args
    (root / "src" / "mini_ext" / "kernel.cu").unlink()
    _git(root, "commit", "-qam", "no .cu")
    done = run_in_process([*args, "--json"], env=env)
    assert done.code == 0, done.output
