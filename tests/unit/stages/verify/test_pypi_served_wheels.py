"""What wheels PyPI serves carry must not fail verify: each case is a trait of a real upload reduced to a
hand-made wheel (cupy-cuda12x 14.2.0, cryptography 44.0.3), checked in standalone mode and in a project."""

from __future__ import annotations

import base64
import dataclasses
import os

from kestrel_release.config_loader import load as config
from kestrel_release.stages import verify
from kestrel_release.stages.verify.pypi import standalone_config
from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"
TAG = "cp312-cp312-manylinux2014_aarch64"


def _standalone(tmp_path, **cfg_verify):
    cfg = standalone_config(tmp_path)
    return dataclasses.replace(cfg, verify=dataclasses.replace(cfg.verify, **cfg_verify)) if cfg_verify else cfg


def _findings(report) -> set[tuple[str, str]]:
    return {(f.rule, f.severity) for w in report.wheels for f in w.findings}


def test_wheel_file_tags_other_than_the_filename_warn_outside_a_project(tmp_path):
    # cupy-cuda12x's manylinux2014_aarch64 wheels say `Tag: cp312-cp312-linux_aarch64` in WHEEL.
    wheel = make_wheel(tmp_path, tag=TAG, wheel_tags=["cp312-cp312-linux_aarch64"])
    report = verify.run(_standalone(tmp_path), [wheel], project=False)
    assert report.ok and _findings(report) == {("wheel-tags", "warning")}


def test_wheel_file_tags_other_than_the_filename_fail_a_project_build(tmp_path):
    cfg = config.load(make_verify_project(tmp_path / "proj", pythons=("3.12",)), env={})
    wheel = make_wheel(tmp_path, tag=TAG, wheel_tags=["cp312-cp312-linux_aarch64"])
    report = verify.run(cfg, [wheel], record=False)
    assert not report.ok and ("wheel-tags", "error") in _findings(report)


def test_a_wheel_over_the_default_file_size_warns_outside_a_project(tmp_path):
    # PyPI raised cupy-cuda12x's limit: its 140 MiB wheels are served; no project config says so here.
    wheel = make_wheel(tmp_path, {f"{PKG}/big.bin": os.urandom(8192)}, tag=TAG)
    report = verify.run(_standalone(tmp_path, max_file_size=1024), [wheel], project=False)
    assert report.ok and _findings(report) == {("file-size", "warning")}


def test_a_key_header_constant_is_not_a_private_key(tmp_path):
    # cryptography/hazmat/primitives/serialization/ssh.py parses OpenSSH keys by their armor lines.
    code = b'_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n_SK_END = b"-----END OPENSSH PRIVATE KEY-----"\n'
    cfg = config.load(make_verify_project(tmp_path / "proj", pythons=("3.12",)), env={})
    wheel = make_wheel(tmp_path, {f"{PKG}/__init__.py": b"", f"{PKG}/ssh.py": code}, tag=TAG)
    report = verify.run(cfg, [wheel], record=False)
    assert report.ok and _findings(report) == set()


def test_a_private_key_with_its_body_is_still_found(tmp_path):
    body = base64.b64encode(os.urandom(96)).decode()
    pem = f"-----BEGIN RSA PRIVATE KEY-----\r\nProc-Type: 4,ENCRYPTED\r\nDEK-Info: AES-128-CBC,AB\r\n\r\n{body}\r\n"
    escaped = f'KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\\n{body}\\n-----END OPENSSH PRIVATE KEY-----"\n'
    cfg = config.load(make_verify_project(tmp_path / "proj", pythons=("3.12",)), env={})
    wheel = make_wheel(
        tmp_path,
        {f"{PKG}/__init__.py": b"", f"{PKG}/key.pem": pem.encode(), f"{PKG}/fixture.py": escaped.encode()},
        tag=TAG,
    )
    report = verify.run(cfg, [wheel], record=False)
    secrets = {(f.member, f.message.split(" at ")[0]) for f in report.wheels[0].findings if f.rule == "secret"}
    assert secrets == {(f"{PKG}/key.pem", "a private key"), (f"{PKG}/fixture.py", "a private key")}
    assert body not in str(report.to_json())  # the key itself is never printed


def _build_paths(tmp_path, extra_metadata: str) -> list[str]:
    cfg = config.load(make_verify_project(tmp_path / "proj", pythons=("3.12",)), env={})
    wheel = make_wheel(tmp_path, tag=TAG, extra_metadata=extra_metadata)
    return [
        f.message for w in verify.run(cfg, [wheel], record=False).wheels for f in w.findings if f.rule == "build-path"
    ]


def test_paths_in_the_description_are_examples_not_build_paths(tmp_path):
    # psutil's and charset-normalizer's READMEs show `/home/giampaolo/monit.py`-style usage examples.
    body = "Description-Content-Type: text/markdown\n\nRun `python /home/giampaolo/monit.py` or C:\\Users\\me\\x.py\n"
    old_style = "Description: Run it:\n        |   python /home/giampaolo/monit.py\n        |\n"
    assert _build_paths(tmp_path / "a", body) == []
    assert _build_paths(tmp_path / "b", old_style) == []


def test_a_home_path_in_a_metadata_header_is_still_a_build_path(tmp_path):
    found = _build_paths(tmp_path, "Project-URL: Docs, file:///home/alice/build/docs\n\nplain README\n")
    assert found == ["absolute build path '/home/alice/build/docs' in a text file: make it relative"]
