"""The only exceptions the artifact readers raise, on any input whatsoever.

Both are VerifyError (exit 5): a wheel that cannot be read cannot be released.
The verify stage turns them into findings where a wheel is partly readable.
"""

from __future__ import annotations

from kestrel_release.errors import VerifyError


class WheelError(VerifyError):
    """The file is not a readable zip/wheel (truncated, not a zip, unreadable)."""


class CudaFormatError(VerifyError):
    """A CUDA binary (ELF, cubin, fat binary) is malformed or truncated."""
