"""Hostile and broken wheels through `kestrel-release verify`, as a user runs it.

Each case must end in its documented finding (exit 5, the rule in --json) or in
one clear `error:` line with the documented exit code; never a traceback, never
a hang, and nothing is written anywhere (the manifest is only touched on success).
"""

from __future__ import annotations

import json
import os
import struct
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import assert_one_line_error, run_cli

PYPROJECT = """[project]
name = "kestrel-kernels"
version = "0.1.0"

[tool.kestrel-release]
python = ["3.12"]
out_dir = "dist"
"""
NAME = factories.wheel_name()
DIST = "kestrel_kernels-0.1.0.dist-info"


def _with(extra: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    return factories.raw_zip(factories.valid_members() + extra)


def _symlink() -> bytes:
    info = zipfile.ZipInfo("kestrel_kernels/passwd")
    info.external_attr = 0o120777 << 16  # S_IFLNK
    return _with([(info, b"/etc/passwd")])


def _utf8_flag_on_latin1_name() -> bytes:
    # The UTF-8 flag (bit 11) set on a name that is not UTF-8: zipfile cannot decode it.
    data = bytearray(_with([("kestrel_kernels/caf\u00e9.py", b"")]))
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        start = 0
        while (pos := data.find(sig, start)) != -1:
            name_off, flag_off = (30, 6) if sig == b"PK\x03\x04" else (46, 8)
            name_len = struct.unpack_from("<H", data, pos + (26 if sig == b"PK\x03\x04" else 28))[0]
            name = bytes(data[pos + name_off : pos + name_off + name_len])
            if name.endswith("é.py".encode()):
                data[pos + name_off : pos + name_off + name_len] = name.replace("é".encode(), b"\xe9\xff")
                struct.pack_into("<H", data, pos + flag_off, struct.unpack_from("<H", data, pos + flag_off)[0] | 0x800)
            start = pos + 4
    return bytes(data)


def _lying_size() -> bytes:
    # A member whose central directory declares 10 bytes but inflates to 1 MiB.
    blob = "kestrel_kernels/blob.bin"
    return factories.patch_declared_size(_with([(blob, b"\0" * (1 << 20))]), blob, 10)


def _bomb() -> bytes:
    # A real bomb: 80 MiB of zeros, deflated to ~80 KiB (PyPI refuses > 64 MiB at ratio > 50).
    return factories.wheel_bytes(files={"kestrel_kernels/zeros.bin": b"\0" * (80 << 20)})


def _bzip2() -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
        for name, data in factories.valid_members():
            zf.writestr(name, data)
    return buf.getvalue()


def _encrypted() -> bytes:
    data = bytearray(factories.wheel_bytes())
    for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = data.find(sig)
        struct.pack_into("<H", data, pos + off, struct.unpack_from("<H", data, pos + off)[0] | 0x1)
    return bytes(data)


def _future_zip_version() -> bytes:
    # "Version needed to extract" 8.4 in the central directory: zipfile raises NotImplementedError.
    data = bytearray(factories.wheel_bytes())
    struct.pack_into("<H", data, data.find(b"PK\x01\x02") + 6, 84)
    return bytes(data)


_VALID = factories.wheel_bytes()
_REC_PKG = "kestrel_kernels/__init__.py"

# case -> (bytes of the file named NAME, the finding rule verify must report)
CORPUS: dict[str, tuple[Callable[[], bytes], str]] = {
    "empty-file": (lambda: b"", "zip-format"),
    "not-a-zip": (lambda: b"#!/bin/sh\nrm -rf /\n", "zip-format"),
    "truncated-half": (lambda: _VALID[: len(_VALID) // 2], "zip-format"),
    "truncated-last-byte": (lambda: _VALID[:-1], "zip-format"),
    "corrupt-central-directory": (lambda: _VALID.replace(b"PK\x01\x02", b"PK\xff\xff", 1), "zip-format"),
    "end-record-points-past-eof": (lambda: _VALID[:-6] + b"\xff\xff\xff\x7f" + _VALID[-2:], "zip-format"),
    "corrupt-deflate-data": (lambda: factories.corrupt_member_data(_VALID, _REC_PKG), "zip-format"),
    "path-traversal": (lambda: _with([("../../evil.py", b"x = 1\n")]), "unsafe-path"),
    "absolute-path": (lambda: _with([("/etc/cron.d/evil", b"* * * * * root sh\n")]), "unsafe-path"),
    "windows-drive": (lambda: _with([("C:/Windows/evil.dll", b"MZ")]), "unsafe-path"),
    "symlink-member": (_symlink, "unsafe-path"),
    "duplicate-names": (lambda: _with([(_REC_PKG, b"import os; os.system('evil')\n")]), "unsafe-path"),
    "zip-bomb": (_bomb, "zip-bomb"),
    "member-lies-about-size": (_lying_size, "zip-bomb"),
    "bzip2-members": (_bzip2, "zip-format"),
    "encrypted-member": (_encrypted, "zip-format"),
    "future-zip-version": (_future_zip_version, "zip-format"),  # found by the fuzz test
    "non-utf8-name": (_utf8_flag_on_latin1_name, "zip-format"),
    "record-hash-lie": (
        lambda: factories.wheel_bytes(
            record_overrides={_REC_PKG: f"{_REC_PKG},sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,22"}
        ),
        "record-mismatch",
    ),
    "record-size-lie": (
        lambda: factories.wheel_bytes(
            record_overrides={_REC_PKG: f"{_REC_PKG},{factories.record_hash(factories.INIT)},9999"}
        ),
        "record-mismatch",
    ),
    "member-added-after-build": (lambda: _with([("kestrel_kernels/backdoor.py", b"evil()\n")]), "record-mismatch"),
    "record-lists-missing-file": (
        lambda: factories.wheel_bytes(
            record_overrides={_REC_PKG: f"{_REC_PKG},sha256=x,1\nkestrel_kernels/ghost.py,sha256=x,1"}
        ),
        "record-mismatch",
    ),
    "no-record": (lambda: factories.wheel_bytes(record=False), "metadata"),
    "record-not-utf8": (
        lambda: factories.raw_zip(
            [m for m in factories.valid_members() if not m[0].endswith("RECORD")]
            + [(f"{DIST}/RECORD", b"\xff\xfe\x00bad")]
        ),
        "record-mismatch",
    ),
    "metadata-name-mismatch": (
        lambda: factories.raw_zip(
            [(n, d.replace(b"Name: kestrel-kernels", b"Name: other-pkg")) for n, d in factories.valid_members()]
        ),
        "metadata",
    ),
    "metadata-bad-version": (
        lambda: factories.raw_zip(
            [(n, d.replace(b"Metadata-Version: 2.1", b"Metadata-Version: 9.9")) for n, d in factories.valid_members()]
        ),
        "metadata",
    ),
    "wheel-tag-mismatch": (
        lambda: factories.raw_zip(
            [(n, d.replace(b"manylinux_2_34_x86_64", b"win_amd64")) for n, d in factories.valid_members()]
        ),
        "wheel-tags",
    ),
    "two-dist-infos": (
        lambda: _with([("other-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: other\n")]),
        "metadata",
    ),
    "secret-file": (lambda: _with([("kestrel_kernels/.pypirc", b"[pypi]\npassword = x\n")]), "secret"),
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "dist").mkdir()
    return tmp_path


def _listing(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime) for p in sorted(root.rglob("*"))}


def _verify_json(project: Path, *args: str):
    result = run_cli(["verify", "--json", "--project", str(project), *args], cwd=project, timeout=120)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_hostile_wheel_gives_its_finding_and_exit_5(project: Path, case: str) -> None:
    make, rule = CORPUS[case]
    (project / "dist" / NAME).write_bytes(make())
    before = _listing(project)
    start = time.monotonic()
    result, report = _verify_json(project)
    assert time.monotonic() - start < 60, "verify took too long on a hostile wheel"
    assert_one_line_error(result, 5, "verify found")
    assert report is not None and report["ok"] is False
    rules = {f["rule"] for w in report["wheels"] for f in w["findings"] if f["severity"] == "error"}
    assert rule in rules, (rule, report["wheels"][0]["findings"])
    assert _listing(project) == before  # nothing written, nothing extracted


def test_the_valid_wheel_passes(project: Path) -> None:
    """The corpus above differs from this one in one place each: prove the baseline is clean."""
    (project / "dist" / NAME).write_bytes(_VALID)
    result, report = _verify_json(project)
    assert result.code == 0, result.output
    assert report["ok"] is True and report["wheels"][0]["findings"] == []


def test_huge_metadata_is_read_in_bounded_time(project: Path) -> None:
    description = "Description-Content-Type: text/plain\n\n" + ("lorem ipsum " * (2 << 20))  # 24 MiB
    (project / "dist" / NAME).write_bytes(factories.wheel_bytes(metadata_extra=description))
    start = time.monotonic()
    result, report = _verify_json(project)
    assert time.monotonic() - start < 60
    assert result.code in (0, 5) and "Traceback" not in result.output, result.output
    assert report is not None and report["wheels"][0]["name"] == "kestrel-kernels"


@pytest.mark.parametrize(
    ("name", "version", "needle"),
    [
        ("evil-pkg", "0.1.0", "verify found"),
        ("kestrel-kernels", "6.6.6", "METADATA says Version 6.6.6, but the release is 0.1.0"),
    ],
)
def test_wheel_for_the_wrong_package_or_version_is_refused(project: Path, name: str, version: str, needle: str) -> None:
    factories.write_wheel(project / "dist", name=name, version=version)
    result, _report = _verify_json(project)
    assert_one_line_error(result, 5, needle)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: (d / "kestrel_kernels-0.1.0.tar.gz").write_bytes(b"x"), "is an sdist"),
        (lambda d: (d / "notes.txt").write_text("x"), "is not a wheel"),
        (lambda d: (d / "empty-dir").mkdir(), "no wheels in"),
        (lambda d: None, "does not exist"),
    ],
)
def test_bad_paths_are_usage_errors(project: Path, make, needle: str) -> None:
    target = project / "input"
    target.mkdir()
    make(target)
    arg = next(iter(sorted(target.iterdir())), target / "missing.whl")
    result, _ = _verify_json(project, str(arg))
    assert_one_line_error(result, 2, needle)


def test_a_fifo_named_like_a_wheel_is_refused_not_waited_on(project: Path) -> None:
    fifo = project / "dist" / NAME
    os.mkfifo(fifo)
    try:
        result = run_cli(["verify", "--project", str(project)], cwd=project, timeout=20)
    except Exception as exc:  # subprocess.TimeoutExpired: the hang itself
        pytest.fail(f"verify hung on a FIFO: {type(exc).__name__}")
    assert_one_line_error(result, 2, NAME)
