"""Bad values in credentials, URLs, paths and ports: the documented exit code, one `error:` line, no traceback,
no secret, and with --json one document. Before, each of these was exit 1 "internal error" (UnicodeEncodeError,
InvalidURL/InvalidHeader, ValueError: embedded null byte, OSError: address in use)."""

from __future__ import annotations

import json
import socket

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli, run_in_process

FAST = {"KESTREL_RELEASE_PUBLISH_RETRIES": "1", "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05"}
SECRET = "pypi-sécret€-not-latin1-4f9a2c"


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(root / "dist-all", pythons=("3.12",))
    return root


def test_a_password_outside_latin1_is_one_line_without_the_password(project):
    with PypiSandbox() as box:
        args = ["publish", "--project", str(project), "--target", "sandbox", "--repository-url", box.upload_url]
        env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": SECRET, **FAST}
        result = run_in_process([*args, "--yes"], env=env)
        assert_one_line_error(result, 6, "the password for sandbox is not usable", "cannot carry (not Latin-1)")
        assert "sécret" not in result.output and SECRET not in result.output
        as_json = run_in_process([*args, "--yes", "--json"], env=env)
        assert json.loads(as_json.stdout)["error"]["exit_code"] == 6 and "sécret" not in as_json.output


@pytest.mark.parametrize("url", ["https://upload.example.org/legacy/\r\nX-Injected: 1", "https://a.example/\nlegacy/"])
def test_a_repository_url_with_a_line_break_is_a_usage_error(project, url):
    args = ["publish", "--project", str(project), "--target", "custom", "--repository-url", url, "--yes"]
    result = run_in_process(args, env={"TWINE_USERNAME": "u", "TWINE_PASSWORD": "p-123456", **FAST})
    assert_one_line_error(result, 2, "holds a line break")
    assert "X-Injected" not in result.stderr


def test_a_nul_byte_in_out_dir_is_a_usage_error(project):
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace("[tool.kestrel-release]\n", '[tool.kestrel-release]\nout_dir = "dist\\u0000all"\n')
    )
    result = run_in_process(["verify", "--project", str(project)])
    assert_one_line_error(result, 2, "out_dir: holds a NUL byte")
    result = run_in_process(["verify", "--project", str(project), "--json"])
    assert json.loads(result.stdout)["error"]["exit_code"] == 2


@pytest.mark.parametrize("kind", ["pypi", "github"])
def test_sandbox_on_a_port_in_use_is_a_usage_error(tmp_path, kind):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = ["sandbox", kind, "--port", str(port)] + (["--repo", "o/n"] if kind == "github" else [])
        result = run_cli(args, cwd=tmp_path, timeout=120)
    assert_one_line_error(result, 2, f"--port {port} on 127.0.0.1 is in use")
