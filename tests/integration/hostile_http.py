"""A loopback HTTP server that answers as a hostile or broken index/API would, scripted per path.

    with HostileServer() as srv:
        srv.route("GET", "/pypi/", trickle=2.0, body=b'{"releases": {}}')    # a byte every 2 s
        srv.route("GET", "/simple/", headers={"Content-Type": "application/vnd.pypi.simple.v1+json"},
                  body=nested_json(100_000))
        srv.route("POST", "/legacy/", status=503, headers={"Retry-After": "-1"})

Unrouted paths answer 404. Every request is recorded (method, path, headers) in `srv.requests`.
A `reason` may be a callable of the request headers (to echo the Authorization header, as a
misconfigured proxy does).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    reason: str | Callable[[dict[str, str]], str] | None = None
    trickle: float = 0.0  # seconds between single bytes of the body (0: all at once)
    count: int = -1  # how many requests it answers (-1: all); then the next route for the path
    ranged: bool = False  # honour `Range: bytes=A-B` / `bytes=-N` (206 and the slice), as a mirror of wheels does


def nested_json(depth: int) -> bytes:
    """A syntactically valid JSON document nested `depth` levels deep."""
    return b'{"files": ' + b"[" * depth + b"]" * depth + b"}"


class HostileServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.routes: list[tuple[str, str, Reply]] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    def route(self, method: str, prefix: str, **reply) -> HostileServer:
        with self._lock:
            self.routes.append((method, prefix, Reply(**reply)))
        return self

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://{self.host}:{self._server.server_address[1]}"

    def _answer(self, method: str, path: str) -> Reply:
        with self._lock:
            for i, (m, prefix, reply) in enumerate(self.routes):
                if m == method and path.startswith(prefix):
                    if reply.count > 0:
                        reply.count -= 1
                        if reply.count == 0:
                            del self.routes[i]
                    return reply
        return Reply(404, b"not found")

    def __enter__(self) -> HostileServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _serve(self) -> None:
                headers = dict(self.headers.items())
                length = int(headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with owner._lock:
                    owner.requests.append((self.command, self.path, headers))
                reply = owner._answer(self.command, self.path)
                reason = reply.reason(headers) if callable(reply.reason) else reply.reason
                status, body = _ranged(reply, headers.get("Range", ""))
                self.send_response(status, reason)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if not reply.trickle:
                        self.wfile.write(body)
                        return
                    for i in range(len(body)):
                        if owner._stop.wait(reply.trickle):
                            return
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                except OSError:  # the client gave up: that is what a deadline does
                    return

            do_GET = do_POST = do_DELETE = do_PATCH = do_PUT = _serve

        self._server = ThreadingHTTPServer((self.host, 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def _ranged(reply: Reply, asked: str) -> tuple[int, bytes]:
    """The status and body for a request's Range header (the whole body unless the route honours ranges)."""
    found = re.fullmatch(r"bytes=(\d*)-(\d*)", asked.strip())
    if not (reply.ranged and found and (found.group(1) or found.group(2))):
        return reply.status, reply.body
    start, end = found.group(1), found.group(2)
    if not start:
        return 206, reply.body[-int(end) :]
    return 206, reply.body[int(start) : int(end) + 1 if end else None]


def lan_address() -> str | None:
    """This machine's address on a non-loopback interface (no packet is sent), or None."""
    import ipaddress
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))  # TEST-NET-2, a UDP "connect": only picks the outgoing interface
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def elapsed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    value = fn()
    return value, time.monotonic() - start
