"""The sandbox PyPI: a real pypiserver with a password, and the strict front with PyPI's rules."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.pypi import upload as pypi_upload
from kestrel_release.errors import PublishError
from kestrel_release.sandbox.pypi.server import PypiSandbox, free_port
from tests.factories import NAME, importable_wheel_bytes
from tests.helpers import ROOT

TAG = "cp312-cp312-manylinux_2_34_x86_64"
POLICY = pypi.RetryPolicy(retries=0, timeout=10)


def _wheel(tmp_path, version="1.0", tag=TAG, payload=b""):
    path = tmp_path / f"{NAME.replace('-', '_')}-{version}-{tag}.whl"
    path.write_bytes(importable_wheel_bytes(version, tag, payload=payload))
    return path


def _upload(box, path, password=None):
    import hashlib

    index = pypi.Index("sandbox", box.upload_url, box.simple_url)
    uploader = pypi_upload.Uploader(index, (box.username, password or box.password), POLICY)
    try:
        return uploader.upload(path, lambda done, total: None, hashlib.sha256(path.read_bytes()).hexdigest())
    finally:
        uploader.close()


@pytest.fixture(params=[False, True], ids=["plain", "strict"])
def box(request, tmp_path):
    with PypiSandbox(directory=tmp_path / "index", strict=request.param) as sandbox:
        yield sandbox


def test_uploads_need_the_password_and_land_in_the_directory(box, tmp_path):
    wheel = _wheel(tmp_path)
    with pytest.raises(PublishError, match=r"rejected user .* check the username and password"):
        _upload(box, wheel, password="not-the-password")
    assert box.files() == []
    _upload(box, wheel)
    assert box.files() == [wheel.name]
    listed = pypi.existing_files(pypi.Index("s", box.upload_url, box.simple_url), NAME, POLICY)
    import hashlib

    assert listed[wheel.name]["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()


def test_restart_keeps_the_port_and_the_packages(box, tmp_path):
    _upload(box, _wheel(tmp_path))
    url = box.url
    box.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/health", timeout=2)
    box.start()
    assert box.url == url and len(box.files()) == 1
    assert urllib.request.urlopen(url + "/health", timeout=2).status == 200


def test_only_the_strict_sandbox_refuses_linux_x86_64_like_pypi(box, tmp_path):
    wheel = _wheel(tmp_path, tag="cp312-cp312-linux_x86_64")
    if not box.strict:
        _upload(box, wheel)  # plain pypiserver takes what PyPI refuses: why --strict exists
        assert box.files() == [wheel.name]
        return
    with pytest.raises(PublishError, match="unsupported platform tag 'linux_x86_64'"):
        _upload(box, wheel)
    assert box.files() == []


def test_strict_answers_reuploads_like_pypi(tmp_path):
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        wheel = _wheel(tmp_path)
        _upload(box, wheel)
        _upload(box, wheel)  # identical bytes: 200, nothing happens
        assert box.files() == [wheel.name]
        wheel.write_bytes(importable_wheel_bytes("1.0", TAG, payload=b"other"))
        with pytest.raises(pypi.FileExists, match="already exists"):
            _upload(box, wheel)
        assert box.faults()["accepted"] == 1


def test_strict_refuses_local_versions_and_oversized_files(tmp_path):
    with PypiSandbox(directory=tmp_path / "index", strict=True, max_file_size=1024 * 1024) as box:
        with pytest.raises(PublishError, match=re.escape("local versions in '1.0+cu124'")):
            _upload(box, _wheel(tmp_path, version="1.0+cu124"))
        big = _wheel(tmp_path, version="2.0", payload=os.urandom(2 * 1024 * 1024))
        with pytest.raises(PublishError, match=r"larger than .* pypi/support"):
            _upload(box, big)
        assert box.files() == []


def test_fault_endpoint_answers_the_next_uploads_with_503(tmp_path):
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        req = urllib.request.Request(
            box.url + "/_sandbox/faults", data=json.dumps({"status": 503, "count": 1}).encode(), method="POST"
        )
        assert json.loads(urllib.request.urlopen(req, timeout=5).read())["faults"]["count"] == 1
        with pytest.raises(PublishError, match="HTTP 503"):
            _upload(box, _wheel(tmp_path))
        _upload(box, _wheel(tmp_path))
        assert box.faults()["faults_served"] == 1 and box.files() != []


@pytest.mark.parametrize("strict", [False, True], ids=["plain", "strict"])
def test_cli_serves_until_interrupted_and_never_prints_the_password(tmp_path, strict):
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "kestrel_release",
        "sandbox",
        "pypi",
        "--port",
        str(port),
        "--dir",
        str(tmp_path / "pkgs"),
        *(["--strict"] if strict else []),
    ]
    child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in child.stderr:
            lines.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(lines)
        assert f"http://127.0.0.1:{port}/simple/" in text and "[sandbox]" in text
        password_file = re.search(r'TWINE_PASSWORD="\$\(cat (\S+)\)"', text).group(1)
        password = Path(password_file).read_text().strip()
        assert password and password not in text
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200
    finally:
        child.send_signal(signal.SIGINT)
        child.wait(timeout=10)
    assert child.returncode == 0  # Ctrl-C is how a sandbox is stopped: a clean exit
    assert not Path(password_file).exists()  # the session directory went with it
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
