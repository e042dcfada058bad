"""A static file host on 127.0.0.1 for a static index: the stand-in for GitHub Pages, S3 or nginx.

It serves a directory as any static host does (`<dir>/` answers with `<dir>/index.html`), plus the one
thing a static host can be configured to do for PEP 691: a request whose Accept header asks for
`application/vnd.pypi.simple.v1+json` gets the folder's `index.json` with that content type (uv asks
for it first; pip asks for HTML). Runs as a child (`python -m kestrel_release.sandbox.static_host`).
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kestrel_release.errors import PreflightError
from kestrel_release.files import statedir
from kestrel_release.process import proc

HEALTH_TIMEOUT = 15.0
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


class StaticHost:
    """Context manager: serves `directory` on http://127.0.0.1:PORT/ until it exits."""

    def __init__(self, directory: Path, port: int = 0) -> None:
        from kestrel_release.sandbox.pypi.server import free_port

        self.directory = Path(directory).resolve()
        self.port = port or free_port()
        self._proc: subprocess.Popen | None = None
        self._state = statedir.owned_dir("static-host")
        self.log = self._state / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StaticHost:
        self.directory.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "kestrel_release.sandbox.static_host", str(self.port), str(self.directory)]
        with open(self.log, "ab") as log:
            self._proc = proc.popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline and self._proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/_health", timeout=1) as resp:
                    if resp.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.03)
        tail = " | ".join(self.log.read_text(errors="replace").splitlines()[-3:]) if self.log.exists() else ""
        self.stop()
        raise PreflightError(f"the static host did not start on {self.url}", f"server output: {tail or '(none)'}")

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> StaticHost:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        import shutil

        self.stop()
        shutil.rmtree(self._state, ignore_errors=True)


def serve(port: int, directory: Path) -> None:
    """The child: a threading HTTP server of `directory` with PEP 691 negotiation of folder pages."""
    import functools
    import http.server

    class Handler(http.server.SimpleHTTPRequestHandler):
        def send_head(self) -> Any:  # a readable file, or None once answered
            if self.path == "/_health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            folder = Path(self.translate_path(self.path))
            wants_json = JSON_TYPE in (self.headers.get("Accept") or "")
            if wants_json and self.path.split("?")[0].endswith("/") and (folder / "index.json").is_file():
                data = (folder / "index.json").read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", JSON_TYPE)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Vary", "Accept")
                self.end_headers()
                import io

                return io.BytesIO(data)
            return super().send_head()

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")

    handler = functools.partial(Handler, directory=str(directory))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
        httpd.serve_forever()


if __name__ == "__main__":
    serve(int(sys.argv[1]), Path(sys.argv[2]))
