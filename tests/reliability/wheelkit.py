"""Hand-made wheels for the reliability suite: valid ones, and hostile variants.

Built with `zipfile` directly (not a build backend) so a test can lie in exactly
one place — a RECORD hash, a member name, a header — and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import zipfile
from pathlib import Path

TAG = "cp312-cp312-manylinux_2_34_x86_64"
INIT = b"__version__ = '0.1.0'\n"  # the default package module


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def dist_files(name: str, version: str, tag: str = TAG, metadata_extra: str = "") -> dict[str, bytes]:
    """The .dist-info members (without RECORD) of a wheel for `name` `version`."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    pure = tag.endswith("-none-any")
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata_extra}"
    wheel = (f"Wheel-Version: 1.0\nGenerator: kestrel-tests\nRoot-Is-Purelib: {'true' if pure else 'false'}\n"
             f"Tag: {tag}\n")
    return {f"{dist}/METADATA": metadata.encode(), f"{dist}/WHEEL": wheel.encode()}


def wheel_bytes(name: str = "kestrel-kernels", version: str = "0.1.0", *, tag: str = TAG,
                files: dict[str, bytes] | None = None, record: bool = True,
                record_overrides: dict[str, str] | None = None, metadata_extra: str = "",
                compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A wheel as bytes. `record_overrides` {member: 'sha256=...,size'} plants RECORD lies."""
    pkg = name.replace("-", "_")
    members = dict(files if files is not None else {f"{pkg}/__init__.py": INIT})
    members.update(dist_files(name, version, tag, metadata_extra))
    dist = f"{pkg}-{version}.dist-info"
    lines = []
    for member, data in members.items():
        lines.append((record_overrides or {}).get(member, f"{member},{_record_hash(data)},{len(data)}"))
    lines.append(f"{dist}/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
        if record:
            zf.writestr(f"{dist}/RECORD", "\n".join(lines) + "\n")
    return buf.getvalue()


def wheel_name(name: str = "kestrel-kernels", version: str = "0.1.0", tag: str = TAG) -> str:
    return f"{name.replace('-', '_')}-{version}-{tag}.whl"


def write_wheel(directory: Path, name: str = "kestrel-kernels", version: str = "0.1.0",
                tag: str = TAG, **kwargs) -> Path:
    """Write a wheel into `directory` under its proper filename; returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / wheel_name(name, version, tag)
    path.write_bytes(wheel_bytes(name, version, tag=tag, **kwargs))
    return path


def raw_zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    """A zip with exactly these entries (duplicates and odd names allowed)."""
    import warnings

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names: that is the point
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for info, data in entries:
                zf.writestr(info, data)
    return buf.getvalue()


def valid_members(name: str = "kestrel-kernels", version: str = "0.1.0", tag: str = TAG) -> list[tuple[str, bytes]]:
    """The members of a valid wheel (RECORD included), for building variants with `raw_zip`."""
    with zipfile.ZipFile(io.BytesIO(wheel_bytes(name, version, tag=tag))) as zf:
        return [(n, zf.read(n)) for n in zf.namelist()]


def _central_entries(data: bytes):
    """(offset, name) of every central directory entry."""
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        yield pos, bytes(data[pos + 46:pos + 46 + name_len])
        pos = data.find(b"PK\x01\x02", pos + 4)


def patch_declared_size(data: bytes, member: str, size: int) -> bytes:
    """Make the central directory lie about `member`'s uncompressed size."""
    out = bytearray(data)
    for pos, name in _central_entries(data):
        if name == member.encode():
            struct.pack_into("<I", out, pos + 24, size)
    return bytes(out)


def corrupt_member_data(data: bytes, member: str) -> bytes:
    """Overwrite the middle of `member`'s compressed bytes with garbage."""
    out = bytearray(data)
    for pos, name in _central_entries(data):
        if name == member.encode():
            csize = struct.unpack_from("<I", data, pos + 20)[0]
            local = struct.unpack_from("<I", data, pos + 42)[0]
            name_len, extra_len = struct.unpack_from("<HH", data, local + 26)
            start = local + 30 + name_len + extra_len
            out[start:start + csize] = bytes([0xFF]) * csize
    return bytes(out)
