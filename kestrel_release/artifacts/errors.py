"""The only exceptions the artifact readers raise, on any input whatsoever.

Both are VerifyError (exit 5): a wheel that cannot be read cannot be released.
The verify stage turns them into findings where a wheel is partly readable.
"""

from __future__ import annotations

import struct
import zipfile

from kestrel_release.errors import VerifyError

# What zipfile raises on a damaged or hostile archive while opening it or listing its members (a
# zip version it does not know is NotImplementedError, a size field past sys.maxsize OverflowError).
# OSError is left out: where the file itself cannot be read, the caller says so in its own words.
UNREADABLE_ZIP: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    ValueError,
    EOFError,
    NotImplementedError,
    OverflowError,
    RuntimeError,
    struct.error,
)


class WheelError(VerifyError):
    """The file is not a readable zip/wheel (truncated, not a zip, unreadable)."""


class CudaFormatError(VerifyError):
    """A CUDA binary (ELF, cubin, fat binary) is malformed or truncated."""
