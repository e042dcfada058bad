"""A loopback TCP proxy that misbehaves on purpose, for network-fault tests.

Each new client connection takes the next mode from a queue (default: pass
through to the upstream server):
  "pass"   forward both ways untouched;
  "stall"  read the request and never answer (a server slower than any timeout);
  "reset"  forward the request head and a few KiB of the body, then reset the
           connection (RST) - a connection reset mid-upload;
  "cut"    forward the request head and a few KiB of the body, then close both
           sides cleanly (FIN) - the server sees a body shorter than its Content-Length.
Only uploads (POST) consume a queued mode when `posts_only` is set, so page reads
(GET /simple/...) stay healthy while uploads fail.
"""

from __future__ import annotations

import collections
import socket
import struct
import threading


class FaultProxy:
    def __init__(self, upstream_port: int, posts_only: bool = True) -> None:
        self.upstream_port = upstream_port
        self.posts_only = posts_only
        self.modes: collections.deque[str] = collections.deque()
        self.served: list[str] = []
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, mode: str, count: int = 1) -> None:
        with self._lock:
            self.modes.extend([mode] * count)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for conn in self._held:
            conn.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _mode_for(self, head: bytes) -> str:
        with self._lock:
            wanted = self.modes and (not self.posts_only or head.startswith(b"POST"))
            mode = self.modes.popleft() if wanted else "pass"
            self.served.append(mode)
            return mode

    def _serve(self, client: socket.socket) -> None:
        try:
            first = client.recv(65536)
        except OSError:
            client.close()
            return
        mode = self._mode_for(first)
        if mode == "stall":
            self._held.append(client)  # keep it open, answer nothing
            return
        if mode in ("reset", "cut"):
            self._reset_mid_body(client, first, clean=mode == "cut")
            return
        self._pipe(client, first)

    def _reset_mid_body(self, client: socket.socket, first: bytes, clean: bool = False) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        upstream.sendall(first[:4096])
        if clean:  # FIN: the server reads end-of-stream mid-body and must not keep what arrived
            upstream.shutdown(socket.SHUT_WR)
            try:
                upstream.recv(65536)  # let the server answer before the connection goes
            except OSError:
                pass
        for conn in (client, upstream):  # RST, not FIN: the peer sees "connection reset"
            if not clean:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def _pipe(self, client: socket.socket, first: bytes) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:
            client.close()
            return
        upstream.sendall(first)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for conn in (src, dst):
                    try:
                        conn.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream)


class BlackHole:
    """A server that accepts connections and never answers: every request times out."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self.port = self._sock.getsockname()[1]
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self._held.append(conn)

    def close(self) -> None:
        self._sock.close()
        for conn in self._held:
            conn.close()

    def __enter__(self) -> BlackHole:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
