"""Writing the version: tomlkit round-trip, version_files, all-or-nothing, dry run, lock."""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import pytest

from kestrel_release import config, fsutil
from kestrel_release.errors import UsageError
from kestrel_release.stages import version
from tests.factories import VERSION_PYPROJECT, make_version_project, version_snapshot


@pytest.fixture
def cfg(tmp_path: Path):
    return config.load(make_version_project(tmp_path), env={})


def test_roundtrip_changes_only_the_version_line(cfg) -> None:
    result = version.change(cfg, "bump", "minor")
    after = (cfg.project_dir / "pyproject.toml").read_text()
    before_lines, after_lines = VERSION_PYPROJECT.splitlines(True), after.splitlines(True)
    assert len(before_lines) == len(after_lines)
    changed = [(b, a) for b, a in zip(before_lines, after_lines) if b != a]
    assert changed == [("version =    '0.1.0'      # single quotes, kept\n",
                        "version =    '0.2.0'      # single quotes, kept\n")]
    assert (result.old, result.new) == ("0.1.0", "0.2.0")
    assert result.files == ["pyproject.toml", "pkg/__init__.py", "pkg/_meta.py"]
    assert (cfg.project_dir / "pkg/__init__.py").read_text() == '"""demo."""\n__version__ = "0.2.0"\n'
    assert (cfg.project_dir / "pkg/_meta.py").read_text() == "VERSION = '0.2.0'\nOTHER = '9.9.9'\n"


def test_crlf_and_basic_quotes_survive(tmp_path: Path) -> None:
    text = '[project]\r\nname = "demo"\r\nversion = "1.0.0"\r\n# end\r\n'
    (tmp_path / "pyproject.toml").write_bytes(text.encode())
    version.change(config.load(tmp_path, env={}), "set", "1.1.0rc1")
    assert (tmp_path / "pyproject.toml").read_bytes() == text.replace("1.0.0", "1.1.0rc1").encode()


def test_dry_run_writes_nothing_and_shows_every_diff(cfg) -> None:
    before = version_snapshot(cfg.project_dir)
    result = version.change(cfg, "bump", "patch", dry_run=True)
    assert version_snapshot(cfg.project_dir) == before
    assert result.dry_run and result.new == "0.1.1"
    for rel in ("pyproject.toml", "pkg/__init__.py", "pkg/_meta.py"):
        assert f"+++ b/{rel}" in result.diff
    assert "-__version__ = \"0.1.0\"\n+__version__ = \"0.1.1\"" in result.diff


def test_rollback_when_the_second_file_cannot_be_written(cfg, monkeypatch) -> None:
    before = version_snapshot(cfg.project_dir)
    real = fsutil.atomic_write_text
    calls: list[Path] = []

    def flaky(path, text, mode=None):
        calls.append(Path(path))
        if len(calls) == 2:  # root ignores read-only dirs, so inject the failure
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        real(path, text, mode)

    monkeypatch.setattr(fsutil, "atomic_write_text", flaky)
    with pytest.raises(UsageError) as info:
        version.change(cfg, "bump", "major")
    assert "cannot write pkg/__init__.py: Permission denied" in str(info.value)
    assert "the version is still 0.1.0" in str(info.value)
    assert version_snapshot(cfg.project_dir) == before  # pyproject.toml was written, then restored
    assert calls[-1].name == "pyproject.toml"


def test_rollback_error_is_one_line_through_the_cli(cfg, monkeypatch, capsys) -> None:
    from kestrel_release import entry

    def broken(path, text, mode=None):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(fsutil, "atomic_write_text", broken)
    monkeypatch.setattr(sys, "argv", ["kestrel-release", "version", "bump", "patch", "--project", str(cfg.project_dir)])
    before = version_snapshot(cfg.project_dir)
    with pytest.raises(SystemExit) as info:
        entry.main()
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        "error: cannot write pyproject.toml: Read-only file system; restored 0 file(s), the version "
        "is still 0.1.0 — fix the file's permissions and run again"]
    assert "Traceback" not in err and version_snapshot(cfg.project_dir) == before


def test_disagreeing_files_are_named(cfg) -> None:
    (cfg.project_dir / "pkg/_meta.py").write_text("VERSION = '0.0.9'\n")
    with pytest.raises(UsageError, match="pyproject.toml has 0.1.0, pkg/__init__.py has 0.1.0, pkg/_meta.py has 0.0.9"):
        version.change(cfg, "bump", "patch")
    assert "pkg/_meta.py has 0.0.9" in version.show(cfg).warnings[0]
    version.change(cfg, "set", "0.2.0", force=True)  # --force overwrites them all
    assert (cfg.project_dir / "pkg/_meta.py").read_text() == "VERSION = '0.2.0'\n"


def test_pattern_without_match_and_missing_file(cfg) -> None:
    (cfg.project_dir / "pkg/_meta.py").write_text("NOTHING = 1\n")
    with pytest.raises(UsageError, match="pkg/_meta.py has no line matching \"VERSION = '\\{version\\}'\""):
        version.change(cfg, "bump", "patch")
    (cfg.project_dir / "pkg/_meta.py").unlink()
    with pytest.raises(UsageError, match="version file pkg/_meta.py does not exist"):
        version.show(cfg)


def test_show_and_json(cfg) -> None:
    shown = version.show(cfg)
    assert (shown.action, shown.new, shown.warnings) == ("show", "0.1.0", [])
    assert version.change(cfg, "set", "0.1.0", force=True).to_json()["files"] == []
