"""adapters/http_policy: credentials go over plain http only to this machine, unless --allow-insecure-http."""

from __future__ import annotations

import pytest

from kestrel_release.adapters import http_policy
from kestrel_release.adapters.pypi import config as pypi_config
from kestrel_release.errors import UsageError


@pytest.fixture(autouse=True)
def _reset():
    http_policy.allow_insecure(False)
    yield
    http_policy.allow_insecure(False)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.5.6.7", "::1", "[::1]", "localhost", "LOCALHOST.", "x.localhost"])
def test_loopback(host) -> None:
    assert http_policy.is_loopback(host)


@pytest.mark.parametrize(
    "host",
    ["10.0.0.1", "192.168.1.2", "pkgs.example.com", "localhost.example.com", "", None, "127.0.0.1.nip.io", "0.0.0.0"],
)
def test_not_loopback(host) -> None:
    assert not http_policy.is_loopback(host)


@pytest.mark.parametrize(
    "url",
    ["https://pkgs.example.com/legacy/", "http://127.0.0.1:8080/", "http://[::1]:9/x", "http://localhost/legacy/"],
)
def test_https_and_loopback_http_pass(url) -> None:
    http_policy.require_secure(url, "the upload URL")


def test_http_to_another_host_is_refused_naming_the_flag_and_no_credential() -> None:
    with pytest.raises(UsageError) as exc:
        http_policy.require_secure("http://__token__:s3cret-pw@pkgs.example.com:8080/legacy/", "the upload URL of corp")
    assert exc.value.exit_code == 2
    assert "the upload URL of corp http://pkgs.example.com:8080/legacy/ is plain http://" in exc.value.message
    assert "--allow-insecure-http" in (exc.value.hint or "") and "s3cret-pw" not in str(exc.value)
    http_policy.allow_insecure(True)
    http_policy.require_secure("http://__token__:s3cret-pw@pkgs.example.com:8080/legacy/", "the upload URL of corp")


def test_resolve_index_refuses_an_insecure_upload_or_simple_url(tmp_path) -> None:
    rc = str(tmp_path / "none.pypirc")
    with pytest.raises(UsageError, match=r"upload URL of corp http://pkgs.example.com/legacy/ is plain http"):
        pypi_config.resolve_index("corp", {}, "http://u:pw@pkgs.example.com/legacy/", None, rc, env={})
    with pytest.raises(UsageError, match=r"simple index URL of corp http://mirror.example.com/simple/"):
        pypi_config.resolve_index(
            "corp", {}, "https://pkgs.example.com/legacy/", "http://mirror.example.com/simple/", rc, env={}
        )
    assert (
        pypi_config.resolve_index("corp", {}, "http://127.0.0.1:8080/legacy/", None, rc, env={}).upload_url
        == "http://127.0.0.1:8080/legacy/"
    )


@pytest.mark.parametrize("url", ["https://h.example/\r\nX: 1", "https://h.example/\n", "https://h.example/\x00a"])
def test_a_url_with_a_control_character_is_a_usage_error_that_does_not_quote_it(url):
    with pytest.raises(UsageError) as caught:
        http_policy.require_secure(url, "the upload URL")
    assert "h.example" not in str(caught.value) and "the upload URL holds" in str(caught.value)
