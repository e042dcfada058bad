"""What an upload sends and what GitHub says it got: an upload is judged by the bytes sent.

The file may change between verify and upload (another process, a symlink); the body hashes
exactly the bytes handed to http.client, and `check` compares them with the verified sha256 and
with GitHub's answer (state, size, digest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

from kestrel_release.adapters.github.models import Asset
from kestrel_release.errors import PublishError
from kestrel_release.ui import console


class SendingReader:
    """The upload body: reads at most `size` bytes of the file, reports them for progress bars,
    and hashes exactly the bytes handed to http.client, so the upload is judged by what was sent
    (the file may change between verify and upload)."""

    def __init__(self, fh: BinaryIO, size: int, advance: Callable[[int], None] | None) -> None:
        import hashlib

        self._fh, self._size, self._advance = fh, size, advance
        self.sent = 0
        self.hash = hashlib.sha256()

    def __len__(self) -> int:  # lets requests send Content-Length instead of chunking
        return self._size

    def read(self, n: int = -1) -> bytes:
        left = self._size - self.sent
        data = self._fh.read(left if n is None or n < 0 else min(n, left)) if left > 0 else b""
        self.sent += len(data)
        self.hash.update(data)
        if data and self._advance:
            self._advance(len(data))
        return data

    def sha256(self) -> str:
        return self.hash.hexdigest()


def check(
    reader: SendingReader, answer: Asset, shown: str, sha256: str, size: int, discard: Callable[[Asset], None]
) -> None:
    """The bytes sent are the verified ones, and GitHub's answer describes those bytes."""
    sent = reader.sha256()
    if reader.sent != size or sent != sha256:
        discard(answer)
        raise changed(shown, f"the bytes sent have sha256 {sent[:16]}..., the verified file {sha256[:16]}...")
    if not answer.same_bytes(size, sent, need_digest=False):
        discard(answer)
        raise PublishError(
            f"GitHub holds other bytes for {shown} than were sent: it reports {answer.describe()}, "
            f"{size} bytes sha256:{sent[:16]}... were sent; that asset was removed and nothing was made public",
            "run the same command again",
        )
    if answer.digest is None:
        console.debug(f"{shown}: GitHub gave no digest; confirmed by size only")


def changed(shown: str, how: str) -> PublishError:
    return PublishError(
        f"{shown} changed after it was verified ({how}); nothing was made public",
        "restore or rebuild the verified file, then publish again (publish verifies it again)",
    )
