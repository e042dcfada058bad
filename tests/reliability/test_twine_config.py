"""Twine's configuration is honoured as twine honours it, and credentials stay on their host.

Before: TWINE_REPOSITORY_URL, TWINE_REPOSITORY and a `repository =` override in .pypirc's
[pypi]/[testpypi] were ignored (a job configured for a private index went to TestPyPI),
a .pypirc section's password was sent to whatever URL was given, and a .pypirc that is a
directory was an internal error.
"""

from __future__ import annotations

import base64
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.helpers import assert_one_line_error, run_cli
from tests.reliability.conftest import FAST, local_wheels, sha256s

RC_PASSWORD = "rc-only-for-its-host-7c1d"


class Recorder:
    """Another host: records every request's Authorization header; GETs are proxied to `upstream`."""

    def __init__(self, upstream: str | None = None) -> None:
        self.seen: list[tuple[str, str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def _record(self) -> None:
                recorder.seen.append((self.command, self.path, self.headers.get("Authorization", "")))

            def do_GET(self) -> None:
                self._record()
                if upstream is None:
                    self.send_error(404)
                    return
                try:
                    with urllib.request.urlopen(upstream.rstrip("/") + self.path, timeout=30) as resp:
                        body, ctype = resp.read(), resp.headers.get("Content-Type", "text/html")
                except urllib.error.HTTPError as exc:
                    self.send_error(exc.code)
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self._record()
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_error(403)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def passwords(self) -> list[str]:
        found = []
        for _m, _p, header in self.seen:
            if header.startswith("Basic "):
                found.append(base64.b64decode(header[6:]).decode(errors="replace").partition(":")[2])
        return found

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _home(tmp_path: Path, pypirc: str | bytes | None) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if isinstance(pypirc, bytes):
        (home / ".pypirc").write_bytes(pypirc)
    elif pypirc is not None:
        (home / ".pypirc").write_text(pypirc)
    return home


def _publish(project: Path, home: Path, *args: str, **env: str):
    base = {
        "HOME": str(home),
        **FAST,
        "TWINE_USERNAME": "",
        "TWINE_PASSWORD": "",
        "TWINE_REPOSITORY": "",
        "TWINE_REPOSITORY_URL": "",
    }
    return run_cli(["publish", "--project", str(project), "--yes", *args], env={**base, **env}, timeout=180)


def _files(box: PypiSandbox) -> dict[str, str]:
    return sha256s(p for p in box.directory.iterdir() if p.is_file())


def _plan_line(result) -> str:
    return next(line for line in result.stderr.splitlines() if "upload URL" in line)


def test_twine_repository_url_is_honoured(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(
            dist_project,
            _home(tmp_path, None),
            "--target",
            "testpypi",
            TWINE_REPOSITORY_URL=box.upload_url,
            TWINE_USERNAME=box.username,
            TWINE_PASSWORD=box.password,
        )
        assert result.code == 0, result.output
        plan = _plan_line(result)
        assert box.upload_url in plan and "TWINE_REPOSITORY_URL" in plan and box.simple_url in plan
        assert _files(box) == local_wheels(dist_project)


def test_twine_repository_picks_the_pypirc_section(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        rc = box.pypirc("private").replace(
            "# password: export TWINE_PASSWORD (never write it here)\n", f"password = {box.password}\n"
        )
        result = _publish(dist_project, _home(tmp_path, rc), TWINE_REPOSITORY="private")
        assert result.code == 0, result.output
        assert "index private: upload URL " + box.upload_url in _plan_line(result)
        assert _files(box) == local_wheels(dist_project)


@pytest.mark.parametrize("section", ["testpypi", "pypi"])
def test_a_repository_override_in_pypirc_pypi_sections_is_honoured(
    dist_project: Path, tmp_path: Path, section: str
) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        rc = (
            f"[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n[{section}]\nrepository = {box.upload_url}\n"
            f"username = {box.username}\npassword = {box.password}\n"
        )
        result = _publish(dist_project, _home(tmp_path, rc), "--target", section)
        assert result.code == 0, result.output
        plan = _plan_line(result)
        assert box.upload_url in plan and box.simple_url in plan and "pypi.org" not in plan
        assert _files(box) == local_wheels(dist_project)


def test_a_pypirc_password_never_goes_to_another_host(dist_project: Path, tmp_path: Path) -> None:
    rc = f"[distutils]\nindex-servers =\n    testpypi\n\n[testpypi]\nusername = __token__\npassword = {RC_PASSWORD}\n"
    with Recorder() as other:
        result = _publish(dist_project, _home(tmp_path, rc), "--target", "testpypi", TWINE_REPOSITORY_URL=other.url)
        assert_one_line_error(result, 6, "no credentials")
        assert RC_PASSWORD not in other.passwords()
        assert not [s for s in other.seen if s[0] == "POST"]


def test_simple_index_reads_on_another_host_carry_no_upload_credentials(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box, Recorder(upstream=box.url) as mirror:
        result = _publish(
            dist_project,
            _home(tmp_path, None),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--simple-url",
            mirror.url + "simple/",
            TWINE_USERNAME=box.username,
            TWINE_PASSWORD=box.password,
        )
        assert result.code == 0, result.output
        assert mirror.seen, "the simple index on the other host was never read"
        assert mirror.passwords() == [] and all(not header for _m, _p, header in mirror.seen)
        assert _files(box) == local_wheels(dist_project)


@pytest.mark.parametrize("kind", ["directory", "not-utf8"])
def test_an_unreadable_pypirc_is_one_line_exit_2(dist_project: Path, tmp_path: Path, kind: str) -> None:
    if kind == "directory":
        home = _home(tmp_path, None)
        (home / ".pypirc").mkdir()
    else:
        home = _home(tmp_path, b"[testpypi]\nusername = \xff\xfe caf\xe9\npassword = x\n")
    result = _publish(dist_project, home, "--target", "testpypi", TWINE_PASSWORD="x-not-used")
    assert_one_line_error(result, 2, ".pypirc", "directory" if kind == "directory" else "UTF-8")
