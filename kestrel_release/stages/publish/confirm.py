"""After an upload, "uploaded" means the index was read back and holds exactly the bytes sent.

An index's 200 proves nothing by itself: pypiserver, devpi and Artifactory store whatever arrives
without comparing the form's sha256, a proxy can drop a body, a lying server can answer 200 and store
nothing. So each uploaded file is looked up on the index's simple page (read again, with backoff, while
it is missing: PyPI's CDN may lag by seconds) and compared with the sha256 of the copy that was sent; a
page that lists no sha256 for it is not taken on trust: the file itself is downloaded and hashed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.retry import RetryPolicy, Transient
from kestrel_release.errors import PublishError
from kestrel_release.ui import console


def confirm(index: pypi.Index, result: Any, policy: RetryPolicy, creds: tuple[str, str] | None) -> None:
    """Move every row of `result.uploaded` the index does not hold with our sha256 to `result.failed`."""
    from packaging.utils import parse_wheel_filename

    if not result.uploaded:
        return
    name = str(parse_wheel_filename(result.uploaded[0]["filename"])[0])
    wanted = {row["filename"] for row in result.uploaded}

    def read() -> dict[str, dict[str, str]]:
        there = pypi.existing_files(index, name, policy, creds)
        missing = sorted(wanted - set(there))
        if missing:  # a lagging listing is read again; one that never lists them is a failure below
            raise Transient(f"{len(missing)} uploaded file(s) not listed yet ({missing[0]})")
        return there

    try:
        there = policy.run(
            read,
            classify=lambda exc: exc if isinstance(exc, Transient) else None,
            warn=lambda failure, attempt, pause: (
                f"reading {index.simple_url} back: {failure}; again in {pause:.1f} s ({attempt}/{policy.retries})"
            ),
            give_up=lambda failure, attempts: _Unconfirmed(failure, attempts),
        )
    except _Unconfirmed:  # what is there now, one last read, to say it file by file
        there = _last_read(index, name, policy, creds)
    except PublishError as exc:
        _fail_all(result, f"the upload was answered but the index could not be read back to confirm it: {exc}")
        return
    confirmed = []
    for row in result.uploaded:
        problem = _compare(index, row, there.get(row["filename"]), policy, creds)
        if problem:
            result.failed.append({"filename": row["filename"], "error": problem})
        else:
            row["url"] = there[row["filename"]]["url"]
            confirmed.append(row)
    result.uploaded[:] = confirmed


class _Unconfirmed(PublishError):
    def __init__(self, failure: str, attempts: int) -> None:
        super().__init__(f"{failure} after {attempts} reads")


def _last_read(
    index: pypi.Index, name: str, policy: RetryPolicy, creds: tuple[str, str] | None
) -> dict[str, dict[str, str]]:
    try:
        return pypi.existing_files(index, name, policy, creds)
    except PublishError:
        return {}


def _fail_all(result: Any, error: str) -> None:
    result.failed.extend({"filename": row["filename"], "error": error} for row in result.uploaded)
    result.uploaded.clear()


def _compare(
    index: pypi.Index, row: dict, found: dict[str, str] | None, policy: RetryPolicy, creds: tuple[str, str] | None
) -> str:
    """'' when the index holds our bytes; else what it holds instead."""
    if found is None:
        return (
            f"the index answered the upload with success but does not list the file at "
            f"{index.simple_url} (read back {policy.retries + 1} times)"
        )
    if found.get("sha256"):
        if found["sha256"] != row["sha256"]:
            return f"the index holds other bytes: its sha256 {found['sha256']}, sent {row['sha256']}"
        return ""
    got = _download_sha256(index, found["url"], row["size"], policy, creds)
    if got != row["sha256"]:
        return f"the index serves other bytes for it: sha256 {got}, sent {row['sha256']}"
    return ""


def _download_sha256(index: pypi.Index, url: str, size: int, policy: RetryPolicy, creds: tuple[str, str] | None) -> str:
    """The file's own sha256, read from where the index's page points (its page lists no hash)."""
    from kestrel_release.files.fsutil import sha256_file

    console.debug(f"{url}: the page lists no sha256; downloading it to compare")
    with tempfile.TemporaryDirectory(prefix="kestrel-readback-") as tmp:
        dest = Path(tmp) / "file"
        try:
            # a little over what was sent: a larger answer is other bytes, and is not read to its end
            pypi.download(url, dest, policy, max_bytes=size + 1, auth=pypi.auth_for(index, url, creds))
        except PublishError as exc:
            return f"(unreadable: {exc})"
        return sha256_file(dest)
