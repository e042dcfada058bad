"""adapters/github_http: rate-limit headers PyGithub would crash on are dropped before it parses them."""

from __future__ import annotations

from requests.structures import CaseInsensitiveDict

from kestrel_release.adapters.github import transport as github_http


def test_nonsense_rate_limit_headers_are_dropped_and_numbers_kept() -> None:
    headers = CaseInsensitiveDict(
        {
            "x-ratelimit-reset": "soon",
            "X-RateLimit-Remaining": "1e400",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Used": "-5",
            "Retry-After": "nan",  # not PyGithub's to parse (retry=None): adapters/github/client.py validates it
            "Content-Type": "application/json",
        }
    )
    github_http.scrub(headers)
    assert dict(headers) == {"X-RateLimit-Limit": "5000", "Retry-After": "nan", "Content-Type": "application/json"}


def test_harden_finds_pygithubs_connection_class() -> None:
    from github import Auth, Github

    gh = Github(base_url="http://127.0.0.1:9/api/v3", auth=Auth.Token("t" * 8), retry=None)
    assert github_http.harden(gh) is True


def test_an_origin_spells_out_its_port_and_github_com_may_upload_on_its_upload_host() -> None:
    assert github_http.origin("https://api.github.com/repos/o/r") == "https://api.github.com:443"
    assert github_http.origin("http://127.0.0.1:8080/api/uploads/x{?name,label}") == "http://127.0.0.1:8080"
    assert github_http.origin("http://127.0.0.1:notaport/x") == "http://127.0.0.1:(not a port)"
    assert github_http.allowed_origins("https://api.github.com") == {
        "https://api.github.com:443",
        "https://uploads.github.com:443",
    }
    assert github_http.allowed_origins("https://ghe.example/api/v3") == {"https://ghe.example:443"}
