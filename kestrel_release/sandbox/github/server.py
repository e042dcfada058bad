"""HTTP side of the GitHub emulator: routing, auth, rate-limit headers, pagination, faults.

Serves the REST API under /api/v3, uploads under /api/uploads (GitHub Enterprise layout,
same host and port, which is what PyGithub accepts), downloads at
/{owner}/{repo}/releases/download/{tag}/{name}, and test hooks under /_emulator/.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from kestrel_release.sandbox.github import payloads as J
from kestrel_release.sandbox.github.routes import Answer, Query, Routes
from kestrel_release.sandbox.github.state import ApiError, State, not_found, validation


class Controls(Protocol):
    """The test hooks under /_emulator/ (emulator.GithubEmulator; not imported: it imports this module)."""

    def snapshot(self) -> dict: ...
    def requests(self) -> list[dict]: ...
    def inject(self, kind: str, *args: Any, **kwargs: Any) -> None: ...
    def clear_faults(self) -> None: ...
    def add_commit(self, repo: str) -> str: ...
    def enable_immutable_releases(self, repo: str) -> None: ...


R = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
ROUTES: list[tuple[str, re.Pattern, str]] = [
    (m, re.compile(p + "$"), h)
    for m, p, h in [
        ("GET", R, "get_repo"),
        ("GET", R + r"/immutable-releases", "get_immutable"),
        ("PUT", R + r"/immutable-releases", "set_immutable"),
        ("DELETE", R + r"/immutable-releases", "set_immutable"),
        ("GET", R + r"/commits/(?P<ref>.+)", "get_commit"),
        ("GET", R + r"/git/commits/(?P<ref>[0-9a-f]+)", "get_commit"),
        ("GET", R + r"/git/ref/(?P<ref>.+)", "get_ref"),
        ("GET", R + r"/git/refs/?(?P<ref>.*)", "list_refs"),
        ("POST", R + r"/git/refs", "create_ref"),
        ("PATCH", R + r"/git/refs/(?P<ref>.+)", "update_ref"),
        ("DELETE", R + r"/git/refs/(?P<ref>.+)", "delete_ref"),
        ("GET", R + r"/releases", "list_releases"),
        ("POST", R + r"/releases", "create_release"),
        ("GET", R + r"/releases/latest", "latest_release"),
        ("GET", R + r"/releases/tags/(?P<tag>.+)", "release_by_tag"),
        ("GET", R + r"/releases/assets/(?P<id>\d+)", "get_asset"),
        ("PATCH", R + r"/releases/assets/(?P<id>\d+)", "update_asset"),
        ("DELETE", R + r"/releases/assets/(?P<id>\d+)", "delete_asset"),
        ("GET", R + r"/releases/(?P<id>\d+)", "get_release"),
        ("PATCH", R + r"/releases/(?P<id>\d+)", "update_release"),
        ("DELETE", R + r"/releases/(?P<id>\d+)", "delete_release"),
        ("GET", R + r"/releases/(?P<id>\d+)/assets", "list_assets"),
    ]
]
FAULTS = (
    "upload_fail",
    "upload_drop",
    "upload_discard",
    "upload_delay",
    "upload_rewrite",
    "rate_limit",
    "release_race",
    "foreign_upload_url",
    "redirect_get",
)
MOVED = "/_moved"  # /api/v3/_moved/... serves /api/v3/...: where same-origin redirects point
UPLOAD = re.compile(R + r"/releases/(?P<id>\d+)/assets$")
DOWNLOAD = re.compile(r"/(?P<owner>[^/]+)/(?P<name>[^/]+)/releases/download/(?P<tag>[^/]+)/(?P<file>[^/]+)$")


class Core:
    """Everything the handler threads share: state, token, faults, request log."""

    def __init__(self, repos: Iterable[str], token: str) -> None:
        self.state = State(repos)
        self.token = token
        self.base = ""
        self.log: list[dict] = []
        self.faults: dict[str, list] = {kind: [] for kind in FAULTS}
        self.hooks: list[dict] = []  # tests' callbacks run before matching requests are answered
        self.remaining = 5000
        self.reset_at = int(time.time()) + 3600

    def take_fault(self, kind: str) -> dict[str, Any] | None:
        with self.state.lock:
            queue = self.faults[kind]
            if not queue:
                return None
            fault = queue[0]
            fault["count"] -= 1
            if fault["count"] <= 0:
                queue.pop(0)
            return fault


class Handler(Routes, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the request log is self.core.log
        pass

    @property
    def core(self) -> Core:
        return self.server.core

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        entry: dict[str, Any] = {  # one line of the request log, served as JSON to tests
            "method": method,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": raw[:65536].decode("utf-8", "replace"),
            "status": None,
        }
        self.foreign = None  # this request's foreign_upload_url fault, taken when a release is rendered
        self.foreign_taken = False
        with self.core.state.lock:
            self.core.log.append(entry)
            hooks = [h for h in self.core.hooks if h["method"] == method and h["part"] in url.path and h["count"] > 0]
            for hook in hooks:
                hook["count"] -= 1
        for hook in hooks:  # outside the lock: a hook may take its time (it changes the client's world)
            hook["fn"]()
        try:
            status, payload, headers = self._dispatch(method, url.path, parse_qs(url.query), raw)
        except ApiError as exc:
            status, payload, headers = exc.status, exc.payload, dict(exc.headers)
        except _Dropped:
            entry["status"] = "dropped"
            drop(self)
            return
        entry["status"] = status
        self._send(status, payload, headers)

    def _dispatch(self, method: str, path: str, query: Query, raw: bytes) -> Answer:
        if path.startswith("/_emulator/"):
            return self._control(method, path, raw)
        download = DOWNLOAD.match(path)
        if method == "GET" and download:
            return self._download(download)
        if not path.startswith("/api/"):
            raise not_found()
        self._auth()
        self._rate_limit()
        if path.startswith("/api/uploads/"):
            match = UPLOAD.match(path[len("/api/uploads") :])
            if method != "POST" or not match:
                raise not_found()
            return self._upload(match, query, raw)
        if not path.startswith("/api/v3/"):
            raise not_found()
        sub = path[len("/api/v3") :]
        if sub.startswith(MOVED + "/"):
            sub = sub[len(MOVED) :]
        elif method == "GET" and "/releases" in sub and (moved := self.core.take_fault("redirect_get")):
            query_text = urlsplit(self.path).query
            where = moved["origin"] or self.core.base
            return (
                moved["status"],
                None,
                {"Location": f"{where}/api/v3{MOVED}{sub}" + (f"?{query_text}" if query_text else "")},
            )
        for verb, pattern, handler in ROUTES:
            match = pattern.match(sub)
            if match and verb == method:
                args = {k: unquote(v) for k, v in match.groupdict().items()}
                body = json.loads(raw or b"{}") if method in ("POST", "PATCH") else {}
                args["method"] = method
                with self.core.state.lock:
                    repo = self.core.state.repo(f"{args.pop('owner')}/{args.pop('name')}")
                    return getattr(self, "h_" + handler)(repo, args, body, query)
        raise not_found()

    def _auth(self) -> None:
        header = self.headers.get("Authorization") or ""
        if not header:
            raise ApiError(401, "Requires authentication")
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("token", "bearer") or value.strip() != self.core.token:
            raise ApiError(401, "Bad credentials")

    def _rate_limit(self) -> None:
        fault = self.core.take_fault("rate_limit")
        with self.core.state.lock:
            self.core.remaining = max(0, self.core.remaining - 1)
        if fault is None:
            return
        err = ApiError(
            fault["status"],
            "API rate limit exceeded for user ID 1000. If you reach out to "
            "GitHub Support for help, please include the request ID.",
        )
        reset = fault.get("reset_header") or str(int(time.time() + fault["reset_in"]))  # raw: tests send nonsense
        err.headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
        if fault.get("retry_after") is not None:
            err.headers["Retry-After"] = str(fault["retry_after"])
        raise err

    # -- uploads and downloads ------------------------------------------------------
    def _upload(self, match: re.Match[str], query: Query, raw: bytes) -> Answer:
        name = (query.get("name") or [""])[0]
        label = (query.get("label") or [""])[0]
        content_type = self.headers.get("Content-Type")
        if not name:
            raise validation("ReleaseAsset", "missing_field", "name")
        if not content_type:
            raise ApiError(422, "Content-Type header is required")
        state = self.core.state
        with state.lock:
            rel = state.release(state.repo(f"{match['owner']}/{match['name']}"), int(match["id"]))
            fail = self.core.take_fault("upload_fail")
            if fail is not None:  # upstream failure: an empty `starter` asset blocks the name
                state.upload(rel, name, label, content_type, b"", state="starter")
                raise ApiError(fail["status"], "Bad Gateway")
            if self.core.take_fault("upload_rewrite") is not None:  # stored bytes differ from those sent
                raw = raw[:-1] + bytes([raw[-1] ^ 0xFF]) if raw else b"\0"
            discard = self.core.take_fault("upload_discard")
            delay = self.core.take_fault("upload_delay")
            if discard is not None or delay is not None:  # acknowledged; stored later or never
                asset = state.unstored(rel, name, label, content_type, raw)
                if delay is not None:
                    later = threading.Timer(delay["delay"], state.store_late, (rel, asset))
                    later.daemon = True
                    later.start()
                return (
                    201,
                    J.asset_json(self.core.base, state.repo(match["owner"] + "/" + match["name"]), rel, asset),
                    {},
                )
            asset = state.upload(rel, name, label, content_type, raw)
            if self.core.take_fault("upload_drop") is not None:  # stored, but the answer is lost
                raise _Dropped()
            return 201, J.asset_json(self.core.base, state.repo(match["owner"] + "/" + match["name"]), rel, asset), {}

    def _download(self, match: re.Match[str]) -> Answer:
        state = self.core.state
        with state.lock:
            repo = state.repo(f"{match['owner']}/{match['name']}")
            asset = state.download(repo, unquote(match["tag"]), unquote(match["file"]))
            return 200, asset.data, {"Content-Type": "application/octet-stream"}

    def _control(self, method: str, path: str, raw: bytes) -> Answer:
        emulator = self.server.emulator
        body = json.loads(raw or b"{}")
        if method == "GET" and path == "/_emulator/state":
            return 200, emulator.snapshot(), {}
        if method == "GET" and path == "/_emulator/requests":
            return 200, emulator.requests(), {}
        if method == "POST" and path == "/_emulator/fault":
            emulator.inject(**body)
            return 204, None, {}
        if method == "POST" and path == "/_emulator/clear":
            emulator.clear_faults()
            return 204, None, {}
        if method == "POST" and path == "/_emulator/commit":
            return 201, {"sha": emulator.add_commit(body["repo"])}, {}
        if method == "POST" and path == "/_emulator/immutable":
            emulator.enable_immutable_releases(body["repo"])
            return 204, None, {}
        raise not_found()

    # -- response ----------------------------------------------------------------
    def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
        if isinstance(payload, (bytes, bytearray)):
            data = bytes(payload)
        elif payload is None or status == 204:
            data = b""
        else:
            data = json.dumps(payload).encode()
            headers.setdefault("Content-Type", "application/json; charset=utf-8")
        self.send_response(status)
        core = self.core
        for key, value in {
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": str(core.remaining),
            "X-RateLimit-Reset": str(core.reset_at),
            "X-RateLimit-Used": str(5000 - core.remaining),
            "X-RateLimit-Resource": "core",
            "X-GitHub-Media-Type": "github.v3; format=json",
            **headers,
        }.items():
            self.send_header(key, value)
        if status != 204:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)


class _Dropped(Exception):
    """Close the connection without an answer (a network failure after the asset landed)."""


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, core: Core, emulator: Controls) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.core = core
        self.emulator = emulator
        core.base = f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> threading.Thread:
        thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="github-emulator", daemon=True
        )
        thread.start()
        return thread


def drop(handler: Handler) -> None:
    """Shut the socket down so the client sees a broken connection."""
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
