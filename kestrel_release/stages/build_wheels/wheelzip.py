"""Byte-reproducible wheels: normalise zip metadata, and compare two builds.

The member bytes (and so RECORD's hashes) are never changed; only what zip adds
around them: timestamps (SOURCE_DATE_EPOCH), order (sorted, .dist-info last,
RECORD at the very end), and host-dependent header fields.
"""

from __future__ import annotations

import os
import time
import zipfile
from pathlib import Path

from kestrel_release.errors import BuildError

ZIP_EPOCH = 315532800  # 1980-01-01, the earliest date a zip can hold


def _order(name: str) -> tuple[int, str]:
    info = ".dist-info/" in name
    return (2 if info and name.endswith("/RECORD") else 1 if info else 0, name)


def normalize(wheel: Path, source_date_epoch: int) -> Path:
    """Rewrite `wheel` in place with fixed timestamps and order; returns its path."""
    stamp = time.gmtime(max(source_date_epoch, ZIP_EPOCH))[:6]
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in sorted(src.infolist(), key=lambda i: _order(i.filename)):
            if info.is_dir():
                continue  # wheels need no directory entries; tools disagree on adding them
            mode = (info.external_attr >> 16) & 0o777 or 0o644
            out = zipfile.ZipInfo(info.filename, date_time=stamp)
            out.external_attr = (0o100000 | (0o755 if mode & 0o111 else 0o644)) << 16
            out.create_system = 3  # unix, whatever the host
            out.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(out, src.read(info), compresslevel=6)
    os.replace(tmp, wheel)
    return wheel


def first_difference(a: Path, b: Path) -> str:
    """The first member (or zip field) where two wheels differ."""
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        ia, ib = za.infolist(), zb.infolist()
        for x, y in zip(ia, ib, strict=False):  # the wheels may differ in member count
            if x.filename != y.filename:
                return f"member order ({x.filename} vs {y.filename})"
            if za.read(x) != zb.read(y):
                return x.filename
            if (x.date_time, x.external_attr, x.compress_type) != (y.date_time, y.external_attr, y.compress_type):
                return f"{x.filename} (zip metadata)"
        if len(ia) != len(ib):
            return "member count"
    return "zip container bytes"


def assert_identical(first: dict[str, Path], second: dict[str, Path]) -> None:
    """BuildError (exit 4) naming every wheel whose two builds differ."""
    diffs = []
    for py in sorted(first):
        a, b = first[py], second[py]
        if a.name != b.name:
            diffs.append(f"{a.name} vs {b.name} (filename)")
        elif a.read_bytes() != b.read_bytes():
            diffs.append(f"{a.name}: first difference in {first_difference(a, b)}")
    if diffs:
        raise BuildError(
            f"not reproducible: {'; '.join(diffs)}",
            "check SOURCE_DATE_EPOCH and the build for embedded paths or timestamps",
        )


def only_wheel(out_dir: Path, python: str, producer: str) -> Path:
    """The one wheel `producer` (the build frontend, a repair tool) wrote into `out_dir` for `python`."""
    wheels = sorted(out_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"{producer} wrote {len(wheels)} wheels for Python {python} (expected 1)")
    return wheels[0]
