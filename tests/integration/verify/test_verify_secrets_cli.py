"""Secrets in a wheel fail `verify` in every mode, standalone included (before: standalone exited 0 with a warning),
and no output ever shows the secret itself."""

from __future__ import annotations

import base64
import json
import random

import pytest

from tests.factories import make_verify_project, make_wheel
from tests.helpers import assert_one_line_error, run_cli

PKG = "kestrel_kernels"
_RNG = random.Random(21)
_B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _rand(n: int) -> str:
    return "".join(_RNG.choice(_B62) for _ in range(n))


PYPI = "pypi-AgEIcHlwaS5vcmc" + _rand(60)
GHP = "ghp_" + _rand(36)
BODY = base64.b64encode(_RNG.randbytes(300)).decode()
OPENSSH = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n-----END OPENSSH PRIVATE KEY-----\n"
PEM = f"-----BEGIN PRIVATE KEY-----\n{BODY}\n-----END PRIVATE KEY-----\n"
CASES = {
    "pypirc": (f"{PKG}/.pypirc", f"[pypi]\nusername = __token__\npassword = {PYPI}\n", PYPI),
    "id_rsa": (f"{PKG}/keys/id_rsa", OPENSSH, BODY[:60]),
    "pem": (f"{PKG}/certs/server.pem", PEM, BODY[:60]),
    "env": (f"{PKG}/.env", f"GITHUB_TOKEN={GHP}\n", GHP),
    "netrc": (
        f"{PKG}/.netrc",
        "machine upload.pypi.org login __token__ password hunter2-" + _rand(20) + "\n",
        "hunter2-",
    ),
    "env-template-with-token": (f"{PKG}/.env.example", f"HF_TOKEN=hf_{_rand(34)}\n", "HF_TOKEN=hf_"),
}


@pytest.mark.parametrize("mode", ["standalone", "project"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_secret_in_a_wheel_is_an_error_in_every_mode_and_never_printed(tmp_path, mode, case):
    member, content, secret = CASES[case]
    wheel = make_wheel(tmp_path / "dist", {f"{PKG}/__init__.py": b"", member: content.encode()})
    args = ["verify", str(wheel)]
    if mode == "project":
        args += ["--project", str(make_verify_project(tmp_path / "proj"))]
    shown = run_cli([*args, "-v"], cwd=tmp_path)
    assert_one_line_error(shown, 5, "verify found")
    result = run_cli([*args, "--json"], cwd=tmp_path)
    assert_one_line_error(result, 5, "verify found")
    assert secret not in shown.output + result.output
    doc = json.loads(result.stdout)
    secrets = [(f["severity"], f["member"]) for w in doc["wheels"] for f in w["findings"] if f["rule"] == "secret"]
    assert secrets and set(secrets) == {("error", member)}


def test_templates_and_documented_examples_are_not_secrets(tmp_path):
    # A shipped .env.example with placeholders, AWS's documented example key, a `ghp_xxxx` stand-in in docs.
    files = {
        f"{PKG}/__init__.py": b"",
        f"{PKG}/.env.example": b"GITHUB_TOKEN=\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n",
        f"{PKG}/docs.py": b'"""export GITHUB_TOKEN=ghp_' + b"x" * 36 + b'"""\n',
    }
    wheel = make_wheel(tmp_path / "dist", files)
    result = run_cli(["verify", str(wheel), "--json"], cwd=tmp_path)
    assert result.code == 0, result.output
    assert not [f for w in json.loads(result.stdout)["wheels"] for f in w["findings"] if f["rule"] == "secret"]
