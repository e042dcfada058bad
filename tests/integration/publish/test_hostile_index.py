"""publish against an index that answers as a hostile or broken server would (tests/integration/hostile_http.py).

What a user sees: the one `error:` line and its exit code, in bounded time (the bounds are hang guards,
far above what the run needs), and never a secret.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.hostile_http import HostileServer, nested_json

PASSWORD = "s3cr3t-Pa55word-of-any-shape"
ENV = {
    "TWINE_USERNAME": "__token__",
    "TWINE_PASSWORD": PASSWORD,
    "KESTREL_RELEASE_PUBLISH_TIMEOUT": "3",
    "KESTREL_RELEASE_PUBLISH_RETRIES": "1",
    "KESTREL_RELEASE_PUBLISH_BACKOFF": "0.05",
    "KESTREL_RELEASE_PUBLISH_RATE_LIMIT_WAIT_CAP": "1",
}


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "kernels", pythons=("3.12",))
    make_dist(root / "dist-all", pythons=("3.12",))
    return root


@pytest.fixture
def srv():
    with HostileServer() as server:
        yield server


def lists_the_upload_after_it(srv, project) -> None:
    """The plan's read finds nothing; publish's read-back after the upload finds the file with our bytes
    (an upload is reported only once the index was read back holding it)."""
    srv.route("GET", "/simple/", status=404, body=b"", count=1)
    (wheel,) = (project / "dist-all").glob("*.whl")
    link = f'<a href="/files/{wheel.name}#sha256={hashlib.sha256(wheel.read_bytes()).hexdigest()}">{wheel.name}</a>'
    srv.route("GET", "/simple/", body=link.encode())


def publish(project, srv, *extra, env=None):
    start = time.monotonic()
    result = run_cli(
        [
            "publish",
            "--project",
            str(project),
            "--target",
            "hostile",
            "--repository-url",
            srv.url + "/legacy/",
            "--yes",
            *extra,
        ],
        env={**ENV, **(env or {})},
        timeout=300,
    )
    return result, time.monotonic() - start


@pytest.mark.parametrize("value", ["-1", "nan", "1e400", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_nonsense_or_past_retry_after_falls_back_to_the_backoff(project, srv, value) -> None:
    srv.route("POST", "/legacy/", status=503, headers={"Retry-After": value})
    result, seconds = publish(project, srv)
    assert_one_line_error(result, 6, "HTTP 503", "gave up after 2 attempts")
    assert "retry 1/1 in 0." in result.stderr  # the policy's backoff (or "now"), not the header's value
    assert seconds < 60


def test_a_far_retry_after_date_is_clamped_to_the_cap(project, srv) -> None:
    srv.route("POST", "/legacy/", status=429, headers={"Retry-After": "Thu, 01 Jan 2099 00:00:00 GMT"})
    result, seconds = publish(project, srv)
    assert_one_line_error(result, 6, "HTTP 429", "gave up after 2 attempts")
    assert "retry 1/1 in 1.0 s" in result.stderr  # publish.rate_limit_wait_cap = 1
    assert seconds < 60


def test_a_json_api_trickling_its_answer_is_given_up_after_publish_timeout(project, srv) -> None:
    srv.route("GET", "/pypi/", trickle=2.0, body=b'{"releases": {}}' + b" " * 100)  # 200+ s if waited for
    srv.route("POST", "/legacy/", body=b"OK")
    lists_the_upload_after_it(srv, project)
    result, seconds = publish(project, srv)
    assert result.code == 0, result.output
    warning = next(line for line in result.stderr.splitlines() if "project quota" in line)
    assert "no complete answer within 3 s" in warning and "uploading without the forecast" in warning
    assert seconds < 60


def test_a_deeply_nested_pep691_page_is_one_line_exit_6(project, srv) -> None:
    srv.route(
        "GET", "/simple/", headers={"Content-Type": "application/vnd.pypi.simple.v1+json"}, body=nested_json(100_000)
    )
    result, _ = publish(project, srv)
    assert_one_line_error(result, 6, "malformed PEP 691 page", "nested deeper than 64 levels")
    assert not [r for r in srv.requests if r[0] == "POST"]  # refused before any upload


def test_an_endless_simple_page_is_refused_at_its_size_bound(project, srv) -> None:
    srv.route("GET", "/simple/", headers={"Content-Type": "text/html"}, body=b"<a>" * (6 * 1024 * 1024))
    result, seconds = publish(project, srv, env={"KESTREL_RELEASE_PUBLISH_TIMEOUT": "30"})
    assert_one_line_error(result, 6, "is larger than 16 MiB")
    assert seconds < 120


def test_a_deeply_nested_json_api_answer_skips_the_check_with_a_warning(project, srv) -> None:
    srv.route("GET", "/pypi/", headers={"Content-Type": "application/json"}, body=nested_json(100_000))
    srv.route("POST", "/legacy/", body=b"OK")
    lists_the_upload_after_it(srv, project)
    result, _ = publish(project, srv)
    assert result.code == 0, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    warning = next(line for line in result.stderr.splitlines() if "project quota" in line)
    assert "nested deeper than 64 levels" in warning


def test_the_14_day_rule_reads_the_json_api_within_the_deadline_too(project, srv) -> None:
    """`verify --target pypi` reads /pypi/<name>/<version>/json: a trickle is one warning, in bounded time."""
    srv.route("GET", "/pypi/", trickle=2.0, body=b'{"urls": []}' + b" " * 100)
    project.joinpath("pyproject.toml").write_text(
        project.joinpath("pyproject.toml").read_text()
        + f'[tool.kestrel-release.targets.pypi]\nrepository_url = "{srv.url}/legacy/"\nsimple_url = "{srv.url}/simple/"\n'
    )
    start = time.monotonic()
    result = run_cli(["verify", "--project", str(project), "--target", "pypi"], env=ENV, timeout=300)
    assert "Traceback" not in result.output
    assert "no complete answer within 3 s" in result.output and "14-day rule was not checked" in result.output
    assert time.monotonic() - start < 60


def test_a_reason_phrase_echoing_the_authorization_header_prints_no_credential(project, srv) -> None:
    import base64

    srv.route("POST", "/legacy/", status=403, reason=lambda headers: "Forbidden: " + headers.get("Authorization", ""))
    # 80 columns: the failure's table cell wraps, and the echoed credential with it
    result, _ = publish(project, srv, env={"TWINE_USERNAME": "deploy", "COLUMNS": "80"})
    assert_one_line_error(result, 6, "rejected user 'deploy'", "Forbidden: Basic ****")
    assert srv.requests and srv.requests[-1][2]["Authorization"].startswith("Basic ")  # it really was echoed
    encoded = base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()
    assert PASSWORD not in result.output and encoded not in result.output and encoded[:20] not in result.output


def test_plain_http_to_another_host_is_refused_before_any_credential_is_sent(project) -> None:
    result = run_cli(
        [
            "publish",
            "--project",
            str(project),
            "--target",
            "corp",
            "--repository-url",
            f"http://__token__:{PASSWORD}@pkgs.example.invalid/legacy/",
            "--yes",
        ],
        env=ENV,
        timeout=120,
    )
    assert_one_line_error(result, 2, "http://pkgs.example.invalid/legacy/ is plain http://", "--allow-insecure-http")
    assert PASSWORD not in result.output


def test_plain_http_to_another_github_api_is_refused(tmp_path) -> None:
    from tests.factories import build_output, make_github_project

    project = make_github_project(tmp_path / "kernels", "0.1.0")
    build_output(project, "0.1.0", "a" * 40)
    result = run_cli(
        ["publish", "--target", "github", "--project", str(project), "--api-url", "http://ghe.example.invalid/api/v3"],
        env={"GH_TOKEN": "any-shaped-token-123"},
        timeout=120,
    )
    assert_one_line_error(
        result, 2, "GitHub API URL http://ghe.example.invalid/api/v3 is plain http://", "--allow-insecure-http"
    )


def test_allow_insecure_http_lets_an_upload_to_another_host_go(project) -> None:
    from tests.integration.hostile_http import lan_address

    address = lan_address()
    if address is None:
        pytest.skip("no non-loopback network interface on this machine")
    with HostileServer(host=address) as lan:
        lan.route("POST", "/legacy/", body=b"OK")
        refused, _ = publish(project, lan)
        assert_one_line_error(refused, 2, "--allow-insecure-http")
        assert lan.requests == []  # nothing reached the server, credentials least of all
        lists_the_upload_after_it(lan, project)
        allowed, _ = publish(project, lan, "--allow-insecure-http")
        assert allowed.code == 0, allowed.output
        assert any(method == "POST" and "Authorization" in headers for method, _, headers in lan.requests)


def test_removing_a_truncated_copy_from_a_trickling_index_is_given_up_after_publish_timeout(project, srv) -> None:
    wheel = next((project / "dist-all").glob("*.whl"))
    name = wheel.name
    srv.route(
        "GET",
        "/simple/",
        headers={"Content-Type": "text/html"},
        body=f'<a href="/packages/{name}#sha256={"0" * 64}">{name}</a>'.encode(),
    )
    srv.route("GET", "/packages/", body=wheel.read_bytes()[:100])  # a cut upload's leftover
    srv.route("DELETE", "/_sandbox/files/", trickle=2.0, body=b"removed" * 20)
    result, seconds = publish(project, srv)
    assert_one_line_error(result, 6, "truncated copy of the local file", "keeps partial files")
    assert seconds < 60
