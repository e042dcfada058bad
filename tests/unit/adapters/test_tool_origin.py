"""The pinned tool source `ci init` writes: what counts as one exact, fetchable commit, and how a remote reads."""

from __future__ import annotations

import pytest

from kestrel_release.adapters import tool_origin

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (f"git+https://github.com/acme/kestrel-release@{SHA}", None),
        (f"git+https://git.example:8443/tools/kestrel-release.git@{SHA}", None),
        ("kestrel-release==0.1.0", "is not a git+https:// URL"),
        ("git+https://github.com/acme/kestrel-release", "does not end in @<full commit id>"),
        (f"git+https://github.com/acme/kestrel-release@{SHA[:12]}", "does not end in @<full commit id>"),
        (f"git+https://u:p@github.com/acme/kestrel-release@{SHA}", "carries credentials"),
        (f"git+https://github.com@{SHA}", "is not a plain https URL"),
        (f"git+https://github.com/acme/k$(id)@{SHA}", "is not a plain https URL"),
        (f"git+http://github.com/acme/kestrel-release@{SHA}", "is not a git+https:// URL"),
    ],
)
def test_problem(source, why):
    found = tool_origin.problem(source)
    assert (found is None) if why is None else (why in (found or "")), found


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("https://github.com/acme/k.git", "https://github.com/acme/k.git"),
        ("https://x-access-token:ghs_abc@github.com/acme/k.git", "https://github.com/acme/k.git"),
        ("git@github.com:acme/k.git", "https://github.com/acme/k.git"),
        ("ssh://git@github.com:22/acme/k", "https://github.com/acme/k"),
        ("/srv/git/k.git", None),
        ("file:///srv/git/k.git", None),
        ("http://github.com/acme/k.git", None),
    ],
)
def test_https_url(remote, url):
    assert tool_origin.https_url(remote) == url


def test_shown_drops_userinfo():
    assert tool_origin.shown(f"git+https://u:tok@h.example/a/b@{SHA}") == f"git+https://h.example/a/b@{SHA}"
