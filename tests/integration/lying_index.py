"""A package index that stores what it likes, for "exactly the verified bytes" tests.

Like pypiserver, devpi or Artifactory it does not compare the form's sha256 with the file; on request it
also lies: answers 200 and stores nothing ("drop"), stores other bytes than it received ("rewrite"), or
fails the first upload with a 503 after running a hook (the moment a test changes the wheel on disk).
Its simple page lists `#sha256=` fragments unless `hashes` is off; `files_base` puts the file links on
another origin (a second LyingIndex serving the same store).
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LyingIndex:
    def __init__(self, store: dict[str, bytes] | None = None) -> None:
        self.store: dict[str, bytes] = {} if store is None else store  # filename -> the bytes it serves
        self.mode = "store"  # store | drop | rewrite
        self.hashes = True
        self.files_base = ""  # "" = this server
        self.fail_first: Callable[[], None] | None = None  # run, then answer the next upload with a 503
        self.received: list[dict] = []  # every upload: filename, form sha256, sha256 of the content
        self.requests: list[tuple[str, str, bool]] = []  # method, path, whether it carried Authorization
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _upload(self, content_type: str, body: bytes) -> int:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
        )
        fields: dict[str, str] = {}
        content, filename = b"", ""
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "content":
                content, filename = part.get_payload(decode=True), part.get_filename()
            else:
                fields[str(name)] = part.get_content().strip()
        with self._lock:
            self.received.append(
                {"filename": filename, "form_sha256": fields.get("sha256_digest", ""), "content": content}
            )
            hook, self.fail_first = self.fail_first, None
        if hook is not None:
            hook()
            return 503
        if self.mode == "store":
            self.store[filename] = content
        elif self.mode == "rewrite":
            self.store[filename] = content[:-1] + bytes([content[-1] ^ 0xFF])
        return 200

    def _page(self) -> bytes:
        base = self.files_base or self.url
        links = []
        for name, data in sorted(self.store.items()):
            fragment = f"#sha256={hashlib.sha256(data).hexdigest()}" if self.hashes else ""
            links.append(f'<a href="{base}/files/{name}{fragment}">{name}</a>')
        return ("<html><body>" + "\n".join(links) + "</body></html>").encode()

    def __enter__(self) -> LyingIndex:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _reply(self, status: int, body: bytes = b"", content_type: str = "text/html") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.requests.append(("POST", self.path, "Authorization" in self.headers))
                self._reply(owner._upload(self.headers.get("Content-Type", ""), body), b"OK")

            def do_GET(self) -> None:
                owner.requests.append(("GET", self.path, "Authorization" in self.headers))
                if self.path.startswith("/simple/"):
                    page = owner._page()
                    self._reply(200 if owner.store else 404, page if owner.store else b"not found")
                elif self.path.startswith("/files/") and self.path[len("/files/") :] in owner.store:
                    self._reply(200, owner.store[self.path[len("/files/") :]], "application/octet-stream")
                else:
                    self._reply(404, b"not found")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
