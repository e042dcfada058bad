"""PyPI's 2025-2026 rules end to end: `verify` (exit 5, PyPI's words) and the strict sandbox (400,
PyPI's words, through a real upload) refuse each rule's wheel; verify runs on any wheel outside
a kernel project; the 14-day rule against an index's upload times."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from kestrel_release.adapters.pypi import client as pypi
from kestrel_release.adapters.pypi import upload as pypi_upload
from kestrel_release.errors import PublishError
from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests import pypi_rule_wheels as W
from tests.helpers import ROOT, assert_one_line_error, run_cli

SIX = ROOT / "tests" / "data" / "wheels" / "six-1.17.0-py2.py3-none-any.whl"  # a real PyPI wheel (MIT)
POLICY = pypi.RetryPolicy(retries=0, timeout=20)
CASES = [(case, *W.CASES[case][1:]) for case in sorted(W.CASES)]
CASES.append(("unnormalized-filename", "pypi-filename", W.UNNORMALIZED_WORDS))


def _make(case: str, directory: Path) -> Path:
    if case == "unnormalized-filename":
        name, data = W.unnormalized()
    else:
        name, data = W.FILENAME, W.CASES[case][0]()
    path = directory / case / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


def _upload(box: PypiSandbox, path: Path) -> int:
    index = pypi.Index("sandbox", box.upload_url, box.simple_url)
    uploader = pypi_upload.Uploader(index, (box.username, box.password), POLICY)
    try:
        return uploader.upload(path, lambda done, total: None, hashlib.sha256(path.read_bytes()).hexdigest())
    finally:
        uploader.close()


@pytest.fixture(scope="module")
def strict_box(tmp_path_factory):
    with PypiSandbox(directory=tmp_path_factory.mktemp("index"), strict=True) as box:
        yield box


@pytest.mark.parametrize("case, rule, words", CASES, ids=[c[0] for c in CASES])
def test_verify_refuses_in_pypis_words(tmp_path, case, rule, words):
    wheel = _make(case, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli(["verify", str(wheel), "--json"], cwd=empty, timeout=120)
    assert_one_line_error(result, 5, "verify found")
    doc = json.loads(result.stdout)
    assert doc["mode"] == "standalone"
    findings = [f for w in doc["wheels"] for f in w["findings"] if f["rule"] == rule]
    assert any(words in f["message"] for f in findings), doc["wheels"][0]["findings"]


@pytest.mark.parametrize("case, rule, words", CASES, ids=[c[0] for c in CASES])
def test_strict_sandbox_answers_400_in_pypis_words(strict_box, tmp_path, case, rule, words):
    wheel = _make(case, tmp_path)
    with pytest.raises(PublishError) as info:
        _upload(strict_box, wheel)
    assert "HTTP 400" in info.value.message and words in info.value.message, info.value.message
    assert wheel.name not in strict_box.files()  # nothing of a refused upload is stored


def test_a_clean_wheel_passes_both(strict_box, tmp_path):
    wheel = tmp_path / W.FILENAME.replace("0.1.0", "0.0.9")
    wheel.write_bytes(W.zip_bytes(W.members(version="0.0.9")))
    assert run_cli(["verify", str(wheel)], cwd=tmp_path, timeout=120).code == 0
    assert _upload(strict_box, wheel) == 1
    assert wheel.name in strict_box.files()


def test_verify_from_an_empty_folder_passes_a_real_pypi_wheel(tmp_path):
    wheel = tmp_path / SIX.name
    shutil.copy(SIX, wheel)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli(["verify", str(wheel)], cwd=empty, timeout=120)
    assert result.code == 0, result.output
    assert "standalone mode (no kernel project here)" in result.stderr
    assert "1 wheel(s) pass verify for pypi" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["empty", SIX.name] and os.listdir(empty) == []  # nothing written
    doc = json.loads(run_cli(["verify", str(wheel), "--json"], cwd=empty, timeout=120).stdout)
    assert doc["ok"] is True and doc["mode"] == "standalone" and doc["wheels"][0]["findings"] == []


def test_standalone_verify_applies_no_project_rules(tmp_path):
    # A .cu file would be a source leak under a project's forbid list; outside one it is PyPI's business only.
    # A private key is an error in every mode (issue 21: a secret in a wheel is never a project's policy).
    key = b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" * 2 + b"\n"
    files = {
        f"{W.PKG}/__init__.py": W.INIT,
        f"{W.PKG}/csrc/kernel.cu": b"__global__ void k() {}\n",
        f"{W.PKG}/fixture_key.pem": key,
    }
    wheel = tmp_path / W.FILENAME
    wheel.write_bytes(W.zip_bytes(W.members(files=files)))
    result = run_cli(["verify", str(wheel), "--json"], cwd=tmp_path, timeout=120)
    assert result.code == 5, result.output
    found = {(f["rule"], f["severity"]) for f in json.loads(result.stdout)["wheels"][0]["findings"]}
    assert found == {("secret", "error")}
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n\n[tool.kestrel-release]\npython = ["3.12"]\n'
    )
    sub = project / "sub"
    sub.mkdir()
    result = run_cli(["verify", str(wheel), "--json"], cwd=sub, timeout=120)  # the project is found upward
    assert result.code == 5
    doc = json.loads(result.stdout)
    errors = {f["rule"] for f in doc["wheels"][0]["findings"] if f["severity"] == "error"}
    assert doc["mode"] == "project" and {"source-leak", "secret"} <= errors


def test_standalone_verify_without_wheels_is_one_usage_line(tmp_path):
    result = run_cli(["verify"], cwd=tmp_path, timeout=120)
    assert_one_line_error(result, 2, "no kernel project here", "no wheels given")


def test_the_14_day_rule_against_the_index(tmp_path):
    first = tmp_path / "a" / W.FILENAME
    first.parent.mkdir()
    first.write_bytes(W.valid())
    other_tag = W.FILENAME.replace("py3-none-any", "py2.py3-none-any")
    second = tmp_path / "b" / other_tag
    second.parent.mkdir()
    second.write_bytes(W.zip_bytes(W.members(tags=("py2-none-any", "py3-none-any"))))
    with PypiSandbox(directory=tmp_path / "index", strict=True) as box:
        _upload(box, first)
        stored = box.directory / W.FILENAME
        old = time.time() - 15 * 86400
        os.utime(stored, (old, old))  # the release was created 15 days ago
        with pytest.raises(PublishError) as info:
            _upload(box, second)
        assert "HTTP 400" in info.value.message
        assert "Uploading new files to releases older than 14 days is not allowed." in info.value.message
        assert _upload(box, first) == 1  # an identical re-upload is still a 200
        project = tmp_path / "proj"
        project.mkdir()
        (project / "pyproject.toml").write_text(
            '[project]\nname = "kestrel-kernels"\nversion = "0.1.0"\n\n[tool.kestrel-release]\npython = ["3.12"]\n'
            "[tool.kestrel-release.verify]\nrequired_sass = []\n"
            f'[tool.kestrel-release.targets.testpypi]\nrepository_url = "{box.upload_url}"\n'
            f'simple_url = "{box.simple_url}"\n'
        )
        result = run_cli(
            ["verify", str(second), "--target", "testpypi", "--json", "--project", str(project)], timeout=120
        )
        assert_one_line_error(result, 5, "verify found")
        found = json.loads(result.stdout)["findings"]
        assert [(f["rule"], f["member"]) for f in found if f["severity"] == "error"] == [
            ("pypi-release-age", second.name)
        ]
        result = run_cli(["verify", str(first), "--target", "testpypi", "--project", str(project)], timeout=120)
        assert result.code == 0, result.output  # the index has these very bytes: nothing new is uploaded
        env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password}
        result = run_cli(
            ["publish", str(second), "--target", "testpypi", "--project", str(project), "--yes"], env=env, timeout=120
        )
        assert_one_line_error(
            result, 6, second.name, "Uploading new files to releases older than 14 days", "nothing was uploaded"
        )
        assert box.files() == [W.FILENAME]  # publish asked before sending anything
