"""GitHub releases through PyGithub: the only module that imports `github`.

PyGithub is built with retry=None and no throttling so that this module owns the
policy: 5xx and connection errors retry with jittered exponential backoff; rate limits
(403/429 with X-RateLimit-Reset or Retry-After) wait up to a cap, then fail saying when
to retry; 401 and everything else become one-line PublishErrors. Uploads survive the
known failure modes: a 502 that leaves a `starter` asset, and a retry answered 422
`already_exists` because the first attempt actually landed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kestrel_release.adapters.github import ratelimit, sending
from kestrel_release.adapters.github.errors import ForeignOrigin, translate
from kestrel_release.adapters.github.errors import ReleaseExists as ReleaseExists
from kestrel_release.adapters.github.models import Asset, Release

# Re-exported: callers ask this module for the token and the target's OWNER/NAME.
from kestrel_release.adapters.github.target import TOKEN_VARIABLES as TOKEN_VARIABLES
from kestrel_release.adapters.github.target import repo_from_remote as repo_from_remote
from kestrel_release.adapters.github.target import resolve_token as resolve_token
from kestrel_release.adapters.github.target import target_repo as target_repo
from kestrel_release.adapters.github.target import token_variable as token_variable
from kestrel_release.adapters.retry import RetryPolicy, Transient
from kestrel_release.errors import KestrelError, PublishError
from kestrel_release.ui import console


class GithubClient:
    """One repository on one GitHub (or Enterprise, or the emulator) with our retry policy."""

    def __init__(self, api_url: str, token: str, repo: str, *, timeout: float, policy: RetryPolicy) -> None:
        from github import Auth, Github

        from kestrel_release.adapters import http_policy

        http_policy.require_secure(api_url, "the GitHub API URL")  # the token goes in every request
        from kestrel_release.adapters.github import transport as github_http

        self.policy = policy
        self.repo_name = repo
        self._api_origin = github_http.origin(api_url)
        self._origins = github_http.allowed_origins(api_url)
        self._limits = ratelimit.RateLimits(policy)
        # PyGithub objects behind the dataclasses handed out, by id: they never leave this module.
        self._release_objs: dict[int, Any] = {}
        self._asset_objs: dict[int, Any] = {}
        self._gh = Github(
            base_url=api_url.rstrip("/"),
            auth=Auth.Token(token),
            timeout=int(max(timeout, 1)),
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            per_page=100,
        )
        github_http.harden(self._gh)  # rate-limit headers checked, bodies bounded, before PyGithub parses them
        self.repo = self.call(f"opening {repo}", lambda: self._gh.get_repo(repo))

    # -- policy -----------------------------------------------------------------
    def call(
        self,
        what: str,
        fn: Callable[[], Any],
        on_retry: Callable[[], None] | None = None,
        deadline: float | None = None,
        abandon: Callable[[], None] | None = None,
    ) -> Any:
        """Run `fn` under the retry policy, each attempt within a whole-request deadline
        (default publish.timeout); translate failures into PublishError."""
        from kestrel_release.adapters import _deadline

        return self.policy.run(
            lambda: _deadline.call(fn, deadline or self.policy.timeout, f"GitHub: {what}", abandon),
            classify=lambda exc: self._classify(exc, what),
            on_retry=on_retry,
            warn=lambda failure, attempt, pause: (
                f"{what}: {failure}; retrying in {pause:.1f} s ({attempt}/{self.policy.retries})"
            ),
            give_up=lambda failure, attempts: PublishError(
                f"GitHub failed while {what} after {attempts} attempt(s): {failure}",
                "nothing published was removed; run the same command again",
            ),
        )

    def _classify(self, exc: Exception, what: str) -> Exception | None:
        """GitHub's failures for the retry loop: Transient, RetryNow after a rate-limit wait, or the
        PublishError to stop with."""
        import requests
        from github import GithubException

        from kestrel_release.adapters import _deadline
        from kestrel_release.files import safejson

        if isinstance(exc, KestrelError):  # already one clear line (a refused redirect, a changed file)
            return exc
        if isinstance(exc, requests.exceptions.SSLError):  # retrying cannot fix a certificate
            return PublishError(
                f"TLS certificate check failed while {what}",
                "if GitHub Enterprise uses a private CA, point REQUESTS_CA_BUNDLE (or SSL_CERT_FILE) at its CA bundle",
            )
        if isinstance(exc, (_deadline.DeadlineExceeded, Transient)):
            return Transient(str(exc))
        if isinstance(exc, (RecursionError, safejson.Unusable)):  # JSON too deep or too large for anyone
            reason = str(exc) if isinstance(exc, safejson.Unusable) else "nested too deeply to read"
            return PublishError(
                f"GitHub's answer while {what} was refused: {reason}", "check --api-url / targets.github.api_url"
            )
        if isinstance(exc, GithubException):
            limited = self._limits.wait(exc, what)
            if limited is not None:
                return limited
            if exc.status < 500:
                return translate(exc, what, self.repo_name)
            return Transient(f"HTTP {exc.status}")
        if isinstance(exc, (requests.exceptions.ConnectionError, requests.exceptions.Timeout)):
            return Transient(f"connection error ({type(exc).__name__})")
        return None

    # -- commits and tags -------------------------------------------------------
    def commit_exists(self, sha: str) -> bool:
        return self._maybe(f"looking up commit {sha[:12]}", lambda: self.repo.get_commit(sha)) is not None

    def default_head(self) -> str:
        branch = self.repo.default_branch
        return self.call(f"reading {branch}", lambda: self.repo.get_commit(branch)).sha

    def tag_sha(self, tag: str) -> str | None:
        ref = self._maybe(f"reading tag {tag}", lambda: self.repo.get_git_ref(f"tags/{tag}"))
        return ref.object.sha if ref is not None else None

    def set_tag(self, tag: str, sha: str) -> None:
        """Point `tag` at `sha`: create it, or move it (force: a nightly tag is rewritten)."""
        ref = self._maybe(f"reading tag {tag}", lambda: self.repo.get_git_ref(f"tags/{tag}"))
        if ref is None:
            try:
                self.call(f"creating tag {tag}", lambda: self.repo.create_git_ref(f"refs/tags/{tag}", sha))
                return
            except PublishError as exc:  # 422: another publisher created it since our read
                ref = self._maybe(f"reading tag {tag}", lambda: self.repo.get_git_ref(f"tags/{tag}"))
                if getattr(exc, "status", None) != 422 or ref is None:
                    raise
        if ref.object.sha != sha:
            self.call(f"moving tag {tag}", lambda: ref.edit(sha, force=True))

    # -- releases ---------------------------------------------------------------
    def can_push(self) -> bool | None:
        """Whether the token's user may write to the repository; None when the server does not say."""
        try:
            permissions = self.repo.permissions  # absent on some servers and emulators
        except Exception:  # an answer without it tells nothing either way
            return None
        push = getattr(permissions, "push", None) if permissions is not None else None
        return push if isinstance(push, bool) else None

    def repo_html_url(self) -> str:
        """The repository's web address (where release download links start)."""
        return self.repo.html_url

    def find_release(self, tag: str) -> Release | None:
        """The release for `tag`, drafts included (GitHub hides drafts from the by-tag lookup)."""
        rel = self._maybe(f"reading release {tag}", lambda: self.repo.get_release(tag))
        if rel is not None:
            return self._release(rel)
        drafts = self.call("listing releases", lambda: [r for r in self.repo.get_releases() if r.tag_name == tag])
        return self._release(drafts[0]) if drafts else None

    def create_release(self, tag: str, name: str, body: str, *, prerelease: bool, target: str) -> Release:
        """A new draft release; ReleaseExists when another publisher made one for `tag` meanwhile."""
        obj = self.call(
            f"creating release {tag}",
            lambda: self.repo.create_git_release(
                tag, name, body, draft=True, prerelease=prerelease, target_commitish=target, make_latest="false"
            ),
        )
        try:
            return self._release(obj)
        except ForeignOrigin:  # our own draft, unusable: removed where its own URL allows (a read-back
            if self._is_own(obj.raw_data.get("url")):  # finds nothing to publish then)
                with contextlib.suppress(KestrelError):
                    self.call(f"removing the draft {tag}", lambda: _ignore_404(obj.delete_release))
            raise

    def update_release(
        self, rel: Release, *, name: str, body: str, prerelease: bool, draft: bool = False, make_latest: str = "false"
    ) -> Release:
        obj = self._release_objs[rel.id]
        # PyGithub always sends `prerelease` (default False): pass it, or a nightly turns "latest".
        return self._release(
            self.call(
                f"updating release {rel.tag}",
                lambda: obj.update_release(name, body, draft=draft, prerelease=prerelease, make_latest=make_latest),
            )
        )

    def releases(self) -> list[Release]:
        """Every release, drafts included (all pages)."""
        return [self._release(r) for r in self.call("listing releases", lambda: list(self.repo.get_releases()))]

    def delete_release(self, rel: Release) -> None:
        """Delete a release; its tag stays (GitHub never deletes it with the release)."""
        obj = self._release_objs[rel.id]
        self.call(f"deleting release {rel.tag}", lambda: _ignore_404(obj.delete_release))

    def immutable_releases(self) -> bool:
        """Whether the repository makes published releases immutable.

        GET /repos/{o}/{r}/immutable-releases answers 200 {"enabled": true} or 404 when off; a
        token without admin read, or a GitHub Enterprise without the endpoint, answers 403/404
        too, so a published release flagged `immutable` also counts."""
        url = f"{self.repo.url}/immutable-releases"
        try:
            answer = self._maybe(
                "reading the immutable-releases setting",
                lambda: self.repo._requester.requestJsonAndCheck("GET", url)[1],
            )
        except PublishError as exc:
            if getattr(exc, "status", None) != 403:
                raise
            answer = None
        if isinstance(answer, dict) and answer.get("enabled"):
            return True
        latest = self._maybe("reading the latest release", self.repo.get_latest_release)
        return bool(latest is not None and latest.raw_data.get("immutable"))

    def _release(self, obj: Any) -> Release:
        self._release_objs[obj.id] = obj
        # What GitHub sent, read without PyGithub's lazy completion: `raw_data` or a field GitHub left
        # out would cost one more GET per release of a listing.
        raw = getattr(obj, "_rawData", None) or obj.raw_data
        tag = raw.get("tag_name") or ""
        self._check_own(raw.get("url"), f"release {tag}")
        self._check_own(raw.get("upload_url"), f"the uploads of release {tag}")
        return Release(
            obj.id,
            raw.get("tag_name") or "",
            raw.get("name") or "",
            bool(raw.get("draft")),
            bool(raw.get("prerelease")),
            bool(raw.get("immutable")),
            raw.get("html_url") or "",
            raw.get("upload_url") or "",
        )

    # -- assets -----------------------------------------------------------------
    def list_assets(self, rel: Release) -> list[Asset]:
        obj = self._release_objs[rel.id]
        return self.call(f"listing assets of {rel.tag}", lambda: [self._asset(a) for a in obj.get_assets()])

    def delete_asset(self, asset: Asset) -> None:
        obj = self._asset_objs[asset.id]
        self.call(f"deleting {asset.name}", lambda: _ignore_404(obj.delete_asset))

    def rename_asset(self, asset: Asset, name: str, label: str | None = None) -> Asset:
        """Give `asset` a new name (its label stays unless `label` is given)."""
        obj = self._asset_objs[asset.id]
        label = asset.label if label is None else label
        return self.call(f"renaming {asset.name} to {name}", lambda: self._asset(obj.update_asset(name, label=label)))

    def _asset(self, obj: Any) -> Asset:
        self._asset_objs[obj.id] = obj
        raw = obj.raw_data
        self._check_own(raw.get("url"), f"asset {raw.get('name')}")
        return Asset(
            obj.id,
            obj.name,
            raw.get("label") or "",
            raw.get("state", "uploaded"),
            obj.size,
            raw.get("digest"),
            obj.browser_download_url,
        )

    def upload(
        self,
        rel: Release,
        path: Path,
        name: str,
        sha256: str,
        advance: Callable[[int], None] | None = None,
        *,
        size: int | None = None,
        shown: str | None = None,
    ) -> Asset:
        """Upload `path` as `name`, confirmed: the bytes sent are the verified ones (`sha256`, `size`)
        and GitHub's answer reports exactly them (state, size, digest); anything else removes the
        asset and stops. A retry that finds its own earlier attempt accepts it. `shown`: the name
        errors use (the file's, when `name` is a temporary one)."""
        size = path.stat().st_size if size is None else size
        shown = shown or name
        opened: list = []
        obj = self._release_objs[rel.id]

        def attempt() -> Asset:
            from github import GithubException

            reader = None
            try:
                with open(path, "rb") as fh:
                    opened.append(fh)
                    now = os.fstat(fh.fileno()).st_size
                    if now != size:  # fewer bytes than announced would hang the request
                        raise sending.changed(shown, f"it now has {now} bytes, the verified file {size}")
                    reader = sending.SendingReader(fh, size, advance)
                    answer = self._asset(
                        obj.upload_asset_from_memory(reader, size, name, content_type="application/octet-stream")
                    )
                sending.check(reader, answer, shown, sha256, size, self._discard)
                return answer
            except GithubException as exc:
                if exc.status != 422 or "already_exists" not in str(exc.data):
                    raise
            existing = self._named(rel, name)
            if existing is not None and existing.same_bytes(size, sha256, need_digest=False):
                if reader is not None:  # what this attempt sent must still be the verified bytes
                    sending.check(reader, existing, shown, sha256, size, self._discard)
                console.debug(f"{name}: an earlier attempt landed; accepted it")
                return existing
            if existing is not None:
                self.delete_asset(existing)
            raise Transient(f"{name} was taken by an incomplete asset (removed)")

        def cleanup() -> None:  # a 502 may leave an empty `starter` asset holding the name
            broken = self._named(rel, name)
            if broken is not None and broken.state != "uploaded":
                self.delete_asset(broken)

        def abandon() -> None:  # deadline passed: closing the file stops the abandoned request sending
            for fh in opened:
                fh.close()

        from kestrel_release.adapters._deadline import upload_deadline

        return self.call(
            f"uploading {name}",
            attempt,
            on_retry=cleanup,
            deadline=upload_deadline(self.policy.timeout, size),
            abandon=abandon,
        )

    def _discard(self, asset: Asset) -> None:
        """Remove an asset that holds the wrong bytes (best effort: the next run's cleanup finds it too)."""
        with contextlib.suppress(KestrelError):
            self.delete_asset(asset)

    def _is_own(self, url: str | None) -> bool:
        from kestrel_release.adapters.github import transport as github_http

        return not url or github_http.origin(url) in self._origins

    def _check_own(self, url: str | None, what: str) -> None:
        """Refuse a URL of GitHub's answer that PyGithub would send the token to on another origin."""
        from kestrel_release.adapters.github import transport as github_http

        if not self._is_own(url):
            raise ForeignOrigin(
                f"GitHub's answer puts {what} at {github_http.origin(url or '')}, another origin than the "
                f"API's ({self._api_origin}); nothing was sent there: the token goes only to the API's origin",
                "check --api-url / targets.github.api_url (GitHub Enterprise serves uploads on the API's own host)",
            )

    def _named(self, rel: Release, name: str) -> Asset | None:
        return next((a for a in self.list_assets(rel) if a.name == name), None)

    def _maybe(self, what: str, fn: Callable[[], Any]) -> Any:
        """`fn()`, or None when GitHub answers 404 (or 422 for an unknown commit)."""
        try:
            return self.call(what, fn)
        except PublishError as exc:
            if getattr(exc, "status", None) in (404, 422):
                return None
            raise


def _ignore_404(fn: Callable[[], Any]) -> None:
    from github import GithubException

    try:
        fn()
    except GithubException as exc:  # already gone (a retried delete that landed)
        if exc.status != 404:
            raise
