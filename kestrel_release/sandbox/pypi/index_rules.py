"""The strict sandbox's side of PyPI's 2025-2026 rules: which refusal PyPI would answer a new
file with, and the release's files and upload times as PyPI's JSON API serves them.

The wheel rules are artifacts/pypi_rules.py, the same functions verify and build run. A
release's creation time is the oldest modification time of its files in the packages
directory (pypiserver keeps no upload log), so a test ages a release with os.utime.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from kestrel_release.artifacts import pypi_rules

__all__ = ["refusal", "release_json", "release_of"]


def release_of(filename: str) -> tuple[str, str] | None:
    """(name, version) of a wheel or sdist filename as packaging parses it; None for any other name."""
    from packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )

    try:
        if filename.endswith(".whl"):
            name, version, _build, _tags = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return str(name), str(version)


def _files(root: Path, release: tuple[str, str]) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".") and release_of(p.name) == release
    )


def _uploaded(path: Path) -> dt.datetime:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)


def refusal(filename: str, data: bytes, root: Path) -> str | None:
    """PyPI's 400 reason for a new file (identical re-uploads are answered before this), or None.
    Order as Warehouse's: metadata, then the release's age, then the archive and wheel rules."""
    violations = pypi_rules.check_wheel(filename, data) if filename.endswith(".whl") else []
    metadata = [v for v in violations if v.rule == "pypi-metadata"]
    if metadata:
        return metadata[0].message
    release = release_of(filename)
    existing = _files(root, release) if release else []
    age = pypi_rules.release_age(min(map(_uploaded, existing)) if existing else None)
    if age is not None:
        return age.message
    return violations[0].message if violations else None


def release_json(root: Path, name: str, version: str) -> dict | None:
    """/pypi/<name>/<version>/json as PyPI shapes it (the fields release tools read); None: 404."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    try:
        release = (str(canonicalize_name(name)), str(Version(version)))
    except InvalidVersion:
        return None
    files = _files(root, release)
    if not files:
        return None
    urls = [
        {
            "filename": p.name,
            "size": p.stat().st_size,
            "packagetype": "bdist_wheel" if p.suffix == ".whl" else "sdist",
            "digests": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()},
            "upload_time_iso_8601": _uploaded(p).isoformat().replace("+00:00", "Z"),
        }
        for p in files
    ]
    return {"info": {"name": name, "version": version}, "urls": urls}
