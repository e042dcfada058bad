"""Every network wait has a deadline for the whole request, and bad answers are one line.

Before: publish.timeout bounded each socket read, so an index trickling a byte
within every read timeout held publish forever; 0 was accepted; a malformed
PEP 691 page was an internal error; a TLS certificate error was retried.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_cli
from tests.reliability.conftest import FAST


class RawServer:
    """Answers every connection with `head` and then `body`, one byte every `every` seconds."""

    def __init__(self, head: bytes, body: bytes, every: float = 0.0, tls: ssl.SSLContext | None = None) -> None:
        self.head, self.body, self.every, self.tls = head, body, every, tls
        self.connections = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.recv(65536)
            conn.sendall(self.head)
            if not self.every:
                conn.sendall(self.body)
            for byte in self.body if self.every else b"":
                if self._stop.wait(self.every):
                    break
                conn.sendall(bytes([byte]))
        except OSError:
            pass
        finally:
            conn.close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._sock.close()


def _head(content_type: str, length: int) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def _publish(project: Path, url: str, timeout: float = 120, **env: str):
    return run_cli(
        ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", url, "--yes"],
        env={"TWINE_USERNAME": "u", "TWINE_PASSWORD": "p4ssw0rd-deadline", **FAST, **env},
        timeout=timeout,
    )


def test_an_index_that_trickles_bytes_cannot_hold_publish(dist_project: Path) -> None:
    body = b"<html>" + b" " * 5000  # at one byte per 0.5 s this answer would take 40 minutes
    with RawServer(_head("text/html", len(body)), body, every=0.5) as trickle:
        start = time.monotonic()
        result = _publish(
            dist_project, trickle.url, KESTREL_RELEASE_PUBLISH_TIMEOUT="3", KESTREL_RELEASE_PUBLISH_RETRIES="1"
        )
        elapsed = time.monotonic() - start
    assert_one_line_error(result, 6, "no complete answer within 3 s")
    assert "waiting for the index's file list" in result.stderr  # it says what it waited for
    assert elapsed < 60, elapsed


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"files": [{"nofilename": 1}]}', b'{"files": 3}'],
    ids=["not-json", "no-filename", "files-not-a-list"],
)
def test_a_malformed_pep691_page_is_one_line_exit_6(dist_project: Path, body: bytes) -> None:
    with RawServer(_head("application/vnd.pypi.simple.v1+json", len(body)), body) as server:
        result = _publish(dist_project, server.url)
    assert_one_line_error(result, 6, "malformed")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_publish_timeout_that_is_not_positive_is_a_config_error(dist_project: Path, value: str) -> None:
    result = _publish(dist_project, "http://127.0.0.1:9/", KESTREL_RELEASE_PUBLISH_TIMEOUT=value)
    assert_one_line_error(result, 2, "KESTREL_RELEASE_PUBLISH_TIMEOUT", "expected a")


def test_an_untrusted_certificate_fails_at_once_with_the_fix(dist_project: Path, tmp_path: Path) -> None:
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a self-signed certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            cert,
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with RawServer(_head("text/html", 6), b"<html>", tls=context) as server:
        result = _publish(
            dist_project, server.url, KESTREL_RELEASE_PUBLISH_RETRIES="3", REQUESTS_CA_BUNDLE="", SSL_CERT_FILE=""
        )
        connections = server.connections
    assert_one_line_error(result, 6, "certificate")
    assert "REQUESTS_CA_BUNDLE" in result.stderr
    assert connections == 1, "a certificate error was retried"


def test_a_github_api_that_trickles_bytes_cannot_hold_publish(tmp_path: Path) -> None:
    from tests.factories import build_output, make_github_project

    project = make_github_project(tmp_path / "kernels", "0.1.0", retries=1)
    build_output(project, "0.1.0", "0" * 40)
    body = b"{" + b" " * 5000 + b"}"
    with RawServer(_head("application/json", len(body)), body, every=0.5) as trickle:
        start = time.monotonic()
        result = run_cli(
            ["publish", "--target", "github", "--project", str(project), "--api-url", trickle.url + "api/v3", "--yes"],
            env={"GH_TOKEN": "ghp_" + "Tr1ckle" * 5, "GITHUB_TOKEN": "", "KESTREL_RELEASE_PUBLISH_TIMEOUT": "3"},
            timeout=120,
        )
        elapsed = time.monotonic() - start
    assert_one_line_error(result, 6, "no complete answer within 3 s")
    assert elapsed < 60, elapsed
