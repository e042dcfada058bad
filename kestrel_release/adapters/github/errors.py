"""GitHub's error answers as one-line PublishErrors (apart from adapters/github/client.py to keep each short)."""

from __future__ import annotations

from typing import Any

from kestrel_release.errors import PublishError


class ReleaseExists(PublishError):
    """Creating a release found its tag taken (422 already_exists): another publisher was first."""


class ForeignOrigin(PublishError):
    """GitHub's answer names a URL on another origin than the API's: the token is never sent there."""


def translate(exc: Any, what: str, repo: str) -> PublishError:
    """A GithubException (status < 500, no rate limit) as the one-line PublishError to stop with;
    `status` is kept on it, and a 422 `already_exists` on a release's tag is a ReleaseExists."""
    data = exc.data if isinstance(exc.data, dict) else {}
    message = str(data.get("message") or exc.message or "").strip().replace("\n", " ")
    details = "; ".join(str(e.get("message") or e.get("code")) for e in data.get("errors") or [] if isinstance(e, dict))
    text = f"GitHub answered {exc.status} while {what}: {message}" + (f" ({details})" if details else "")
    if exc.status == 401:
        err = PublishError(
            f"GitHub rejected the token (401 {message}) while {what}",
            "check GH_TOKEN/GITHUB_TOKEN (or --token-env) and its scopes",
        )
    elif exc.status == 404 and what.startswith("opening"):
        err = PublishError(
            f"repository {repo} not found (or the token cannot see it)",
            "check --repo / targets.github.repo and the token's access",
        )
    elif exc.status == 422 and any(
        isinstance(e, dict) and e.get("code") == "already_exists" and e.get("resource") == "Release"
        for e in data.get("errors") or []
    ):
        err = ReleaseExists(text, "run the same command again: it joins the existing release")
    else:
        err = PublishError(text)
    err.status = exc.status  # type: ignore[attr-defined]
    return err
