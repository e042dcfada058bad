"""Writing the version: tomlkit round-trip, version_files, all-or-nothing, dry run, lock."""

from __future__ import annotations

import errno
import re
import sys
from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
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
    changed = [(b, a) for b, a in zip(before_lines, after_lines, strict=False) if b != a]
    assert changed == [
        ("version =    '0.1.0'      # single quotes, kept\n", "version =    '0.2.0'      # single quotes, kept\n")
    ]
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
    assert '-__version__ = "0.1.0"\n+__version__ = "0.1.1"' in result.diff


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
        "is still 0.1.0 — fix the file's permissions and run again"
    ]
    assert "Traceback" not in err and version_snapshot(cfg.project_dir) == before


def test_disagreeing_files_are_named(cfg) -> None:
    (cfg.project_dir / "pkg/_meta.py").write_text("VERSION = '0.0.9'\n")
    with pytest.raises(
        UsageError, match=r"pyproject.toml has 0.1.0, pkg/__init__.py has 0.1.0, pkg/_meta.py has 0.0.9"
    ):
        version.change(cfg, "bump", "patch")
    assert "pkg/_meta.py has 0.0.9" in version.show(cfg).warnings[0]
    version.change(cfg, "set", "0.2.0", force=True)  # --force overwrites them all
    assert (cfg.project_dir / "pkg/_meta.py").read_text() == "VERSION = '0.2.0'\n"


def test_pattern_without_match_and_missing_file(cfg) -> None:
    (cfg.project_dir / "pkg/_meta.py").write_text("NOTHING = 1\n")
    with pytest.raises(UsageError, match=re.escape("pkg/_meta.py has no line matching \"VERSION = '{version}'\"")):
        version.change(cfg, "bump", "patch")
    (cfg.project_dir / "pkg/_meta.py").unlink()
    with pytest.raises(UsageError, match=r"version file pkg/_meta.py does not exist"):
        version.show(cfg)


def test_show_and_json(cfg) -> None:
    shown = version.show(cfg)
    assert (shown.action, shown.new, shown.warnings) == ("show", "0.1.0", [])
    assert version.change(cfg, "set", "0.1.0", force=True).to_json()["files"] == []


# ---------------------------------------------------------------- shapes other than a quoted string
# Each project is shaped like a real sdist: msgpack 1.1.2 (a tuple beside __version__ in one file), bitarray
# 3.12.3 (only a C header), PyWavelets 1.9.0 (meson.build and util/version_utils.py's MAJOR/MINOR/MICRO, which
# upstream left at 1.8.0), a scikit-build-core CMakeLists.txt.

DYNAMIC = (
    '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    '[project]\nname = "{name}"\ndynamic = ["version"]\n[tool.kestrel-release]\nversion_files = [\n{files}]\n'
)


def _project(root: Path, files: dict[str, str], entries: list[tuple[str, str]], static: str | None = None) -> Path:
    lines = "".join(f"  {{ path = {p!r}, pattern = {json_str(pat)} }},\n" for p, pat in entries)
    if static:
        pyproject = (
            f'[project]\nname = "shape"\nversion = "{static}"\n[tool.kestrel-release]\nversion_files = [\n{lines}]\n'
        )
    else:
        pyproject = DYNAMIC.format(name="shape", files=lines)
    (root / "pyproject.toml").write_text(pyproject)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())
    return root


def json_str(text: str) -> str:
    import json

    return json.dumps(text)  # a TOML basic string: "\n" in a pattern stays a newline


MSGPACK_INIT = 'from .ext import ExtType\n\nversion = (1, 1, 2)\n__version__ = "1.1.2"\n'


def test_a_version_tuple_and_a_string_in_one_file_are_bumped_together(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"mp/__init__.py": MSGPACK_INIT},
        [("mp/__init__.py", "version = ({version_tuple})"), ("mp/__init__.py", '__version__ = "{version}"')],
    )
    cfg = config.load(root, env={})
    assert (version.show(cfg).new, version.show(cfg).warnings) == ("1.1.2", [])
    result = version.change(cfg, "bump", "minor")
    assert (result.old, result.new, result.files) == ("1.1.2", "1.2.0", ["mp/__init__.py"])
    assert (root / "mp/__init__.py").read_text() == MSGPACK_INIT.replace("1, 1, 2", "1, 2, 0").replace("1.1.2", "1.2.0")
    # A tuple has no room for rc1: it states the release, and the files still agree.
    version.change(cfg, "set", "1.3.0rc1")
    assert 'version = (1, 3, 0)\n__version__ = "1.3.0rc1"' in (root / "mp/__init__.py").read_text()
    assert version.show(cfg).warnings == [] and version.show(cfg).new == "1.3.0rc1"


def test_a_c_header_define_is_rewritten_as_a_define(tmp_path: Path) -> None:
    header = '/* bitarray */\n#define BITARRAY_VERSION  "3.12.3"\n#define OTHER "9.9.9"\n'
    root = _project(
        tmp_path, {"bitarray/bitarray.h": header}, [("bitarray/bitarray.h", '#define BITARRAY_VERSION  "{version}"')]
    )
    cfg = config.load(root, env={})
    assert version.change(cfg, "bump", "patch").new == "3.12.4"
    assert (root / "bitarray/bitarray.h").read_text() == header.replace("3.12.3", "3.12.4")


VERSION_UTILS = "import os\r\n\r\nMAJOR = 1\r\nMINOR = 8\r\nMICRO = 0\r\nISRELEASED = True\r\n"
MESON = "project(\n  'PyWavelets',\n  'c', 'cython',\n  version: '1.9.0',\n  meson_version: '>= 1.1.0',\n)\n"


def test_files_that_disagree_are_warned_one_line_each_and_force_rewrites_every_shape(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "meson.build": MESON,
            "util/version_utils.py": VERSION_UTILS,
            "CMakeLists.txt": "project(shape VERSION 1.9.0 LANGUAGES C)\n",
        },
        [
            ("meson.build", "version: '{version}'"),
            ("util/version_utils.py", "MAJOR = {major}\nMINOR = {minor}\nMICRO = {micro}"),
            ("CMakeLists.txt", "project(shape VERSION {release}"),
        ],
        static="1.9.0",
    )
    cfg = config.load(root, env={})
    shown = version.show(cfg)
    assert shown.new == "1.9.0"
    assert shown.warnings == ["versions disagree: util/version_utils.py has 1.8.0, pyproject.toml has 1.9.0"]
    with pytest.raises(UsageError, match=r"util/version_utils.py has 1.8.0"):
        version.change(cfg, "bump", "patch")
    result = version.change(cfg, "set", "2.0.0rc1", force=True)
    assert result.files == ["pyproject.toml", "meson.build", "util/version_utils.py", "CMakeLists.txt"]
    assert (root / "meson.build").read_text() == MESON.replace("1.9.0", "2.0.0rc1")
    # CRLF kept, the numbers of the release written (MICRO has no room for rc1)
    assert (root / "util/version_utils.py").read_bytes() == VERSION_UTILS.replace("MAJOR = 1", "MAJOR = 2").replace(
        "MINOR = 8", "MINOR = 0"
    ).encode()
    assert (root / "CMakeLists.txt").read_text() == "project(shape VERSION 2.0.0 LANGUAGES C)\n"
    assert version.show(config.load(root, env={})).warnings == []


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("__version__ = 'x'", "has no {version}"),
        ("{major}.{version}", "mixes"),
        ("MINOR = {minor}", "without {major}"),
    ],
)
def test_a_pattern_without_a_usable_placeholder_is_a_config_error(tmp_path: Path, pattern: str, why: str) -> None:
    root = _project(tmp_path, {"a.py": ""}, [("a.py", pattern)], static="1.0")
    with pytest.raises(config.ConfigError, match=re.escape(why)):
        config.load(root, env={})


DEFINES = (
    "#pragma once\n#define DEMO_VERSION_MAJOR 0\n/* bumped by the release script */\n"
    "#define DEMO_VERSION_MINOR 1\n#define DEMO_HAS_CUDA 1\n#define DEMO_VERSION_PATCH 10\n"
)


@pytest.mark.parametrize("static", [None, "0.1.10"])
def test_a_version_spread_over_three_defines_is_three_entries_read_and_bumped_together(tmp_path, static) -> None:
    entries = [  # listed in any order, with other lines between them in the file
        ("include/demo.h", "#define DEMO_VERSION_MINOR {minor}"),
        ("include/demo.h", "#define DEMO_VERSION_MAJOR {major}"),
        ("include/demo.h", "#define DEMO_VERSION_PATCH {micro}"),
    ]
    root = _project(tmp_path, {"include/demo.h": DEFINES}, entries, static=static)
    cfg = config.load(root, env={})
    shown = version.show(cfg)
    assert (shown.new, shown.warnings) == ("0.1.10", [])
    result = version.change(cfg, "bump", "minor")
    assert result.new == "0.2.0" and "include/demo.h" in result.files
    expected = DEFINES.replace("MINOR 1", "MINOR 2").replace("PATCH 10", "PATCH 0")
    assert (root / "include/demo.h").read_text() == expected


def test_a_define_entry_without_its_major_names_the_entries_that_move_together(tmp_path) -> None:
    entries = [
        ("include/demo.h", "#define DEMO_VERSION_MINOR {minor}"),
        ("include/demo.h", "#define DEMO_VERSION_PATCH {micro}"),
    ]
    root = _project(tmp_path, {"include/demo.h": DEFINES}, entries, static="0.1.10")
    with pytest.raises(config.ConfigError) as err:
        config.load(root, env={})
    text = str(err.value)
    assert "entries of include/demo.h have {minor}/{micro} without {major}" in text
    assert "one multi-line pattern" in text and "#define V_MAJOR {major}" in text
