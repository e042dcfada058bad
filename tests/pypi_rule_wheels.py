"""Wheels that break one of PyPI's 2025-2026 upload rules each, made the way real tools make them.

Each case is (make() -> (filename, bytes), rule id, PyPI's words). The bytes come from Python's
zipfile (writing to a stream that cannot seek, appending, a member comment, duplicate writes as
hatch's force-include does) or from patching the bytes of a valid wheel (an edited local header,
a non-UTF-8 name, a multi-disk EOCD, a ZIP64 end record, a tar header in front). Everything
else in the wheel is valid, RECORD included, so the one rule is what fails.
"""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import tarfile
import warnings
import zipfile

NAME, VERSION, TAG = "kestrel-kernels", "0.1.0", "py3-none-any"
PKG = "kestrel_kernels"
DIST = f"{PKG}-{VERSION}.dist-info"
FILENAME = f"{PKG}-{VERSION}-{TAG}.whl"
INIT = b"__version__ = '0.1.0'\n"
ZIP = "Invalid distribution file. ZIP archive not accepted: "
STAMP = (2020, 1, 1, 0, 0, 0)


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def members(
    metadata: str = "",
    metadata_version: str = "2.4",
    files: dict[str, bytes] | None = None,
    dist: str | None = None,
    version: str = VERSION,
    tags: tuple[str, ...] = (TAG,),
) -> dict[str, bytes]:
    """A wheel's members, RECORD last and correct."""
    dist = dist or f"{PKG}-{version}.dist-info"
    out = dict(files if files is not None else {f"{PKG}/__init__.py": INIT})
    out[f"{dist}/METADATA"] = (
        f"Metadata-Version: {metadata_version}\nName: {NAME}\nVersion: {version}\n{metadata}".encode()
    )
    tag_lines = "".join(f"Tag: {t}\n" for t in tags)
    out[f"{dist}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: kestrel-tests\nRoot-Is-Purelib: true\n{tag_lines}".encode()
    record = "".join(f"{m},{_hash(d)},{len(d)}\n" for m, d in out.items()) + f"{dist}/RECORD,,\n"
    out[f"{dist}/RECORD"] = record.encode()
    return out


def zip_bytes(entries, *, stream: bool = False, comment_on: str | None = None, archive_comment: bytes = b"") -> bytes:
    """Zip `entries` ({name: data} or [(name, data)]) with zipfile, into a seekable buffer or,
    with stream=True, into a pipe-like writer (zipfile then writes data descriptors)."""
    items = entries.items() if isinstance(entries, dict) else entries
    sink = _Pipe() if stream else io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": the point of that case
        with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in items:
                info = zipfile.ZipInfo(name, STAMP)
                info.compress_type = zipfile.ZIP_DEFLATED
                if name == comment_on:
                    info.comment = b"built by kestrel-tests"
                zf.writestr(info, data)
            zf.comment = archive_comment  # the EOCD comment, as `zipfile` writes it
    return bytes(sink.data) if stream else sink.getvalue()


class _Pipe(io.RawIOBase):
    """A write-only stream without seek/tell, like stdout or a socket."""

    def __init__(self) -> None:
        self.data = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.data += b
        return len(b)


def valid() -> bytes:
    return zip_bytes(members())


def _local_headers(data: bytes):
    pos = data.find(b"PK\x03\x04")
    while pos != -1:
        name_len = struct.unpack_from("<H", data, pos + 26)[0]
        yield pos, data[pos + 30 : pos + 30 + name_len]
        pos = data.find(b"PK\x03\x04", pos + 4)


def _central_headers(data: bytes):
    pos = data.find(b"PK\x01\x02")
    while pos != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        yield pos, data[pos + 46 : pos + 46 + name_len]
        pos = data.find(b"PK\x01\x02", pos + 4)


def edit_local_size(data: bytes, member: str, delta: int = 1) -> bytes:
    """Add `delta` to `member`'s compressed size in its local header only (a hand-edited header)."""
    out = bytearray(data)
    for pos, name in _local_headers(data):
        if name == member.encode():
            size = struct.unpack_from("<I", out, pos + 18)[0]
            struct.pack_into("<I", out, pos + 18, size + delta)
    return bytes(out)


def rename_bytes(data: bytes, old: bytes, new: bytes) -> bytes:
    """Replace a member name's bytes (same length) in its local and central headers."""
    assert len(old) == len(new)
    out = bytearray(data)
    for pos, name in [*_local_headers(data), *_central_headers(data)]:
        if name == old:
            start = pos + (30 if data[pos + 2 : pos + 4] == b"\x03\x04" else 46)
            out[start : start + len(new)] = new
    return bytes(out)


def multi_disk(data: bytes) -> bytes:
    """The EOCD of a spanned archive: this disk holds fewer records than the whole archive."""
    out = bytearray(data)
    eocd = data.rfind(b"PK\x05\x06")
    total = struct.unpack_from("<H", data, eocd + 10)[0]
    struct.pack_into("<HHH", out, eocd + 4, 1, 0, total - 1)
    return bytes(out)


def zip64_extensible(data: bytes) -> bytes:
    """Insert a ZIP64 end record (and its locator) that declares 4 bytes of extensible data."""
    eocd = data.rfind(b"PK\x05\x06")
    entries, cd_size, cd_offset = struct.unpack_from("<HLL", data, eocd + 10)
    record = struct.pack("<4sQHHLLQQQQ", b"PK\x06\x06", 44 + 4, 45, 45, 0, 0, entries, entries, cd_size, cd_offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, eocd, 1)
    return data[:eocd] + record + locator + data[eocd:]


def tar_polyglot(data: bytes) -> bytes:
    """A tar archive's header block in front of the zip (zip readers find the zip from its end)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("README")
        info.size = 0
        tar.addfile(info)
    return buf.getvalue()[:512] + data


def _with_metadata(metadata: str, version: str = "2.4") -> bytes:
    return zip_bytes(members(metadata, metadata_version=version))


def _with_files(extra: dict[str, bytes]) -> bytes:
    return zip_bytes(members(files={f"{PKG}/__init__.py": INIT, **extra}))


def _duplicate() -> bytes:
    entries = list(members().items())
    return zip_bytes(
        [
            *entries[:1],
            *entries,
        ]
    )  # force-include writes the same path twice


_DIRECT = "torch @ https://download.pytorch.org/whl/cu124/torch-2.5.0-cp312-cp312-linux_x86_64.whl"
_ODD = f"{PKG}/cafX.py"
_OLD_LICENSE = "License :: OSI Approved :: Intel Open Source License"

CASES = {
    "data-descriptor": (lambda: zip_bytes(members(), stream=True), "pypi-zip", ZIP + "ZIP contains a data descriptor"),
    "trailing-byte": (lambda: valid() + b"\n", "pypi-zip", ZIP + "Trailing data"),
    "member-comment": (
        lambda: zip_bytes(members(), comment_on=f"{PKG}/__init__.py"),
        "pypi-zip",
        ZIP + "Comment in central directory",
    ),
    "archive-comment": (
        lambda: zip_bytes(members(), archive_comment=b"built by kestrel-tests"),
        "pypi-zip",
        ZIP + "Trailing data",
    ),
    "edited-local-header": (
        lambda: edit_local_size(valid(), f"{PKG}/__init__.py"),
        "pypi-zip",
        ZIP + "Mis-matched data size",
    ),
    "duplicate-entries": (_duplicate, "pypi-zip", ZIP + "Duplicate filename in local headers"),
    "non-utf8-name": (
        lambda: rename_bytes(
            zip_bytes(members(files={f"{PKG}/__init__.py": INIT, _ODD: b""})),
            _ODD.encode(),
            _ODD.encode().replace(b"X", b"\xe9"),
        ),
        "pypi-zip",
        ZIP + "Filename not unicode",
    ),
    "unprintable-name": (
        lambda: _with_files({f"{PKG}/a\x01.py": b""}),
        "pypi-zip",
        ZIP + "Invalid character in filename",
    ),
    "zip64-extensible-data": (lambda: zip64_extensible(valid()), "pypi-zip", ZIP + "ZIP64 extensible data not allowed"),
    "multi-disk": (lambda: multi_disk(valid()), "pypi-zip", ZIP + "Malformed zip file"),
    "tar-polyglot": (
        lambda: tar_polyglot(valid()),
        "pypi-zip",
        "Invalid distribution file. File is both a zip and a tar file",
    ),
    "license-and-expression": (
        lambda: _with_metadata("License: MIT\nLicense-Expression: MIT\n"),
        "pypi-metadata",
        ("License is deprecated when License-Expression is present. Only License-Expression should be present."),
    ),
    "missing-license-file": (
        lambda: _with_metadata("License-Expression: MIT\nLicense-File: LICENSE\n"),
        "pypi-license-file",
        (f"License-File LICENSE does not exist in distribution file {FILENAME} at {DIST}/licenses/LICENSE"),
    ),
    "bad-entry-points": (
        lambda: zip_bytes(
            members(files={f"{PKG}/__init__.py": INIT, f"{DIST}/entry_points.txt": b"[console_scripts]\nkk\n"})
        ),
        "pypi-entry-points",
        f"Wheel '{FILENAME}' has invalid entry points defined in the entry_points.txt file",
    ),
    "direct-url-requirement": (
        lambda: _with_metadata(f"Requires-Dist: {_DIRECT}\n"),
        "pypi-metadata",
        f"Can't have direct dependency: {_DIRECT}",
    ),
    "metadata-version-2.6": (
        lambda: _with_metadata("", version="2.6"),
        "pypi-metadata",
        "'2.6' is not a valid metadata version",
    ),
    "deprecated-license-classifier": (
        lambda: _with_metadata(f"Classifier: {_OLD_LICENSE}\n"),
        "pypi-metadata",
        f"The classifier {_OLD_LICENSE!r} has been deprecated.",
    ),
    "pyarmor": (
        lambda: _with_files(
            {
                f"{PKG}/core.py": b"from .pyarmor_runtime import __pyarmor__\n"
                b"__pyarmor__(__name__, __file__, b'PY000000\\x00\\x03')\n"
            }
        ),
        "pypi-encrypted",
        "PyArmor-encrypted content is not allowed.",
    ),
}

UNNORMALIZED = "Kestrel.Kernels-0.1.0-py3-none-any.whl"


def unnormalized() -> tuple[str, bytes]:
    """An old setuptools-style wheel: filename and .dist-info keep the project's spelling."""
    return UNNORMALIZED, zip_bytes(members(dist="Kestrel.Kernels-0.1.0.dist-info"))


UNNORMALIZED_WORDS = (
    f"Filename '{UNNORMALIZED}' should contain the normalized project name 'kestrel_kernels', not 'Kestrel.Kernels'."
)
