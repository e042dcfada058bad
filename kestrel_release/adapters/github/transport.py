"""The HTTP under PyGithub, hardened against what a server may send: rate-limit headers and body size.

PyGithub parses X-RateLimit-Remaining/-Limit/-Reset of every answer with `int(float(v))`: "soon" is a
ValueError and "1e400" an OverflowError from inside it, whatever the status. And it reads each
answer whole before parsing it. A response hook on its requests session (it runs before the body
is read) drops such headers when they are not numbers, and reads the body with a bound (downloads,
which PyGithub streams, are left alone). The hook is attached through PyGithub's connection class of
this one Github object (PyGithub 2.x keeps it in a private attribute; harden says whether it found
it, and tests/integration/publish/test_github_adapter.py sends such headers to the installed version).
"""

from __future__ import annotations

import re
from typing import Any

MAX_BODY = 64 * 1024 * 1024  # a listing page of 100 releases with their assets is a few MiB
_NUMBER = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,9})?")
_RATE_HEADERS = ("X-RateLimit-Remaining", "X-RateLimit-Limit", "X-RateLimit-Reset", "X-RateLimit-Used")


def scrub(headers: Any) -> None:
    """Remove rate-limit headers that are not plain non-negative numbers (a case-insensitive mapping)."""
    for name in _RATE_HEADERS:
        value = headers.get(name)
        if value is not None and not _NUMBER.fullmatch(str(value).strip()):
            del headers[name]


def _on_response(resp, *args, **kwargs):
    from kestrel_release import safejson

    scrub(resp.headers)
    if not kwargs.get("stream"):
        what = f"GitHub's answer to {resp.request.method} {resp.url}"
        resp._content = safejson.read_body(resp, what, max_bytes=MAX_BODY)
        resp._content_consumed = True
    return resp


def harden(gh: Any) -> bool:
    """Attach the hook to every connection `gh` (a github.Github) opens; False when it could not."""
    requester = getattr(gh, "_Github__requester", None)
    base = getattr(requester, "_Requester__connectionClass", None)
    if base is None or not isinstance(base, type):
        return False

    class Hardened(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.session.hooks["response"].append(_on_response)

    requester._Requester__connectionClass = Hardened  # type: ignore[union-attr]
    return True
