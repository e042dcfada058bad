"""The HTTP under PyGithub, hardened against what a server may send: rate-limit headers, body size, redirects.

PyGithub parses X-RateLimit-Remaining/-Limit/-Reset of every answer with `int(float(v))`: "soon" is a
ValueError and "1e400" an OverflowError from inside it, whatever the status. And it reads each
answer whole before parsing it. A response hook on its requests session (it runs before the body
is read) drops such headers when they are not numbers, and reads the body with a bound (downloads,
which PyGithub streams, are left alone). The hook is attached through PyGithub's connection class of
this one Github object (PyGithub 2.x keeps it in a private attribute; harden says whether it found
it, and tests/integration/publish/test_github_adapter.py sends such headers to the installed version).

Redirects: PyGithub follows a 301 by path only and hands any other 3xx to its JSON parser (a TypeError
deep inside it). The hook follows a GET's redirect itself when it stays on the origin of the request
(a renamed repository), and refuses every other one with a PublishError naming the origin: the token
travels with each request, and goes only where it was given for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests

MAX_BODY = 64 * 1024 * 1024  # a listing page of 100 releases with their assets is a few MiB
_NUMBER = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,9})?")
MAX_REDIRECTS = 5
_RATE_HEADERS = ("X-RateLimit-Remaining", "X-RateLimit-Limit", "X-RateLimit-Reset", "X-RateLimit-Used")


def scrub(headers: Any) -> None:
    """Remove rate-limit headers that are not plain non-negative numbers (a case-insensitive mapping)."""
    for name in _RATE_HEADERS:
        value = headers.get(name)
        if value is not None and not _NUMBER.fullmatch(str(value).strip()):
            del headers[name]


def origin(url: str) -> str:
    """scheme://host:port of `url`, the port spelled out (the unit the token is bound to)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:  # a port that is no number is no origin the token was given for
        return f"{parts.scheme}://{parts.hostname or ''}:(not a port)"
    return f"{parts.scheme}://{parts.hostname or ''}:{port}"


def allowed_origins(api_url: str) -> frozenset[str]:
    """Where the token may go: the API's origin, and for github.com its upload host."""
    own = origin(api_url)
    return frozenset({own, "https://uploads.github.com:443"} if own == "https://api.github.com:443" else {own})


def _follow(resp: requests.Response, session: requests.Session, kwargs: dict[str, Any]) -> requests.Response:
    """The answer at the redirect's Location, or a PublishError when it may not be followed."""
    from urllib.parse import urljoin, urlsplit

    from kestrel_release.errors import PublishError

    request = resp.request
    target = urljoin(resp.url, resp.headers["Location"])
    path = urlsplit(resp.url).path
    hint = "check --api-url / targets.github.api_url (the address GitHub answers at, without redirects)"
    if origin(target) != origin(resp.url):
        raise PublishError(
            f"GitHub redirected {request.method} {path} to {origin(target)}, another origin than "
            f"{origin(resp.url)}; not followed: the token is only sent to the origin it was given for",
            hint,
        )
    hops = getattr(request, "kestrel_hops", 0) + 1
    if request.method not in ("GET", "HEAD") or hops > MAX_REDIRECTS:
        why = "too many redirects" if hops > MAX_REDIRECTS else "a write is never re-sent"
        raise PublishError(
            f"GitHub answered {request.method} {path} with a redirect ({resp.status_code}); not followed: {why}", hint
        )
    again = request.copy()
    again.prepare_url(target, None)
    vars(again)["kestrel_hops"] = hops  # our own mark on the request: requests declares no such field
    resp.close()
    sent = {k: v for k, v in kwargs.items() if k in ("stream", "timeout", "verify", "cert", "proxies")}
    return session.send(again, allow_redirects=False, **sent)  # the hooks run again on the new answer


def _on_response(
    resp: requests.Response, *args: Any, session: requests.Session | None = None, **kwargs: Any
) -> requests.Response:
    from kestrel_release.files import safejson

    if resp.is_redirect and session is not None:
        return _follow(resp, session, kwargs)
    scrub(resp.headers)
    if not kwargs.get("stream"):
        what = f"GitHub's answer to {resp.request.method} {resp.url}"
        resp._content = safejson.read_body(resp, what, max_bytes=MAX_BODY)
        resp._content_consumed = True
        safejson.check_numbers(resp._content, what)  # PyGithub parses it again, with no bound on numbers
    return resp


def harden(gh: Any) -> bool:
    """Attach the hook to every connection `gh` (a github.Github) opens; False when it could not."""
    requester = getattr(gh, "_Github__requester", None)
    base = getattr(requester, "_Requester__connectionClass", None)
    if base is None or not isinstance(base, type):
        return False

    class Hardened(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            session = self.session
            self.session.hooks["response"].append(lambda r, *a, **k: _on_response(r, *a, session=session, **k))

    requester._Requester__connectionClass = Hardened  # type: ignore[union-attr]
    return True
