"""Which URLs may carry credentials: https anywhere, plain http only to this machine.

Basic auth (an index's upload) and a GitHub token travel in a header: over http:// to another
host anyone on the path reads them, and can rewrite the index's answers (its file list and
sha256s). Loopback http stays allowed (the sandboxes and rehearsals run there); anything else
needs `--allow-insecure-http` on publish or release, which sets `allow_insecure` for the run.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from kestrel_release import run_context
from kestrel_release.errors import UsageError

FLAG = "--allow-insecure-http"


def allow_insecure(value: bool) -> None:
    """The command's --allow-insecure-http (a field of the run's run_context)."""
    run_context.configure(allow_insecure_http=value)


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 and localhost names, without asking DNS (a name that resolves there is not trusted)."""
    if not host:
        return False
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


def require_clean(url: str, what: str) -> None:
    """UsageError (exit 2) for a URL holding a control character: a line break pasted with it would split
    an HTTP request line (urllib's parsers drop CR/LF silently, requests refuses it with an internal error).
    The URL is not quoted: it may carry credentials."""
    bad = next((c for c in url if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        kind = "a line break" if bad in "\r\n" else f"the control character U+{ord(bad):04X}"
        raise UsageError(f"{what} holds {kind}", "give the URL on one line, without control characters")


def require_secure(url: str, what: str) -> None:
    """UsageError (exit 2) for an http:// URL to a host other than this machine, unless allowed, or one
    holding a control character (require_clean)."""
    require_clean(url, what)
    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or run_context.current().allow_insecure_http or is_loopback(parts.hostname):
        return
    raise UsageError(
        f"{what} {without_userinfo(url)} is plain http:// to another host: the credentials would cross the "
        "network readable by anyone on the way",
        f"use https://, or pass {FLAG} if that network is trusted",
    )
