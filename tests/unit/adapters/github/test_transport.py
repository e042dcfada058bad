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
