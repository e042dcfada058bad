"""statedir's owned temp dirs: a dead owner's dir is collected by the next one made beside it; a live
owner's, a reused pid's live process, and anything that is not the tool's own (no marker, a symlink, a
name of another shape) are never touched."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from kestrel_release.errors import FilesystemError
from kestrel_release.files import statedir
from kestrel_release.process import reaper


def _dead_pid() -> int:
    """A pid no process has now (counting down from the kernel's limit)."""
    limit = int(Path("/proc/sys/kernel/pid_max").read_text()) if Path("/proc/sys/kernel/pid_max").exists() else 99999
    return next(pid for pid in range(limit - 1, 1, -1) if not Path(f"/proc/{pid}").exists())


def _leftover(folder: Path, owner: str, name: str | None = None, hidden: bool = False) -> Path:
    pid = owner.split()[0]
    path = folder / (name or f"{'.' if hidden else ''}kestrel-pypi-{pid}-abc123")
    path.mkdir(parents=True)
    (path / statedir.OWNER).write_text(owner + "\n")
    (path / "htpasswd").write_text("kestrel:$apr1$secret\n")
    return path


def test_a_dead_owners_dir_is_collected_by_the_next_one_made_there(tmp_path: Path) -> None:
    dead = _leftover(tmp_path, f"{_dead_pid()} 123 {reaper._boot_id()}")
    staging = _leftover(tmp_path, f"{_dead_pid()} 5 ?", name=f".kestrel-staging-{_dead_pid()}-x1y2")
    made = statedir.owned_dir("pypi", tmp_path)
    assert not dead.exists() and not staging.exists()
    assert made.name.startswith(f"kestrel-pypi-{os.getpid()}-")
    assert (made / statedir.OWNER).read_text().split() == reaper.identity().split()
    assert made.stat().st_mode & 0o077 == 0


def test_a_reused_pid_or_another_boot_is_a_dead_owner(tmp_path: Path) -> None:
    me = os.getpid()
    reused = _leftover(tmp_path, f"{me} 1 {reaper._boot_id()}", name=f"kestrel-smoke-{me}-aaa")  # other start time
    rebooted = _leftover(tmp_path, f"{me} {reaper._started(me)} 00000000-dead", name=f"kestrel-gh-{me}-bbb")
    assert sorted(statedir.collect_owned(tmp_path)) == sorted([reused, rebooted])


def test_live_owners_and_the_users_files_are_kept(tmp_path: Path) -> None:
    live = _leftover(tmp_path, reaper.identity())
    dead = str(_dead_pid())
    users = tmp_path / f"kestrel-pypi-{dead}-notes"  # the tool's name shape, but no marker: not ours
    users.mkdir()
    (users / "notes.txt").write_text("mine\n")
    other_pid = _leftover(tmp_path, f"{os.getpid()} 1 ?", name=f"kestrel-pypi-{dead}-zzz")  # marker disagrees
    plain = tmp_path / f"build-{dead}-x"  # another name shape
    plain.mkdir()
    (plain / statedir.OWNER).write_text(f"{dead} 1 ?\n")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / statedir.OWNER).write_text(f"{dead} 1 ?\n")
    link = tmp_path / f"kestrel-pypi-{dead}-link"
    link.symlink_to(target)
    a_file = tmp_path / f"kestrel-pypi-{dead}-file"
    a_file.write_text("x")
    assert statedir.collect_owned(tmp_path) == []
    assert all(p.exists() for p in (live, users, other_pid, plain, target, link, a_file))


def test_an_empty_dir_killed_before_its_marker_is_collected(tmp_path: Path) -> None:
    empty = tmp_path / f"kestrel-pypi-{_dead_pid()}-q1"
    empty.mkdir()
    assert statedir.collect_owned(tmp_path) == [empty] and not empty.exists()


def test_sessions_and_temp_dirs_are_removed_on_exit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    killed = _leftover(tmp_path / "cache" / "sessions", f"{_dead_pid()} 9 ?", name=f"kestrel-github-{_dead_pid()}-s")
    with statedir.session("pypi") as session:
        assert session.parent == tmp_path / "cache" / "sessions" and not killed.exists()
        (session / "password").write_text("secret\n")
    assert list((tmp_path / "cache" / "sessions").iterdir()) == []


# --- an unusable cache dir ----------------------------------------------------------------------------


@pytest.fixture
def no_cache_vars(monkeypatch, tmp_path: Path) -> None:
    for name in ("KESTREL_RELEASE_CACHE_DIR", "XDG_CACHE_HOME", "UV_CACHE_DIR"):
        monkeypatch.setenv(name, "")  # recorded, so the test's own change is undone too
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", "/proc")  # mkdir below it fails with ENOENT
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setattr(statedir, "_temporary", None)


def test_an_unusable_home_is_one_error_naming_the_dir_and_the_variables(no_cache_vars) -> None:
    with pytest.raises(FilesystemError) as refused:
        statedir.cache_dir()
    assert refused.value.exit_code == 2
    assert "/proc/.cache/kestrel-release" in refused.value.message
    assert "KESTREL_RELEASE_CACHE_DIR" in refused.value.hint and "XDG_CACHE_HOME" in refused.value.hint


def test_a_cache_variable_naming_a_file_names_that_variable(no_cache_vars, monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(FilesystemError) as refused:
        statedir.cache_dir()
    assert str(tmp_path / "file") in refused.value.message and "XDG" not in refused.value.hint


def test_printing_commands_get_a_private_temporary_cache(no_cache_vars, tmp_path: Path) -> None:
    statedir.allow_temporary_cache()
    cache = statedir.cache_dir()
    assert cache.parent == tmp_path and cache.name.startswith(f"kestrel-cache-{os.getpid()}-")
    assert os.environ["UV_CACHE_DIR"] == str(cache / "uv")  # uv's own default is under HOME too
