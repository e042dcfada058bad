"""The emulator's REST operations, one method per route (called with the state lock held).

Each returns (status, payload, headers) or raises ApiError; status codes, `Location` and
`Link` headers follow docs/github-releases.md and the recorded octokit traffic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode, urlsplit

from kestrel_release.sandbox.github import payloads as J
from kestrel_release.sandbox.github.state import ApiError, Release, Repo, State, not_found

if TYPE_CHECKING:
    from email.message import Message


Args = dict[str, str]  # the route's named groups, and "method"
Body = dict[str, Any]  # the request's JSON object, as the client sent it
Query = dict[str, list[str]]  # parse_qs of the query string
Answer = tuple[int, Any, dict[str, str]]  # (status, payload: JSON, asset bytes or None; headers)


class RouteCore(Protocol):
    """What the routes need of github_server.Core (described here: github_server imports this module)."""

    state: State
    base: str

    def take_fault(self, kind: str) -> dict | None: ...


def page(handler: Routes, items: list[dict[str, Any]], query: Query) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Slice `items` like GitHub (per_page default 30, max 100) and build the Link header."""
    try:
        per_page = min(max(int((query.get("per_page") or ["30"])[0]), 1), 100)
        number = max(int((query.get("page") or ["1"])[0]), 1)
    except ValueError:
        raise ApiError(422, "Invalid pagination parameters") from None
    last = max(1, -(-len(items) // per_page))
    path = urlsplit(handler.path).path

    def link(n: int, rel: str) -> str:
        params = {k: v[0] for k, v in query.items()} | {"per_page": per_page, "page": n}
        return f'<{handler.core.base}{path}?{urlencode(params)}>; rel="{rel}"'

    links = []
    if number > 1:
        links += [link(number - 1, "prev"), link(1, "first")]
    if number < last:
        links += [link(number + 1, "next"), link(last, "last")]
    return items[(number - 1) * per_page : number * per_page], ({"Link": ", ".join(links)} if links else {})


class Routes:
    """Mixed into the HTTP handler: `self.core` holds state and base URL."""

    foreign: dict | None = None  # reset per request by the handler
    foreign_taken: bool = False

    if TYPE_CHECKING:  # provided by github_server.Handler and BaseHTTPRequestHandler
        headers: Message
        path: str

        @property
        def core(self) -> RouteCore: ...

    def _rel(self, repo: Repo, rel: Release) -> dict[str, Any]:
        state = self.core.state
        if not self.foreign_taken:  # one foreign_upload_url fault covers every release of one answer
            self.foreign, self.foreign_taken = self.core.take_fault("foreign_upload_url"), True
        uploads = self.foreign["origin"] if self.foreign else None
        return J.release_json(self.core.base, repo, rel, state.release_assets(rel), uploads)

    # -- repository and commits ---------------------------------------------------
    def h_get_repo(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        return 200, J.repo_json(self.core.base, repo), {}

    def h_get_immutable(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        # GitHub answers 404 (not `enabled: false`) when the setting is off.
        if not repo.immutable_releases:
            raise not_found()
        return 200, {"enabled": True, "enforced_by_owner": False}, {}

    def h_set_immutable(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        # Only future releases become immutable; published ones keep their flag either way.
        repo.immutable_releases = args["method"] == "PUT"
        return 204, None, {}

    def h_get_commit(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        sha = repo.resolve(args["ref"])
        if sha is None:
            raise ApiError(422, f"No commit found for SHA: {args['ref']}")
        return 200, J.commit_json(self.core.base, repo, sha), {}

    # -- refs ---------------------------------------------------------------------
    def h_get_ref(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        sha = self.core.state.get_ref(repo, args["ref"])
        return 200, J.ref_json(self.core.base, repo, "refs/" + args["ref"], sha), {}

    def h_list_refs(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        prefix = "refs/" + args["ref"]
        if prefix.rstrip("/") in repo.refs:  # an exact ref answers the object itself
            ref = prefix.rstrip("/")
            return 200, J.ref_json(self.core.base, repo, ref, repo.refs[ref]), {}
        refs = [J.ref_json(self.core.base, repo, r, s) for r, s in sorted(repo.refs.items()) if r.startswith(prefix)]
        if not refs:
            raise not_found()
        items, headers = page(self, refs, query)
        return 200, items, headers

    def h_create_ref(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        ref, sha = body.get("ref"), body.get("sha")
        if not isinstance(ref, str) or not isinstance(sha, str):
            raise ApiError(422, 'Invalid request.\n\n"ref", "sha" weren\'t supplied.')
        self.core.state.create_ref(repo, ref, sha)
        payload = J.ref_json(self.core.base, repo, ref, sha)
        return 201, payload, {"Location": payload["url"]}

    def h_update_ref(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        sha = body.get("sha")
        if not isinstance(sha, str):
            raise ApiError(422, 'Invalid request.\n\n"sha" wasn\'t supplied.')
        self.core.state.update_ref(repo, args["ref"], sha, bool(body.get("force", False)))
        return 200, J.ref_json(self.core.base, repo, "refs/" + args["ref"], sha), {}

    def h_delete_ref(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        self.core.state.delete_ref(repo, args["ref"])
        return 204, None, {}

    # -- releases -----------------------------------------------------------------
    def h_list_releases(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        releases = sorted(repo.releases.values(), key=lambda r: r.id, reverse=True)
        items, headers = page(self, [self._rel(repo, r) for r in releases], query)
        return 200, items, headers

    def h_create_release(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        if self.core.take_fault("release_race") is not None:  # another publisher's draft lands first
            self.core.state.create_release(repo, {**body, "draft": True})
        rel = self.core.state.create_release(repo, body)
        payload = self._rel(repo, rel)
        return 201, payload, {"Location": payload["url"]}

    def h_latest_release(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        return 200, self._rel(repo, self.core.state.latest(repo)), {}

    def h_release_by_tag(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        return 200, self._rel(repo, self.core.state.release_by_tag(repo, args["tag"])), {}

    def h_get_release(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        return 200, self._rel(repo, self.core.state.release(repo, int(args["id"]))), {}

    def h_update_release(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        state = self.core.state
        rel = state.update_release(repo, state.release(repo, int(args["id"])), body)
        return 200, self._rel(repo, rel), {}

    def h_delete_release(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        state = self.core.state
        state.delete_release(repo, state.release(repo, int(args["id"])))
        return 204, None, {}

    # -- assets -------------------------------------------------------------------
    def h_list_assets(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        state = self.core.state
        rel = state.release(repo, int(args["id"]))
        assets = [J.asset_json(self.core.base, repo, rel, a) for a in state.release_assets(rel)]
        items, headers = page(self, assets, query)
        return 200, items, headers

    def h_get_asset(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        asset, rel = self.core.state.asset(repo, int(args["id"]))
        if "application/octet-stream" in (self.headers.get("Accept") or ""):
            return 200, asset.data, {"Content-Type": "application/octet-stream"}
        return 200, J.asset_json(self.core.base, repo, rel, asset), {}

    def h_update_asset(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        state = self.core.state
        asset, rel = state.asset(repo, int(args["id"]))
        return 200, J.asset_json(self.core.base, repo, rel, state.update_asset(rel, asset, body)), {}

    def h_delete_asset(self, repo: Repo, args: Args, body: Body, query: Query) -> Answer:
        state = self.core.state
        asset, rel = state.asset(repo, int(args["id"]))
        state.delete_asset(rel, asset)
        return 204, None, {}
