"""The only code that talks to package indexes: twine for uploads, the simple API for reads.

Why not `twine upload`: it re-sends a failed POST up to five times with no pause
(and urllib3 retries connection errors underneath), refuses --skip-existing on
anything but PyPI, and prints its own bar to stdout. We use twine's pieces
(credential resolution, PackageFile metadata, its Repository session) and own the
single POST per attempt, the retry policy and the progress.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlparse

from kestrel_release.adapters.pypi.auth import FileExists as FileExists
from kestrel_release.adapters.pypi.auth import explain as explain
from kestrel_release.adapters.retry import RetryPolicy, Transient
from kestrel_release.errors import PublishError
from kestrel_release.ui import console

if TYPE_CHECKING:
    import requests

PYPIRC = "~/.pypirc"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
# One project's simple page (PEP 503 or 691): PyPI's largest are a few MiB. Also a bound on parse time:
# html.parser takes tens of seconds for 16 MiB of anchors on a busy machine.
SIMPLE_MAX = 16 * 1024 * 1024
_KNOWN_SIMPLE = {"upload.pypi.org": "https://pypi.org/simple/", "test.pypi.org": "https://test.pypi.org/simple/"}


@dataclass(frozen=True)
class Index:
    name: str
    upload_url: str
    simple_url: str
    pypirc: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    source: str = ""  # where upload_url came from, for the plan
    url_auth: tuple[str, str] | None = field(default=None, compare=False, repr=False)  # user:pw@ in the URL


def simple_url_for(upload_url: str) -> str:
    """Best guess of the simple index beside an upload URL (PyPI's /legacy/ -> /simple/)."""
    parsed = urlparse(upload_url)
    if parsed.netloc in _KNOWN_SIMPLE:
        return _KNOWN_SIMPLE[parsed.netloc]
    if parsed.path.rstrip("/").endswith("/legacy"):
        return upload_url.rstrip("/")[: -len("legacy")] + "simple/"
    return urljoin(upload_url if upload_url.endswith("/") else upload_url + "/", "simple/")


class _Links(HTMLParser):
    """PEP 503 page: <a href="...#sha256=HEX">FILENAME</a>."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self._href: str | None = None
        self.files: dict[str, dict[str, str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            url, _, fragment = self._href.partition("#")
            digest = fragment[len("sha256=") :] if fragment.startswith("sha256=") else ""
            self.files[data.strip()] = {"sha256": digest, "url": urljoin(self.base, url)}
            self._href = None


def parse_simple(body: bytes, content_type: str, base: str) -> dict[str, dict[str, str]]:
    """filename -> {sha256, url} from a PEP 691 JSON or PEP 503 HTML project page."""
    from kestrel_release.files import safejson

    if "json" in content_type:
        try:
            data = safejson.loads(body, "the page", max_bytes=SIMPLE_MAX)
            return {
                f["filename"]: {"sha256": f.get("hashes", {}).get("sha256", ""), "url": urljoin(base, f["url"])}
                for f in data.get("files", [])
            }
        except safejson.Unusable as exc:  # too deep, too large, not JSON: said as it is
            raise PublishError(
                f"{base} answered with a malformed PEP 691 page: {exc}",
                "check that the simple index URL points at a package index",
            ) from None
        except (KeyError, TypeError, AttributeError) as exc:
            raise PublishError(
                f"{base} answered with a malformed PEP 691 page ({type(exc).__name__})",
                "check that the simple index URL points at a package index",
            ) from None
    links = _Links(base)
    links.feed(body.decode("utf-8", "replace"))
    return links.files


def with_retries(fn: Callable[[], Any], policy: RetryPolicy, what: str) -> Any:
    """Call fn, retrying Transient failures with exponential backoff; PublishError when exhausted."""
    return policy.run(
        fn,
        classify=lambda exc: exc if isinstance(exc, Transient) else None,
        warn=lambda failure, attempt, pause: f"{what}: {failure}; retry {attempt}/{policy.retries} in {pause:.1f} s",
        give_up=lambda failure, attempts: PublishError(
            f"{what}: {failure} (gave up after {attempts} attempts)",
            "the index or network is failing; re-run later: finished files are skipped",
        ),
    )


_TLS_HINT = (
    "the server's certificate is not trusted here; if the index uses a private CA, point "
    "REQUESTS_CA_BUNDLE (or SSL_CERT_FILE) at its CA bundle, or set ca_cert in ~/.pypirc"
)


def classify(exc: BaseException, url: str = "") -> Transient | PublishError | None:
    import requests

    from kestrel_release.adapters._deadline import DeadlineExceeded

    if isinstance(exc, requests.exceptions.SSLError):  # retrying cannot fix a certificate
        return PublishError(f"TLS certificate check failed for {urlparse(url).netloc or url}", _TLS_HINT)
    if isinstance(exc, DeadlineExceeded):
        return Transient(str(exc))
    if isinstance(exc, (requests.ConnectionError, requests.Timeout)):
        return Transient(f"connection failed ({type(exc).__name__})")
    return None


def existing_files(
    index: Index, project: str, policy: RetryPolicy, auth: tuple[str, str] | None = None
) -> dict[str, dict[str, str]]:
    """What the index already holds for `project` (empty when the project does not exist yet)."""
    from packaging.utils import canonicalize_name

    url = urljoin(index.simple_url, canonicalize_name(project) + "/")
    send_auth = auth_for(index, url, auth)
    return with_retries(lambda: _read_page(url, policy, send_auth), policy, f"reading {url}")


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in: what a credential is bound to."""
    parts = urlparse(url)
    try:
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a port that is not a number: an origin of its own, matching nothing
        port = -1
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def auth_for(index: Index, url: str, auth: tuple[str, str] | None) -> tuple[str, str] | None:
    """`auth` when `url` is on the origin of the index's upload URL (the origin the credentials were
    given for: same scheme, host and port), else None: a page or file elsewhere is read without them."""
    if not auth:
        return None
    if origin(url) == origin(index.upload_url):
        return auth
    console.debug(f"{url} is not on {index.upload_url}'s origin: read without the upload's credentials")
    return None


def _read_page(url: str, policy: RetryPolicy, send_auth: tuple[str, str] | None) -> dict[str, dict[str, str]]:
    """filename -> {sha256, url} of one project page; {} on 404; Transient or PublishError otherwise."""
    import requests

    from kestrel_release.adapters import _deadline
    from kestrel_release.files import safejson

    opened: list[requests.Response] = []

    def fetch() -> tuple[
        requests.Response, bytes
    ]:  # the whole answer, body included, within one deadline; a bounded body
        resp = requests.get(url, headers={"Accept": JSON_ACCEPT}, auth=send_auth, timeout=policy.timeout, stream=True)
        opened.append(resp)
        with resp:
            return resp, safejson.read_body(resp, f"the index's page {url}", max_bytes=SIMPLE_MAX)

    def abandon() -> None:  # the worker's socket is shut down under it: its read ends now
        for resp in opened:
            _deadline.sever(resp)

    try:
        resp, body = _deadline.call(fetch, policy.timeout, f"waiting for the index's file list at {url}", abandon)
    except safejson.Unusable as exc:
        raise PublishError(str(exc), "check that the simple index URL points at a package index") from None
    except (requests.RequestException, _deadline.DeadlineExceeded) as exc:
        raise (classify(exc, url) or PublishError(f"reading {url} failed: {type(exc).__name__}")) from None
    if resp.status_code == 404:
        return {}
    if resp.status_code == 429 or resp.status_code >= 500:
        raise Transient(f"HTTP {resp.status_code}", retry_after(resp))
    if resp.status_code != 200:
        raise PublishError(
            f"reading {url} failed: HTTP {resp.status_code} {resp.reason}",
            "check the simple index URL and the credentials",
        )
    return parse_simple(body, resp.headers.get("Content-Type", ""), url)


def project_page(url: str, policy: RetryPolicy) -> dict[str, dict[str, str]]:
    """filename -> {sha256, url} of the PEP 503/691 project page at `url` (no credentials sent)."""
    return with_retries(lambda: _read_page(url, policy, None), policy, f"reading {url}")


def download(
    url: str,
    dest: Path,
    policy: RetryPolicy,
    *,
    max_bytes: int,
    sha256: str = "",
    auth: tuple[str, str] | None = None,
    deadline: float | None = None,
) -> Path:
    """Stream `url` into `dest`: at most `max_bytes` (a larger answer is refused, not cut), each read within
    the policy's timeout, the whole download (retries included) within `deadline` seconds, the sha256 the
    page listed checked; PublishError on any failure."""
    import hashlib
    import time

    import requests

    from kestrel_release.adapters import _deadline

    opened: list = []
    ends = time.monotonic() + deadline if deadline is not None else None

    def get() -> Path:
        digest, got = hashlib.sha256(), 0
        try:
            with requests.get(url, timeout=policy.timeout, stream=True, auth=auth) as resp:
                opened.append(resp)
                if resp.status_code == 429 or resp.status_code >= 500:
                    raise Transient(f"HTTP {resp.status_code}", retry_after(resp))
                if resp.status_code != 200:
                    raise PublishError(f"downloading {url} failed: HTTP {resp.status_code} {resp.reason}")
                declared = resp.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise PublishError(f"{url} is {declared} bytes, more than the {max_bytes} this reads")
                with open(dest, "wb") as fh:
                    for chunk in resp.iter_content(1 << 20):
                        got += len(chunk)
                        if got > max_bytes:
                            raise PublishError(f"{url} sends more than the {max_bytes} bytes this reads")
                        digest.update(chunk)
                        fh.write(chunk)
        except requests.RequestException as exc:
            raise (classify(exc, url) or PublishError(f"downloading {url} failed: {type(exc).__name__}")) from None
        if sha256 and digest.hexdigest() != sha256.lower():
            raise PublishError(f"{url}: sha256 {digest.hexdigest()} is not the {sha256} its index page lists")
        return dest

    def attempt() -> Path:  # a server trickling bytes inside the read timeout still ends at the deadline
        if ends is None:
            return get()
        try:
            return _deadline.call(get, max(0.0, ends - time.monotonic()), f"downloading {url}", abandon)
        except _deadline.DeadlineExceeded:
            raise PublishError(f"downloading {url} took longer than {deadline:.0f} s") from None

    def abandon() -> None:  # the worker's socket is shut down under it: its read ends now
        for resp in opened:
            _deadline.sever(resp)

    return with_retries(attempt, policy, f"downloading {url}")


def retry_after(resp: requests.Response) -> float | None:
    from kestrel_release.adapters.retry import retry_after_seconds

    return retry_after_seconds(resp.headers.get("Retry-After"))


class _ConsoleLog(logging.Handler):
    """twine logs through `logging`; route it to our masked console (shown with -v)."""

    def emit(self, record: logging.LogRecord) -> None:
        console.debug(f"twine: {record.getMessage()}")


def route_twine_logs() -> None:
    log = logging.getLogger("twine")
    if not any(isinstance(h, _ConsoleLog) for h in log.handlers):
        log.addHandler(_ConsoleLog())
        log.propagate = False
