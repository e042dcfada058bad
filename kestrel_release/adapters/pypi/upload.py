"""Uploads to a package index: one POST per attempt through twine's session, with our retry policy and progress.

Why not `twine upload`: see client.py. The upload streams the file in large blocks and hashes what it
sends (HashingReader), so the bytes the index got are the bytes verify checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kestrel_release.adapters.pypi.auth import explain
from kestrel_release.adapters.pypi.client import Index, classify, retry_after, route_twine_logs, with_retries
from kestrel_release.adapters.retry import RetryPolicy, Transient
from kestrel_release.errors import PublishError

if TYPE_CHECKING:
    from requests.adapters import HTTPAdapter
    from twine.package import PackageFile


UPLOAD_BLOCK = 256 * 1024


def large_blocks_adapter(**kwargs: Any) -> HTTPAdapter:  # a class made on first use: requests loads inside the command
    """requests' HTTPAdapter whose connections send bodies UPLOAD_BLOCK bytes per read and socket write:
    urllib3's 16 KiB meant 13,000 reads, progress callbacks and sends per 200 MB release, the tool's
    main CPU cost while uploading on many connections at once."""
    from requests.adapters import HTTPAdapter

    class LargeBlocks(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **pool_kwargs: Any) -> None:
            pool_kwargs.setdefault("blocksize", UPLOAD_BLOCK)
            super().init_poolmanager(*args, **pool_kwargs)

    return LargeBlocks(**kwargs)


class HashingReader:
    """A file object whose reads are hashed: the sha256 of exactly the bytes an upload sent."""

    def __init__(self, raw: IO[bytes]) -> None:
        import hashlib

        self.raw, self._digest = raw, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk = self.raw.read(size)
        self._digest.update(chunk)
        return chunk

    def fileno(self) -> int:  # requests_toolbelt sizes the part from the file's length and position
        return self.raw.fileno()

    def tell(self) -> int:
        return self.raw.tell()

    def hexdigest(self) -> str:
        return self._digest.hexdigest()


class Uploader:
    """Uploads through twine's Repository session: one POST per attempt, our retry policy, a byte callback."""

    def __init__(self, index: Index, credentials: tuple[str, str], policy: RetryPolicy, connections: int = 10) -> None:
        from twine.repository import Repository

        route_twine_logs()
        self.index, self.policy, self.user = index, policy, credentials[0]  # the username is no secret
        self.repo = Repository(index.upload_url, *credentials, disable_progress_bar=True)
        for scheme in ("http://", "https://"):
            # twine's session retries connection errors itself (urllib3 connect=5): ours would multiply it
            # one pooled connection per parallel upload (urllib3 would log "pool is full" past its 10)
            self.repo.session.mount(scheme, large_blocks_adapter(max_retries=0, pool_maxsize=max(10, connections)))
        pypirc = index.pypirc or {}
        self.repo.set_certificate_authority(pypirc.get("ca_cert"))
        self.repo.set_client_certificate(pypirc.get("client_cert"))

    def upload(self, path: Path, on_bytes: Callable[[int, int], None], expect_sha256: str) -> int:
        """Upload one wheel; returns the number of attempts. Refuses bytes other than `expect_sha256`."""
        from twine import exceptions
        from twine.package import PackageFile

        try:
            package = PackageFile.from_filename(str(path), None)
        except exceptions.TwineException as exc:
            raise PublishError(f"{path.name}: twine cannot read it ({exc})", "rebuild the wheel") from None
        if package.sha2_digest != expect_sha256:  # the digest twine sends; the index checks the bytes against it
            raise PublishError(
                f"{path.name} changed after it was verified: sha256 {package.sha2_digest} != verified {expect_sha256}",
                "rebuild and verify again",
            )
        attempts = [0]

        def attempt() -> None:
            attempts[0] += 1
            self._post(package, on_bytes)

        with_retries(attempt, self.policy, f"uploading {path.name}")
        return attempts[0]

    def _post(self, package: PackageFile, on_bytes: Callable[[int, int], None]) -> None:
        import requests
        from requests_toolbelt import MultipartEncoder, MultipartEncoderMonitor

        from kestrel_release.adapters import _deadline

        fields = self.repo._convert_metadata_to_list_of_tuples(package.metadata_dictionary())
        fields += [(":action", "file_upload"), ("protocol_version", "1")]
        size = os.path.getsize(package.filename)
        seconds = _deadline.upload_deadline(self.policy.timeout, size)
        with open(package.filename, "rb") as raw:
            fh = HashingReader(raw)
            fields.append(("content", (package.basefilename, fh, "application/octet-stream")))
            monitor = MultipartEncoderMonitor(MultipartEncoder(fields), lambda m: on_bytes(m.bytes_read, m.len))

            def post() -> requests.Response:
                return self.repo.session.post(
                    self.repo.url,
                    data=monitor,
                    allow_redirects=False,
                    headers={"Content-Type": monitor.content_type},
                    timeout=self.policy.timeout,
                )

            try:
                # On expiry the file is closed under the encoder: the abandoned request stops sending.
                resp = _deadline.call(
                    post,
                    seconds,
                    f"uploading {package.basefilename} to {self.index.upload_url} and waiting for the index's answer",
                    abandon=raw.close,
                )
            except (requests.RequestException, _deadline.DeadlineExceeded, ValueError) as exc:
                raise (
                    classify(exc, self.index.upload_url)
                    or PublishError(f"uploading {package.basefilename} failed: {type(exc).__name__}")
                ) from None
        resp.close()
        if resp.status_code == 200:
            if fh.hexdigest() != package.sha2_digest:  # the form's sha256 must be the one of the bytes sent
                raise PublishError(
                    f"{package.basefilename}: the bytes sent have sha256 {fh.hexdigest()}, not the verified "
                    f"{package.sha2_digest}; the index may now hold other bytes than were verified",
                    "check the index and the disk the tool's cache is on, then publish a new version",
                )
            return
        if resp.status_code == 429 or resp.status_code >= 500:
            raise Transient(f"HTTP {resp.status_code} {resp.reason}", retry_after(resp))
        raise explain(resp.status_code, resp.reason or "", resp.text[:500], package.basefilename, self.index, self.user)

    def close(self) -> None:
        self.repo.close()
