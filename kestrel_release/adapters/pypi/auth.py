"""What an index's answer to an upload means (a 401/403 above all), and a credentials check that uploads nothing.

`pypi` imports this module, never the other way round.

PyPI answers a bad token, a username/password (no longer accepted) and a valid token without
permission for the project all with 403, telling them apart only in words; the hint must follow
the cause. When every file is already on the index nothing is uploaded, so `check` sends an
upload request with no file: PyPI/TestPyPI (Warehouse) and pypiserver check the credentials
before the form, answering 401/403 for refused credentials and 400 for the missing file.
A project-scoped token's permission is checked only with a real file: `check` says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlparse

from kestrel_release.errors import PublishError

if TYPE_CHECKING:
    import requests


class Index(Protocol):
    """What these answers need of client.Index (not imported: client imports this module)."""

    @property
    def name(self) -> str: ...
    @property
    def upload_url(self) -> str: ...
    @property
    def pypirc(self) -> dict[str, Any] | None: ...


_NO_PERMISSION = (
    "scoped token",
    "not valid for project",
    "isn't allowed to upload",
    "not allowed to upload",
    "does not have permission",
    "not a maintainer",
    "not an owner",
)
_NO_PASSWORDS = ("username/password authentication is no longer supported", "migrate to api tokens")


def refusal(said_lower: str, said: str, filename: str, index: Index, where: str, user: str | None) -> PublishError:
    """The 401/403 answer to an upload as one line whose hint fits the cause and the credentials' kind."""
    host = urlparse(index.upload_url).netloc.lower()
    pypi_like = host in ("upload.pypi.org", "test.pypi.org")
    token = user == "__token__"
    who = "the API token" if token else f"user {user!r}" if user else "the credentials"
    account = "https://test.pypi.org" if host == "test.pypi.org" else "https://pypi.org"
    if any(n in said_lower for n in _NO_PERMISSION):
        fix = (
            (
                f"create a token scoped to this project (or to all projects) at {account}/manage/account/token/, "
                "or ask an owner to add you as a maintainer"
            )
            if token
            else "ask an owner of the project to add this account as a maintainer"
        )
        return PublishError(f"{who} may not upload {filename} to {where} ({said})", fix)
    if any(n in said_lower for n in _NO_PASSWORDS) or (pypi_like and not token and user):
        return PublishError(
            f"{where} rejected {who}: {index.name} accepts API tokens only ({said})",
            f"create one at {account}/manage/account/token/ and use it with username __token__ "
            "(TWINE_USERNAME=__token__, TWINE_PASSWORD=<pypi-... token>)",
        )
    if token:
        fix = (
            "the token is wrong, revoked or expired, or belongs to another index (TestPyPI and PyPI tokens are "
            f"not interchangeable): create a new one at {account}/manage/account/token/"
            if pypi_like
            else f"the token is wrong, revoked or expired for {host}; check TWINE_PASSWORD, ~/.pypirc or keyring"
        )
        return PublishError(f"{where} rejected {who} ({said})", fix)
    return PublishError(
        f"{where} rejected {who} ({said})",
        "check the username and password for this index (TWINE_USERNAME/TWINE_PASSWORD, ~/.pypirc or keyring)",
    )


class FileExists(PublishError):
    """The index says the filename is taken (same or other bytes: the caller re-reads the index)."""


_SIZE_HINT = (
    "ask the index for a larger per-file limit (PyPI: open a 'file size limit' request at "
    "https://github.com/pypi/support, as kestrel-kernels did in pypi/support#11872), "
    "then raise verify.max_file_size"
)


def explain(status: int, reason: str, text: str, filename: str, index: Index, user: str | None = None) -> PublishError:
    """One line that says what went wrong and what to do, for an upload answer that is not 200.

    401/403: the hint follows the cause the index gave and the kind of credentials sent (`user`):
    a token (`__token__`) that was refused, a username/password PyPI no longer takes, or a
    valid token without permission for this project (the only case a scoped-token hint fits)."""
    detail = reason if reason and reason.lower() not in ("bad request", "forbidden", "unauthorized") else ""
    said = f"HTTP {status}{': ' + detail if detail else ''}"
    where = f"{index.name} ({index.upload_url})"
    if status in (401, 403):
        return refusal(f"{reason} {text}".lower(), said, filename, index, where, user)
    if status == 409 or (status == 400 and "already exist" in f"{reason} {text}".lower()):
        return FileExists(
            f"{filename} already exists on {where} with other bytes ({said})",
            "a filename can never be reused on an index: bump the version and rebuild",
        )
    if status == 413 or "too large" in reason.lower():
        return PublishError(f"{filename} is larger than {where} accepts ({said})", _SIZE_HINT)
    if status in (301, 302, 303, 307, 308):
        return PublishError(
            f"{where} redirects uploads ({said})", "pass the upload URL itself, e.g. https://upload.pypi.org/legacy/"
        )
    return PublishError(
        f"{where} refused {filename} ({said})",
        "kestrel-release verify --target pypi checks PyPI's rules before uploading",
    )


def check(index: Index, credentials: tuple[str, str], timeout: float) -> tuple[bool | None, str]:
    """(True, how) accepted, (None, why) not checked; PublishError (exit 6) when refused."""
    import requests
    from requests_toolbelt import MultipartEncoder

    from kestrel_release.adapters import _deadline

    form = MultipartEncoder([(":action", "file_upload"), ("protocol_version", "1")])

    rc = index.pypirc or {}  # the section's own CA and client certificate, as uploads use them

    def post() -> requests.Response:
        return requests.post(
            index.upload_url,
            data=form,
            auth=credentials,
            allow_redirects=False,
            timeout=timeout,
            headers={"Content-Type": form.content_type},
            verify=rc.get("ca_cert") or True,
            cert=rc.get("client_cert") or None,
        )

    try:
        resp = _deadline.call(post, timeout, f"checking the credentials at {index.upload_url}")
    except (requests.RequestException, _deadline.DeadlineExceeded) as exc:
        return None, f"the index did not answer ({type(exc).__name__})"
    resp.close()
    if resp.status_code in (401, 403):
        raise explain(resp.status_code, resp.reason or "", resp.text[:500], "files", index, credentials[0])
    if resp.status_code in (200, 400):  # the credentials passed; the empty form was refused (400)
        return True, "accepted by an upload request without a file (project permission is checked only with a file)"
    return None, f"the index answered HTTP {resp.status_code} to a request without a file"
