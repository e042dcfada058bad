"""Upload-body handling of the strict sandbox: whole bodies only, digests checked, files stored atomically.

PyPI never keeps a file from a cut upload: it refuses a body shorter than its
Content-Length and bytes that do not match the form's digest, and a file appears
whole or not at all. pypiserver does none of this (a client killed mid-body left a
truncated wheel that blocked every re-run), so the strict front does it here.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

PARTIAL_PREFIX = ".kestrel-partial-"  # pypiserver lists no dot-files, so a temp file is never served
_SPOOL_IN_MEMORY = 16 * 1024 * 1024
DIGEST_MISMATCH = "The digest supplied does not match a digest calculated from the uploaded file."


class BodyRefused(Exception):
    """The upload body is unusable; the message is the HTTP 400 reason."""


def spool(environ: dict) -> None:
    """Read the whole request body now; BodyRefused when it is shorter than Content-Length.

    The parsed form downstream then reads from the spooled copy, so nothing is stored
    from a body the client did not finish sending.
    """
    try:
        expected = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise BodyRefused("Invalid Content-Length.") from None
    stream: BinaryIO = environ["wsgi.input"]
    copy = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 - lives on as wsgi.input
    got = 0
    while got < expected:
        try:
            chunk = stream.read(min(1024 * 1024, expected - got))
        except OSError:
            chunk = b""
        if not chunk:
            copy.close()
            raise BodyRefused(f"Incomplete request body: received {got} of {expected} bytes.")
        copy.write(chunk)
        got += len(chunk)
    copy.seek(0)
    environ["wsgi.input"] = copy


def check_digest(forms: Mapping[str, str], data: bytes) -> None:  # forms: bottle's FormsDict
    """PyPI's check of the form's sha256_digest (and blake2_256 / md5 when given) against the bytes."""
    given: dict[str, Callable[[bytes], Any]] = {
        "sha256_digest": hashlib.sha256,
        "md5_digest": hashlib.md5,
        "blake2_256_digest": lambda b: hashlib.blake2b(b, digest_size=32),
    }
    for field, algo in given.items():
        value = (forms.get(field) or "").strip().lower()
        if value and algo(data).hexdigest() != value:
            raise BodyRefused(DIGEST_MISMATCH)


def write_atomic(fh: BinaryIO, destination: os.PathLike) -> None:
    """pypiserver's write_file, made atomic: temp file beside the target, fsync, rename; removed on failure."""
    dest = Path(destination)
    fd, tmp = tempfile.mkstemp(prefix=PARTIAL_PREFIX + dest.name + ".", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := fh.read(1024 * 1024):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def install_atomic_writes() -> None:
    """Route pypiserver's package writes through write_atomic (its backends call backend.write_file)."""
    from pypiserver import backend

    backend.write_file = write_atomic


def sweep_partials(root: Path) -> None:
    """Remove temp files of writes that a killed server never finished (only ours, by prefix)."""
    for path in root.rglob(PARTIAL_PREFIX + "*"):
        try:
            path.unlink()
        except OSError:
            pass


def remove_file(root: Path, filename: str) -> bool:
    """Delete one stored package by filename (the client repairs a damaged copy of its own upload)."""
    if not filename or "/" in filename or filename.startswith("."):
        return False
    target = root / filename
    if not target.is_file():
        return False
    target.unlink()
    return True
