"""A deadline for a whole network request, not for each socket read.

requests' `timeout` bounds every single read: a server that sends one byte just
inside it, forever, holds the caller forever. Here the request runs in a worker
thread and the caller waits at most `seconds` for the complete answer. On expiry
`abandon` runs (it closes what the worker reads from, so an upload stops sending)
and the worker, a daemon, is left to die on its own read timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from kestrel_release import run_context

T = TypeVar("T")
UPLOAD_RATE_FLOOR = 256 * 1024  # bytes/s: an upload may take publish.timeout + size / this


def sever(resp: object) -> None:
    """Shut down the socket under a response (http.client's, or requests') so that a read blocked on
    it in an abandoned worker ends now. Closing the response instead would wait for the buffered
    reader's lock, which that read holds until the server sends everything: a trickle holds it."""
    import socket

    raw = getattr(resp, "raw", None)  # requests.Response -> urllib3's response -> http.client's
    inner = getattr(raw, "_fp", None) or raw or resp
    sock = getattr(getattr(getattr(inner, "fp", None), "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        try:  # the plain socket's shutdown, also under TLS: it only needs the descriptor
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


class DeadlineExceeded(Exception):
    """No complete answer within the deadline; the message says what was awaited."""


def upload_deadline(timeout: float, size: int) -> float:
    """The whole-upload deadline: the request timeout plus time for the bytes at a slow-but-alive rate."""
    return timeout + size / UPLOAD_RATE_FLOOR


def call(fn: Callable[[], T], seconds: float, what: str, abandon: Callable[[], None] | None = None) -> T:
    """fn() if it finishes within `seconds`; else DeadlineExceeded('<what>: no complete answer within N s')."""
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread below
            box["error"] = exc
        finally:
            done.set()

    # fn runs in the caller's run context (its URL policy, its console): a new thread starts without it.
    threading.Thread(target=run_context.carried(work), daemon=True, name=f"deadline: {what}"[:60]).start()
    if not done.wait(seconds):
        if abandon is not None:
            abandon()
        raise DeadlineExceeded(f"{what}: no complete answer within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
