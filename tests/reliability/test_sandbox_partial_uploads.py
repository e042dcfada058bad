"""A cut upload never leaves a partial file on the strict sandbox, and a damaged copy is repaired.

Before: the sandbox stored whatever part of a body arrived (client killed, connection
closed cleanly mid-body), and every re-run stopped with "already on the index with
other bytes: bump the version"; a body that did not match its sha256_digest was stored.
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

import requests

from kestrel_release.sandbox.pypi.body import DIGEST_MISMATCH
from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.helpers import assert_one_line_error, run_cli
from tests.reliability.conftest import FAST, local_wheels, sha256s
from tests.reliability.faultproxy import FaultProxy


def _publish(project: Path, url: str, box: PypiSandbox, *extra: str, **env: str):
    return run_cli(
        ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", url, "--yes", *extra],
        env={"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST, **env},
        timeout=180,
    )


def _stored(box: PypiSandbox) -> dict[str, str]:
    """Every file in the sandbox dir, hidden temp files included."""
    return sha256s(p for p in box.directory.rglob("*") if p.is_file())


def test_a_body_cut_cleanly_mid_upload_stores_nothing_and_a_rerun_completes(dist_project: Path, tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box, FaultProxy(box.port) as proxy:
        proxy.queue("cut", 100)  # every upload through the proxy ends with a clean close mid-body
        first = _publish(dist_project, proxy.url + "/", box)
        assert "cut" in proxy.served
        assert_one_line_error(first, 6)
        assert _stored(box) == {}, "a partial upload was kept"
        assert box.faults()["refused"] >= 1  # the sandbox saw the short bodies and refused them
        rerun = _publish(dist_project, box.upload_url, box)
        assert rerun.code == 0, rerun.output
        assert _stored(box) == local_wheels(dist_project)


def test_a_body_shorter_than_content_length_is_refused(tmp_path: Path) -> None:
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        boundary = "kestrelboundary"
        part = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name=":action"\r\n\r\nfile_upload\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="content"; '
                f'filename="mini-0.1.0-py3-none-any.whl"\r\nContent-Type: application/octet-stream\r\n\r\n'
            ).encode()
            + b"PK"
            + b"x" * 5000
        )
        import base64

        auth = base64.b64encode(f"{box.username}:{box.password}".encode()).decode()
        head = (
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {auth}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(part) + 100000}\r\nConnection: close\r\n\r\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", box.port), timeout=30) as sock:
            sock.sendall(head + part)
            sock.shutdown(socket.SHUT_WR)
            answer = sock.recv(65536).decode(errors="replace")
        assert answer.startswith(("HTTP/1.0 400", "HTTP/1.1 400")), answer
        assert "Incomplete request body" in answer
        assert _stored(box) == {}


def test_bytes_that_do_not_match_sha256_digest_are_refused_with_pypis_words(dist_project: Path, tmp_path: Path) -> None:
    wheel = min((dist_project / "dist-all").glob("*.whl"))
    name, version = wheel.name.split("-")[:2]
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        form = {
            ":action": "file_upload",
            "protocol_version": "1",
            "name": name,
            "version": version,
            "filetype": "bdist_wheel",
            "pyversion": "cp312",
            "sha256_digest": hashlib.sha256(b"other").hexdigest(),
        }
        with open(wheel, "rb") as fh:
            resp = requests.post(
                box.upload_url,
                data=form,
                files={"content": (wheel.name, fh)},
                auth=(box.username, box.password),
                timeout=60,
            )
        assert resp.status_code == 400 and resp.reason == DIGEST_MISMATCH, (resp.status_code, resp.reason)
        assert _stored(box) == {}
        form["sha256_digest"] = hashlib.sha256(wheel.read_bytes()).hexdigest()
        with open(wheel, "rb") as fh:
            resp = requests.post(
                box.upload_url,
                data=form,
                files={"content": (wheel.name, fh)},
                auth=(box.username, box.password),
                timeout=60,
            )
        assert resp.status_code == 200, (resp.status_code, resp.reason)
        assert _stored(box) == sha256s([wheel])


def _leave_truncated_copy(project: Path, directory: Path) -> Path:
    """What a sandbox without body checks kept after a cut upload: the wheel's first bytes."""
    wheel = min((project / "dist-all").glob("*.whl"))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / wheel.name).write_bytes(wheel.read_bytes()[:20000])
    return wheel


def test_a_truncated_copy_of_our_own_upload_is_repaired_on_the_sandbox(dist_project: Path, tmp_path: Path) -> None:
    wheel = _leave_truncated_copy(dist_project, tmp_path / "index")
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        dry = _publish(dist_project, box.upload_url, box, "--dry-run")
        assert dry.code == 0, dry.output
        assert len((tmp_path / "index" / wheel.name).read_bytes()) == 20000  # a dry run changes nothing
        result = _publish(dist_project, box.upload_url, box)
        assert result.code == 0, result.output
        assert "truncated copy" in result.stderr and "removed it" in result.stderr
        assert _stored(box) == local_wheels(dist_project)


def test_a_truncated_copy_on_an_index_that_cannot_remove_it_says_what_to_do(dist_project: Path, tmp_path: Path) -> None:
    wheel = _leave_truncated_copy(dist_project, tmp_path / "index")
    with PypiSandbox(directory=tmp_path / "index", strict=False) as box:  # plain pypiserver: no repair route
        result = _publish(dist_project, box.upload_url, box)
        assert_one_line_error(result, 6, "truncated copy", wheel.name)
        assert "bump the version" not in result.stderr and "the version can stay" in result.stderr
        assert len((tmp_path / "index" / wheel.name).read_bytes()) == 20000  # not ours to delete blindly


def test_a_different_file_under_our_name_is_still_a_conflict(dist_project: Path, tmp_path: Path) -> None:
    wheel = min((dist_project / "dist-all").glob("*.whl"))
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / wheel.name).write_bytes(b"PK-not-our-bytes" * 10)
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        result = _publish(dist_project, box.upload_url, box)
        assert_one_line_error(result, 6, "other bytes")
        assert (tmp_path / "index" / wheel.name).read_bytes() == b"PK-not-our-bytes" * 10


def test_a_write_that_fails_mid_file_leaves_neither_file_nor_temp(tmp_path: Path) -> None:
    """Disk full while the sandbox stores an upload: the file appears whole or not at all."""
    import errno

    import pytest

    from kestrel_release.sandbox.pypi import body as pypi_body

    class FullDisk:
        def __init__(self) -> None:
            self.calls = 0

        def read(self, n: int = -1) -> bytes:
            self.calls += 1
            if self.calls > 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            return b"x" * 1024

    with pytest.raises(OSError):
        pypi_body.write_atomic(FullDisk(), tmp_path / "mini-0.1.0-py3-none-any.whl")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / (pypi_body.PARTIAL_PREFIX + "left-by-a-killed-server")).write_bytes(b"x")
    (tmp_path / "someone-elses.whl").write_bytes(b"y")
    pypi_body.sweep_partials(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["someone-elses.whl"]
