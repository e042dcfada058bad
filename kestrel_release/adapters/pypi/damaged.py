"""A damaged copy of our own upload on an index: recognise it, and repair it where the index allows.

A cut upload used to leave a truncated file on the sandbox (pypiserver stored whatever
part of the body arrived); every re-run then saw "same filename, other bytes" and told
the user to bump the version. A real index (PyPI, TestPyPI) never keeps a partial
file, so this only concerns local indexes. The proof that the file is ours: it is
shorter than the local file and its bytes are exactly the local file's first bytes.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urljoin

from kestrel_release.adapters import _deadline
from kestrel_release.errors import PublishError
from kestrel_release.ui import console


def _same_host(a: str, b: str) -> bool:
    from kestrel_release.adapters.pypi.client import origin

    return origin(a) == origin(b)  # scheme, host and port: a credential's origin


def truncated_copy_of(
    local: Path, url: str, upload_url: str, auth: tuple[str, str] | None, timeout: float
) -> int | None:
    """Size of the index's copy when it is a strict prefix of `local`'s bytes, else None."""
    import requests

    size = local.stat().st_size

    def fetch() -> bytes | None:
        send = auth if auth and _same_host(url, upload_url) else None  # credentials stay on their host
        with requests.get(url, auth=send, timeout=timeout, stream=True) as resp:
            if resp.status_code != 200:
                return None
            data = resp.raw.read(size, decode_content=True)  # more than the local size cannot be a prefix
            return data

    try:
        data = _deadline.call(fetch, _deadline.upload_deadline(timeout, size), f"downloading {url} to compare")
    except (requests.RequestException, _deadline.DeadlineExceeded, OSError):
        return None
    if data is None or len(data) >= size:
        return None
    with open(local, "rb") as fh:
        return len(data) if fh.read(len(data)) == data else None


def repair(
    filename: str,
    local: Path,
    there: dict[str, str],
    upload_url: str,
    index_name: str,
    auth: tuple[str, str] | None,
    timeout: float,
) -> bool:
    """True when the index held a truncated copy of `local` and it was removed (kestrel sandbox).

    False when the copy is not a truncated copy of ours (the caller reports the conflict);
    PublishError with what to do when it is ours but this index cannot remove it.
    """
    import requests

    got = truncated_copy_of(local, there.get("url", ""), upload_url, auth, timeout)
    if got is None:
        return False
    what = (
        f"{filename} on {index_name} is a truncated copy of the local file ({got} of "
        f"{local.stat().st_size} bytes): an interrupted upload left it"
    )
    if not auth:  # --dry-run: change nothing, say what the real run will do
        console.warn(f"{what}; publish without --dry-run removes it from a sandbox and uploads the file again")
        return True
    remove = urljoin(upload_url, "/_sandbox/files/" + quote(filename))
    try:  # the whole request within publish.timeout, as every other one
        resp = _deadline.call(
            lambda: requests.delete(remove, auth=auth, timeout=timeout), timeout, f"removing {filename} from the index"
        )
    except (requests.RequestException, _deadline.DeadlineExceeded):
        resp = None
    if resp is not None and resp.status_code == 200:
        console.warn(f"{what}; removed it from the sandbox, uploading the whole file again")
        return True
    raise PublishError(
        what + "; this index keeps partial files (PyPI and TestPyPI never do)",
        f"delete {filename} on the index with its admin tools, then re-run: the version can stay",
    )
