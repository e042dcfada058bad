"""The tool removes or replaces only what it wrote: output folders, refused targets, OS failures.

Before: `build --out DIR` replaced DIR wholesale (every other file in it gone), `--out .` deleted
the project and its .git, a read-only or full output was "internal error" (exit 1), and a
symlinked pyproject.toml became a plain file on `version bump`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import assert_one_line_error, run_cli

ENV = {"SOURCE_DATE_EPOCH": "1700000000"}


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` with its content hash (dirs and links marked): "nothing touched"."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _git_project(tmp_path: Path) -> Path:
    """A git work tree with the project one level down (kernels/ of a repository)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("user file\n")
    return factories.make_c_ext_project(repo / "kernels")


# --- refused output directories ------------------------------------------------------------------


@pytest.mark.parametrize("out", [".", "..", "../..", "~", "HOME", "HOME_PARENT"])
def test_build_refuses_an_output_dir_holding_the_users_files(tmp_path: Path, out: str) -> None:
    project = _git_project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    (home / "precious.txt").write_text("keep me\n")
    before = snapshot(tmp_path)
    flag = {"HOME_PARENT": str(home.parent), "HOME": str(home)}.get(out, out)
    result = run_cli(
        ["build", "--project", ".", "--no-gpu-check", "--out", flag], cwd=project, env={**ENV, "HOME": str(home)}
    )
    assert_one_line_error(result, 2, "refusing to use")
    assert snapshot(tmp_path) == before  # not a file created, moved or deleted anywhere


def test_configured_out_dir_dot_and_a_symlink_to_the_project_are_refused(tmp_path: Path) -> None:
    project = _git_project(tmp_path)
    text = (project / "pyproject.toml").read_text().replace('out_dir = "dist-all"', 'out_dir = "."')
    (project / "pyproject.toml").write_text(text)
    before = snapshot(tmp_path)
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=ENV)
    assert_one_line_error(result, 2, "refusing to use", "project directory")
    (tmp_path / "alias").symlink_to(tmp_path / "repo")  # a link to the git work tree root
    before = snapshot(tmp_path)
    result = run_cli(["build", "--project", str(project), "--no-gpu-check", "--out", str(tmp_path / "alias")], env=ENV)
    assert_one_line_error(result, 2, "refusing to use", "git work tree")
    assert snapshot(tmp_path) == before


def test_release_and_sandbox_refuse_the_same_places(tmp_path: Path) -> None:
    project = _git_project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    before = snapshot(tmp_path)
    release = run_cli(
        ["release", "--project", ".", "--rehearse", "--yes", "--targets", "github"],
        cwd=project,
        env={"HOME": str(home), "KESTREL_RELEASE_OUT_DIR": ".."},
    )
    assert_one_line_error(release, 2, "refusing to use")
    sandbox = run_cli(["sandbox", "pypi", "--dir", str(home)], env={"HOME": str(home)}, timeout=60)
    assert_one_line_error(sandbox, 2, "refusing to use", "home directory")
    assert snapshot(tmp_path) == before


def test_a_rehearsal_dir_the_tool_did_not_make_is_never_emptied(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    mine = project / "dist-all.rehearsal"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's\n")
    result = run_cli(
        ["release", "--project", str(project), "--rehearse", "--yes", "--targets", "github", "--no-gpu-check"],
        env=ENV,
        timeout=300,
    )
    assert_one_line_error(result, 2, "not made by a rehearsal")
    assert (mine / "notes.txt").read_text() == "the user's\n"


# --- a shared wheelhouse ---------------------------------------------------------------------------


def _wheelhouse(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    house = tmp_path / "wheelhouse"
    factories.write_wheel(house, "other-project", "2.0.0")
    factories.write_wheel(house, "mini-ext", "0.0.9")  # an older version of this very project
    (house / "README.txt").write_text("my wheelhouse\n")
    (house / "sub").mkdir()
    (house / "sub" / "data.bin").write_bytes(os.urandom(64))
    return house, snapshot(house)


@pytest.mark.slow
def test_build_into_a_shared_wheelhouse_keeps_everything_else(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    house, theirs = _wheelhouse(tmp_path)
    args = ["build", "--project", str(project), "--no-gpu-check", "--out", str(house)]
    first = run_cli(args, env=ENV, timeout=600)
    assert first.code == 0, first.output
    now = snapshot(house)
    assert {k: now.get(k) for k in theirs} == theirs  # every file that was there is byte-identical
    data = json.loads((house / "release-manifest.json").read_text())
    ours = {w["filename"] for w in data["wheels"]}
    assert ours and all(name.startswith("mini_ext-0.1.0-") for name in ours)
    sums = {line.split("  ")[1] for line in (house / "SHA256SUMS").read_text().splitlines()}
    assert sums == ours
    # A rebuild of changed sources replaces only its own wheel; verify looks at the build's wheels only.
    (project / "src" / "c.c").write_text(factories.C_EXT_SOURCE + "/* v2 */\n")
    again = run_cli(args, env=ENV, timeout=600)
    assert again.code == 0, again.output
    now = snapshot(house)
    assert {k: now.get(k) for k in theirs} == theirs
    checked = run_cli(["verify", "--project", str(project), "--json"], env={"KESTREL_RELEASE_OUT_DIR": str(house)})
    assert checked.code == 0, checked.output
    assert {Path(w["path"]).name for w in json.loads(checked.stdout)["wheels"]} == ours


@pytest.mark.slow
def test_a_users_file_with_the_name_of_an_output_is_not_overwritten(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    house = tmp_path / "wheelhouse"
    house.mkdir()
    (house / "SHA256SUMS").write_text("the user's own checksums\n")
    before = snapshot(house)
    result = run_cli(["build", "--project", str(project), "--no-gpu-check", "--out", str(house)], env=ENV, timeout=600)
    assert_one_line_error(result, 2, "SHA256SUMS", "did not write")
    assert snapshot(house) == before


# --- OS-level failures -----------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(where: Path, options: str):
    """A tmpfs mounted at `where` (root only); skips the test when mounting is not possible."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=False, capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def _read_only(where: Path):
    """`where` read-only: a read-only tmpfs as root (root ignores modes), else mode 0555."""
    if os.geteuid() == 0:
        with _tmpfs(where, "ro,size=64k") as path:
            yield path
        return
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o555)
    try:
        yield where
    finally:
        where.chmod(0o755)


@pytest.mark.slow
def test_read_only_output_location_is_one_line(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    with _read_only(tmp_path / "ro") as ro:
        result = run_cli(
            ["build", "--project", str(project), "--no-gpu-check", "--out", str(ro / "dist")], env=ENV, timeout=600
        )
        assert_one_line_error(result, 2, "cannot write")
        assert "internal error" not in result.output


def test_read_only_project_on_version_bump_is_one_line(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "mnt", "size=1m") as mnt:
        project = factories.make_c_ext_project(mnt / "p")
        before = snapshot(project)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        result = run_cli(["version", "bump", "patch", "--project", str(project)])
        assert_one_line_error(result, 2)
        assert "internal error" not in result.output
        assert snapshot(project) == before


@pytest.mark.slow
def test_a_full_disk_under_the_output_is_one_line_and_keeps_the_users_files(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    with _tmpfs(tmp_path / "small", "size=8k") as small:
        (small / "keep.txt").write_text("the user's\n")
        result = run_cli(
            ["build", "--project", str(project), "--no-gpu-check", "--out", str(small)], env=ENV, timeout=600
        )
        assert_one_line_error(result, 2, "cannot write", "disk is full")
        assert (small / "keep.txt").read_text() == "the user's\n"
        leftovers = [p.name for p in small.iterdir() if p.name != "keep.txt" and ".kestrel-install" not in p.name]
        assert not [n for n in leftovers if n.endswith(".tmp")], leftovers


# --- symlinks are written through ------------------------------------------------------------------


def test_version_bump_writes_through_symlinked_files(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    shared = tmp_path / "shared"
    shared.mkdir()
    # pyproject.toml links out of the project; the version file links to another file inside it
    # (a version file resolving outside the project is refused by design).
    links = {
        "pyproject.toml": shared / "pyproject.toml",
        "src/mini_ext/__init__.py": project / "src" / "version_real.py",
    }
    for rel, target in links.items():
        os.replace(project / rel, target)
        (project / rel).symlink_to(target)
    result = run_cli(["version", "bump", "patch", "--project", str(project)])
    assert result.code == 0, result.output
    for rel, target in links.items():
        assert (project / rel).is_symlink(), rel  # the link stays a link
        assert "0.1.1" in target.read_text() and "0.1.0" not in target.read_text()  # its target changed
    assert not [p for p in [*shared.iterdir(), *(project / "src").iterdir()] if p.name.startswith(".")]


# --- leftovers of killed runs are collected; the user's look-alikes are not -------------------------


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_leftovers_of_a_dead_run_are_collected_and_nothing_else(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    dead, alive = _dead_pid(), os.getpid()
    debris = [
        project / f".pyproject.toml.kestrel-{dead}.x1y2.tmp",
        project / "src" / "mini_ext" / f".__init__.py.kestrel-{dead}.abcd.tmp",
    ]
    kept = [
        project / f".pyproject.toml.kestrel-{alive}.live.tmp",  # a live writer's: not ours to take
        project / ".pyproject.toml.notes.tmp",
        project / ".kestrel-staging-notes",
    ]
    for path in debris + kept:
        path.write_text("x")
    result = run_cli(["version", "bump", "patch", "--project", str(project)])
    assert result.code == 0, result.output
    assert not [p for p in debris if p.exists()]
    assert all(p.exists() for p in kept)


@pytest.mark.slow
def test_build_collects_a_dead_runs_staging_and_swap_dirs(tmp_path: Path) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    dead = _dead_pid()
    debris = [project / f".kestrel-staging-{dead}-q1w2", project / f".dist-all.old-{dead}"]
    user = [project / ".kestrel-staging-mine", project / f".other.old-{dead}"]
    for path in debris + user:
        path.mkdir()
        (path / "f").write_text("x")
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=ENV, timeout=600)
    assert result.code == 0, result.output
    assert not [p for p in debris if p.exists()]
    assert all((p / "f").exists() for p in user)
