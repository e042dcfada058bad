"""Child process for `PypiSandbox(strict=True)`: pypiserver's WSGI app behind PyPI's upload rules.

Local index servers accept what PyPI refuses (linux_x86_64, local versions, any size,
conflicting re-uploads), so a rehearsal against plain pypiserver passes where the real
release fails. This front answers those uploads the way Warehouse does (400 with the
message as the HTTP reason) and passes everything else to pypiserver unchanged.

Faults for reliability tests (FAULTS_HELP): `POST /_sandbox/faults` with JSON
  {"status": 503, "count": 2}            next 2 uploads answered 503 (429 with "retry_after": S)
  {"reset": 1}                           next upload: connection reset before the body is read
  {"exit_after_uploads": 1}              the server exits after the next accepted upload
`GET /_sandbox/faults` returns the pending faults and counters (uploads, accepted, refused).
PyPI's 2025-2026 rules (artifacts/pypi_rules.py, the functions verify runs) refuse with PyPI's 400 and words;
`GET /pypi/<name>/<version>/json` serves a release's files and upload times as PyPI's JSON API does.
`DELETE /_sandbox/files/<filename>` (authorized) removes one stored file: the client's repair of a
damaged copy of its own upload (kept by sandboxes before bodies were checked; see pypi_body).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from kestrel_release import platforms
from kestrel_release.sandbox.pypi import body as pypi_body
from kestrel_release.sandbox.pypi import form as pypi_form
from kestrel_release.sandbox.pypi import index_rules as pypi_index_rules

if TYPE_CHECKING:
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

FAULTS_HELP = __doc__
_JSON_API = re.compile(r"^/pypi/([^/]+)/([^/]+)/json/?$")
_PROJECT_JSON = re.compile(r"^/pypi/([^/]+)/json/?$")  # the whole project: sizes for quota forecasts


class _Refused(Exception):
    """An upload PyPI would refuse: HTTP 400 with this message as the reason."""


def check_wheel_rules(filename: str, form_version: str, size: int, max_size: int) -> None:
    """Raise _Refused with Warehouse's message when PyPI would refuse this file."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    if not filename.endswith(".whl"):
        raise _Refused("Invalid file extension: Use .whl or .tar.gz (sdists only in the sandbox's plain mode).")
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        raise _Refused(f"Invalid distribution file. Filename '{filename}' is not a valid wheel name.") from None
    for tag in sorted({t.platform for t in tags}):
        if not platforms.pypi_accepts(tag):  # warehouse/forklift/legacy.py's list
            raise _Refused(f"Binary wheel '{filename}' has an unsupported platform tag '{tag}'.")
    if version.local or "+" in form_version:
        raise _Refused(f"The use of local versions in '{form_version or version}' is not allowed.")
    if form_version and str(version) != form_version:
        raise _Refused(f"Version in filename should be '{form_version}' not '{version}'.")
    if size > max_size:
        raise _Refused(
            f"File too large. Limit for project '{name}' is {max_size // (1024 * 1024)} MB. "
            "See https://pypi.org/help#file-size-limit for more information."
        )


class StrictFront:
    """WSGI middleware: PyPI's upload rules and fault injection in front of pypiserver."""

    def __init__(self, app: WSGIApplication, root: Path, htpasswd: Path, max_size: int) -> None:
        from passlib.apache import HtpasswdFile

        self.app, self.root, self.max_size = app, root, max_size
        self.htpasswd = HtpasswdFile(str(htpasswd))
        self.lock = threading.Lock()
        self.faults: dict[str, Any] = {
            "status": 0,
            "count": 0,
            "retry_after": None,
            "reset": 0,
            "exit_after_uploads": 0,
        }  # set by tests through /_sandbox/faults
        self.counters = {"uploads": 0, "accepted": 0, "refused": 0, "faults_served": 0}
        self.requests: dict[str, int] = {}  # "METHOD /path" -> count: what a run cost the index (tests read it)
        self.exit_requested = False
        # path -> (size, mtime_ns, sha256): each stored file is hashed once, not once per later upload
        # (25 same-sized wheels cost 300 hashes of 8 MiB each and held every upload's reply back).
        self._digests: dict[str, tuple[int, int, str]] = {}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/_sandbox/faults":
            return self._control(environ, start_response)
        with self.lock:
            seen = f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO', '')}"
            self.requests[seen] = self.requests.get(seen, 0) + 1
        if environ.get("PATH_INFO", "").startswith("/_sandbox/files/") and environ["REQUEST_METHOD"] == "DELETE":
            return self._remove(environ, start_response)
        if environ.get("REQUEST_METHOD") == "POST" and "multipart" in environ.get("CONTENT_TYPE", ""):
            return self._upload(environ, start_response)
        if environ.get("REQUEST_METHOD") == "GET" and _JSON_API.match(environ.get("PATH_INFO", "")):
            return self._release_json(environ, start_response)
        if environ.get("REQUEST_METHOD") == "GET" and _PROJECT_JSON.match(environ.get("PATH_INFO", "")):
            return self._project_json(environ, start_response)
        return self.app(environ, start_response)

    def _release_json(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """PyPI's JSON API for one release: its files and upload times (the 14-day rule's input)."""
        name, version = _JSON_API.match(environ["PATH_INFO"]).groups()  # type: ignore[union-attr]
        with self.lock:
            doc = pypi_index_rules.release_json(self.root, name, version)
        if doc is None:
            return _reply(start_response, 404, "Not Found")
        return _reply_json(start_response, doc)

    def _project_json(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        from kestrel_release.sandbox.pypi.project_json import project_json

        name = _PROJECT_JSON.match(environ["PATH_INFO"]).group(1)  # type: ignore[union-attr]
        host = environ.get("HTTP_HOST") or f"127.0.0.1:{environ.get('SERVER_PORT', '')}"
        with self.lock:
            doc = project_json(self.root, name, f"http://{host}")
        if doc is None:
            return _reply(start_response, 404, "Not Found")
        return _reply_json(start_response, doc)

    def _control(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            spec = json.loads(environ["wsgi.input"].read(size) or b"{}")
            with self.lock:
                self.faults.update({k: v for k, v in spec.items() if k in self.faults})
        with self.lock:
            doc = {"faults": dict(self.faults), **self.counters, "requests": dict(self.requests)}
        return _reply_json(start_response, doc)

    def _take_fault(self) -> str | None:
        with self.lock:
            self.counters["uploads"] += 1
            if self.faults["reset"] > 0:
                self.faults["reset"] -= 1
                self.counters["faults_served"] += 1
                return "reset"
            if self.faults["count"] > 0 and self.faults["status"]:
                self.faults["count"] -= 1
                self.counters["faults_served"] += 1
                return "status"
        return None

    def _upload(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        fault = self._take_fault()
        if fault == "reset":
            _reset(environ)
            raise ConnectionAbortedError("sandbox fault: connection reset")
        from pypiserver.bottle_wrapper.bottle import BaseRequest

        try:
            pypi_body.spool(environ)  # a cut body is refused whole: nothing of it is ever stored
        except pypi_body.BodyRefused as exc:
            with self.lock:
                self.counters["refused"] += 1
            return _reply(start_response, 400, str(exc))
        pypi_form.parse(environ)  # bottle's cgi parser reads a wheel line by line: 0.25 s per 8 MiB
        request = BaseRequest(environ)  # parses once; pypiserver reuses the parsed body from environ
        if fault == "status":
            status = int(self.faults["status"])
            headers = [("Retry-After", str(self.faults["retry_after"]))] if self.faults["retry_after"] else []
            return _reply(start_response, status, "Sandbox fault", headers)
        upload = request.files.get("content")
        if upload is None or request.forms.get(":action") != "file_upload" or not self._authorized(environ):
            return self.app(environ, start_response)  # pypiserver answers (400 / 401 / 403)
        try:
            data = upload.file.read()
            upload.file.seek(0)
            try:
                pypi_body.check_digest(request.forms, data)
            except pypi_body.BodyRefused as exc:
                raise _Refused(str(exc)) from None
            check_wheel_rules(upload.raw_filename, request.forms.get("version", ""), len(data), self.max_size)
            if self._identical(upload.raw_filename, data):
                return _reply(start_response, 200, "OK")  # PyPI: an identical re-upload is a no-op
            reason = pypi_index_rules.refusal(upload.raw_filename, data, self.root)  # verify's own checks
            if reason:
                raise _Refused(reason)
        except _Refused as exc:
            with self.lock:
                self.counters["refused"] += 1
            return _reply(start_response, 400, str(exc))
        return self._accept(environ, start_response)

    def _accept(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        captured: dict[str, str] = {}

        def spy(
            status: str, headers: list[tuple[str, str]], exc_info: OptExcInfo | None = None
        ) -> Callable[[bytes], object]:
            captured["status"] = status
            return start_response(status, headers, exc_info)

        body = self.app(environ, spy)
        if captured.get("status", "").startswith("200"):
            with self.lock:
                self.counters["accepted"] += 1
                if self.faults["exit_after_uploads"] > 0:
                    self.faults["exit_after_uploads"] -= 1
                    self.exit_requested = self.faults["exit_after_uploads"] == 0
        return body

    def _remove(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not self._authorized(environ):
            return _reply(start_response, 401, "Unauthorized")
        name = environ["PATH_INFO"][len("/_sandbox/files/") :]
        with self.lock:
            removed = pypi_body.remove_file(self.root, name)
        return _reply(start_response, 200 if removed else 404, "Removed" if removed else "Not Found")

    def _authorized(self, environ: WSGIEnvironment) -> bool:
        header = environ.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return bool(self.htpasswd.check_password(user, password))

    def _identical(self, filename: str, data: bytes) -> bool:
        """True for the same bytes under the same name; _Refused for any other clash."""
        digest = hashlib.sha256(data).hexdigest()
        for existing in self.root.rglob("*"):
            if not existing.is_file() or existing.name.startswith("."):
                continue
            same_name = existing.name == filename
            st = existing.stat()
            same_bytes = st.st_size == len(data) and self._sha256(existing, st) == digest
            if same_name and same_bytes:
                return True
            if same_name or same_bytes:
                blake = hashlib.blake2b(data, digest_size=32).hexdigest()
                raise _Refused(
                    f"File already exists ('{filename}', with blake2_256 hash '{blake}'). "
                    "See https://pypi.org/help/#file-name-reuse for more information."
                )
        return False

    def _sha256(self, path: Path, st: os.stat_result) -> str:
        known = self._digests.get(str(path))
        if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
            return known[2]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self._digests[str(path)] = (st.st_size, st.st_mtime_ns, digest)
        return digest


def _reply(
    start_response: StartResponse, status: int, reason: str, headers: Iterable[tuple[str, str]] = ()
) -> list[bytes]:
    body = reason.encode() + b"\n"
    start_response(f"{status} {reason}", [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *headers])
    return [body]


def _reply_json(start_response: StartResponse, doc: dict[str, Any]) -> list[bytes]:
    body = json.dumps(doc).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def _reset(environ: WSGIEnvironment) -> None:
    """Abort the TCP connection with RST (SO_LINGER 0), as a crashed proxy would."""
    sock: socket.socket = environ["kestrel.socket"]
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    os.close(sock.detach())


class _Handler(WSGIRequestHandler):
    front: StrictFront

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["kestrel.socket"] = self.connection
        return environ

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            return  # the client went away, or a reset fault closed the socket
        if self.front.exit_requested:
            os._exit(0)  # exit_after_uploads: the response is out, now "crash"


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # faults and disconnects are expected here; pypiserver logs its own errors


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="kestrel_release.sandbox.pypi.strict")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--htpasswd", type=Path, required=True)
    parser.add_argument("--max-file-size", type=int, default=100 * 1024 * 1024)
    parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    import pypiserver
    from pypiserver.config import Config

    config = Config.from_args(
        [
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(args.port),
            "-P",
            str(args.htpasswd),
            "-a",
            "update",
            "--disable-fallback",
            str(args.root),
        ]
    )
    pypi_body.install_atomic_writes()
    pypi_body.sweep_partials(args.root)
    app = pypiserver.setup_routes_from_config(pypiserver.app_from_config(config), config)
    front = StrictFront(app, args.root, args.htpasswd, args.max_file_size)
    _Handler.front = front
    server = _Server(("127.0.0.1", args.port), _Handler)
    server.set_app(front)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
