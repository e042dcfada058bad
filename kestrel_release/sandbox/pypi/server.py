"""A real pypiserver on 127.0.0.1 for rehearsals and tests, optionally behind PyPI's rules.

Plain mode runs `python -m pypiserver run` as a child. Strict mode runs pypiserver's
WSGI app in a child behind `pypi_strict`'s middleware, so a rehearsal fails where
PyPI would (platform tags, local versions, size, re-uploads) and faults can be
injected through `POST /_sandbox/faults`. The password reaches the server only
through the htpasswd file, never argv.
"""

from __future__ import annotations

import json
import os
import secrets as _random
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kestrel_release.errors import PreflightError, UsageError
from kestrel_release.files import statedir
from kestrel_release.process import proc
from kestrel_release.ui import console, redact

HEALTH_TIMEOUT = 15.0
DEFAULT_MAX_FILE_SIZE = 100 * 1024 * 1024  # PyPI's default per-file limit


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_htpasswd(path: Path, username: str, password: str) -> None:
    from passlib.apache import HtpasswdFile

    htpasswd = HtpasswdFile(str(path), new=True, default_scheme="apr_md5_crypt")  # fast: checked on every request
    htpasswd.set_password(username, password)
    htpasswd.save()
    os.chmod(path, 0o600)


class PypiSandbox:
    """Context manager: a pypiserver with one htpasswd user, restartable on the same port/dir."""

    def __init__(
        self,
        directory: Path | None = None,
        strict: bool = False,
        port: int = 0,
        username: str = "kestrel",
        password: str | None = None,
        max_file_size: int = DEFAULT_MAX_FILE_SIZE,
        private: bool = False,
    ) -> None:
        """`private`: reads need the credentials too (a company index), not only uploads (plain mode only)."""
        if private and strict:
            raise UsageError("a private sandbox index is plain pypiserver", "use strict=False with private=True")
        self.private = private
        # htpasswd and log: `kestrel-pypi-<pid>-*` in the temp dir, collected by the next sandbox if
        # this process is killed before close() (statedir.owned_dir).
        self._state = statedir.owned_dir("pypi")
        self.directory = Path(directory or self._state / "packages").resolve()
        self.strict = strict
        self.port = port or free_port()
        self.username = username
        self.password: str = password or "sbx-" + _random.token_urlsafe(24)
        redact.register(self.password, user=self.username)
        self.max_file_size = max_file_size
        self._proc: subprocess.Popen | None = None
        self._htpasswd = self._state / "htpasswd"
        self.log = self._state / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def upload_url(self) -> str:
        return self.url + "/"

    @property
    def simple_url(self) -> str:
        return self.url + "/simple/"

    def _argv(self) -> list[str]:
        if self.strict:
            return [
                sys.executable,
                "-m",
                "kestrel_release.sandbox.pypi.strict",
                "--port",
                str(self.port),
                "--htpasswd",
                str(self._htpasswd),
                "--max-file-size",
                str(self.max_file_size),
                str(self.directory),
            ]
        return [
            sys.executable,
            "-m",
            "pypiserver",
            "run",
            "-i",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-P",
            str(self._htpasswd),
            "-a",
            "download,list,update" if self.private else "update",
            "--disable-fallback",
            str(self.directory),
        ]

    def start(self) -> PypiSandbox:
        """Start (or restart) the server and wait until /health answers."""
        if self._proc is not None and self._proc.poll() is None:
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._htpasswd.exists():
            _write_htpasswd(self._htpasswd, self.username, self.password)
        with open(self.log, "ab") as log:
            self._proc = proc.popen(
                self._argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                time.sleep(0.03)
        tail = " | ".join(self.log.read_text(errors="replace").splitlines()[-3:]) if self.log.exists() else ""
        self.stop()
        raise PreflightError(
            f"the sandbox PyPI did not start on {self.url}",
            f"is port {self.port} in use? server output: {tail or '(none)'}",
        )

    def stop(self) -> None:
        """Stop the server (the packages stay, so `start()` resumes on the same port and dir)."""
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

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def faults(self, **spec: Any) -> dict[str, Any]:
        """Strict mode only: POST a fault spec (see pypi_strict.FAULTS_HELP); returns the server state."""
        if not self.strict:
            raise UsageError("fault injection needs the strict sandbox", "start it with strict=True")
        data = json.dumps(spec).encode() if spec else None
        req = urllib.request.Request(
            self.url + "/_sandbox/faults",
            data=data,
            method="POST" if spec else "GET",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def files(self) -> list[str]:
        """Filenames the server holds."""
        return sorted(p.name for p in self.directory.iterdir() if p.is_file()) if self.directory.exists() else []

    def pypirc(self, name: str = "sandbox") -> str:
        """A .pypirc snippet for this server; the password is left for the environment."""
        return (
            f"[distutils]\nindex-servers =\n    {name}\n\n[{name}]\nrepository = {self.upload_url}\n"
            f"username = {self.username}\n# password: export TWINE_PASSWORD (never write it here)\n"
        )

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._state, ignore_errors=True)

    def __enter__(self) -> PypiSandbox:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_forever(port: int = 0, directory: Path | None = None, strict: bool = False) -> None:
    """`kestrel-release sandbox pypi`: run until Ctrl-C, printing the lines that publish to it.

    The password file (and the packages, without --dir) live in a private session directory of
    the tool's state dir, removed when the sandbox stops: nothing is left in /tmp."""
    import shlex

    from kestrel_release.files import statedir

    with (
        statedir.session("pypi") as session,
        PypiSandbox(directory=directory or session / "packages", strict=strict, port=port) as box,
    ):
        mode = "strict (PyPI's upload rules)" if strict else "plain pypiserver"
        kept = "" if directory else " (removed when it stops; --dir DIR keeps them)"
        console.ok(f"sandbox PyPI ({mode}) at {box.url}  packages: {box.directory}{kept}")
        console.info(f"upload URL: {box.upload_url}\nsimple index: {box.simple_url}")
        # The console masks every registered secret, so the password goes to a 0600 file.
        secret_file = session / "password"
        from kestrel_release.files.fsutil import atomic_write_text

        atomic_write_text(secret_file, box.password + "\n", mode=0o600)
        console.info("publish to it with (the password is read from a 0600 file, never put on a command line):")
        console.plain(f"export TWINE_USERNAME={shlex.quote(box.username)}")
        console.plain(f'export TWINE_PASSWORD="$(cat {shlex.quote(str(secret_file))})"')
        console.plain(f"kestrel-release publish --repository-url {box.upload_url}")
        console.info(".pypirc snippet:\n" + box.pypirc())
        if strict:
            console.info(f'faults: curl -X POST {box.url}/_sandbox/faults -d \'{{"status": 503, "count": 2}}\'')
        console.info("Ctrl-C to stop")
        while box.running:
            time.sleep(0.5)
        raise PreflightError("the sandbox PyPI stopped unexpectedly", f"see {box.log}")
