"""In-memory model of the GitHub objects the emulator serves: commits, refs, releases, assets.

Every rule here mirrors docs/github-releases.md: ids per kind from 1000 (as in the
normalized octokit fixtures), drafts invisible by tag, tags created when a release is
published, fast-forward-only ref updates without `force`, the 1000-asset cap, and
immutable releases. All access goes through `State.lock` (the server is threaded).
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets as _random
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

DOCS = "https://docs.github.com/rest"
ASSET_CAP = 1000
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9._+-]")


class ApiError(Exception):
    """An HTTP error answer: status plus GitHub's JSON error body."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers: dict[str, str] = {}  # extra response headers (Retry-After on a rate limit)
        self.payload: dict = {"message": message, "documentation_url": DOCS}
        if errors is not None:
            self.payload["errors"] = errors


def not_found() -> ApiError:
    return ApiError(404, "Not Found")


def validation(resource: str, code: str, field_name: str, message: str | None = None) -> ApiError:
    err = {"resource": resource, "code": code, "field": field_name}
    if message:
        err["message"] = message
    return ApiError(422, "Validation Failed", [err])


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def safe_asset_name(name: str) -> str:
    """GitHub's rewrite: characters outside [A-Za-z0-9._+-] become '.'."""
    return _BAD_NAME_CHARS.sub(".", name)


@dataclass
class Asset:
    id: int
    release_id: int
    name: str
    label: str
    content_type: str
    data: bytes
    state: str = "uploaded"
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)

    @property
    def digest(self) -> str | None:
        return "sha256:" + hashlib.sha256(self.data).hexdigest() if self.state == "uploaded" else None


@dataclass
class Release:
    id: int
    tag_name: str
    target_commitish: str
    name: str | None
    body: str | None
    draft: bool
    prerelease: bool
    immutable: bool = False
    created_at: str = field(default_factory=now_iso)
    published_at: str | None = None
    updated_at: str = field(default_factory=now_iso)
    untagged: str = field(default_factory=lambda: "untagged-" + _random.token_hex(10))
    asset_ids: list[int] = field(default_factory=list)


@dataclass
class Repo:
    full_name: str
    commits: dict[str, list[str]] = field(default_factory=dict)  # sha -> parents
    refs: dict[str, str] = field(default_factory=dict)  # "refs/heads/main" -> sha
    releases: dict[int, Release] = field(default_factory=dict)
    default_branch: str = "main"
    immutable_releases: bool = False
    latest_release_id: int | None = None
    burned_tags: set[str] = field(default_factory=set)  # tags of deleted immutable releases

    def is_ancestor(self, old: str, new: str) -> bool:
        """True when `old` is reachable from `new` (a fast-forward)."""
        seen, todo = set(), [new]
        while todo:
            sha = todo.pop()
            if sha == old:
                return True
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.commits.get(sha, []))
        return False

    def resolve(self, commitish: str) -> str | None:
        if commitish in self.commits:
            return commitish
        for prefix in ("refs/heads/", "refs/tags/"):
            if prefix + commitish in self.refs:
                return self.refs[prefix + commitish]
        return self.refs.get(commitish)


def fake_sha(seed: str) -> str:
    return hashlib.sha1(seed.encode()).hexdigest()


class State:
    """Repositories and their objects; methods raise ApiError like the real API."""

    def __init__(self, repos: Iterable[str]) -> None:
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.assets: dict[int, Asset] = {}
        self._ids: dict[str, int] = {}
        for name in repos:
            self.add_repo(name)

    def next_id(self, kind: str) -> int:
        self._ids[kind] = self._ids.get(kind, 999) + 1
        return self._ids[kind]

    # -- seeding (Python hooks) -------------------------------------------------
    def add_repo(self, full_name: str, with_commit: bool = True) -> Repo:
        with self.lock:
            repo = self.repos.setdefault(full_name, Repo(full_name))
            if with_commit and not repo.commits:
                self.add_commit(full_name, fake_sha(full_name + "/initial"), parents=[])
            return repo

    def add_commit(
        self, full_name: str, sha: str | None = None, parents: list[str] | None = None, branch: str | None = "main"
    ) -> str:
        """Create a commit (child of `branch`'s head unless `parents`), move the branch to it."""
        with self.lock:
            repo = self.repo(full_name)
            head = repo.refs.get(f"refs/heads/{branch}") if branch else None
            sha = sha or fake_sha(f"{full_name}/{len(repo.commits)}/{time.time_ns()}")
            repo.commits[sha] = list(parents if parents is not None else ([head] if head else []))
            if branch:
                repo.refs[f"refs/heads/{branch}"] = sha
            return sha

    def import_history(
        self, full_name: str, commits: dict[str, list[str]], refs: dict[str, str], branch: str | None
    ) -> None:
        """Replace the seeded history with a real one (as if the project had been pushed)."""
        with self.lock:
            repo = self.repo(full_name)
            repo.commits = {sha: list(parents) for sha, parents in commits.items()}
            repo.refs = {name: sha for name, sha in repo.refs.items() if sha in repo.commits}
            repo.refs.update(refs)
            if branch and f"refs/heads/{branch}" in repo.refs:
                repo.default_branch = branch

    def repo(self, full_name: str) -> Repo:
        repo = self.repos.get(full_name)
        if repo is None:
            raise not_found()
        return repo

    # -- refs ---------------------------------------------------------------------
    def get_ref(self, repo: Repo, ref: str) -> str:
        sha = repo.refs.get("refs/" + ref)
        if sha is None:
            raise not_found()
        return sha

    def create_ref(self, repo: Repo, ref: str, sha: str) -> None:
        if not ref.startswith("refs/") or ref.count("/") < 2:
            raise ApiError(422, "Reference name must start with 'refs/' and have at least two slashes.")
        if ref in repo.refs:
            raise ApiError(422, "Reference already exists")
        if sha not in repo.commits:
            raise ApiError(422, "Object does not exist")
        repo.refs[ref] = sha

    def update_ref(self, repo: Repo, ref: str, sha: str, force: bool) -> None:
        old = self.get_ref(repo, ref)
        if sha not in repo.commits:
            raise ApiError(422, "Object does not exist")
        if ref.startswith("tags/") and self._tag_locked(repo, ref[5:]) and sha != old:
            raise ApiError(422, "Cannot update a tag of an immutable release")
        if not force and not repo.is_ancestor(old, sha):
            raise ApiError(422, "Update is not a fast forward")
        repo.refs["refs/" + ref] = sha

    def delete_ref(self, repo: Repo, ref: str) -> None:
        self.get_ref(repo, ref)
        if ref.startswith("tags/") and self._tag_locked(repo, ref[5:]):
            raise ApiError(422, "Cannot delete a tag of an immutable release")
        if ref == f"heads/{repo.default_branch}":
            raise ApiError(422, "Cannot delete the default branch")
        del repo.refs["refs/" + ref]

    def _tag_locked(self, repo: Repo, tag: str) -> bool:
        return tag in repo.burned_tags or any(r.immutable and r.tag_name == tag for r in repo.releases.values())

    @staticmethod
    def _refuse_burned(repo: Repo, tag: str) -> None:
        # GitHub's exact answer: the name of a deleted immutable release can never be used again.
        if tag in repo.burned_tags:
            raise validation("Release", "custom", "tag_name", "tag_name was used by an immutable release")

    # -- releases -----------------------------------------------------------------
    def release(self, repo: Repo, release_id: int) -> Release:
        rel = repo.releases.get(release_id)
        if rel is None:
            raise not_found()
        return rel

    def release_by_tag(self, repo: Repo, tag: str) -> Release:
        for rel in repo.releases.values():
            if rel.tag_name == tag and not rel.draft:  # drafts are not found by tag
                return rel
        raise not_found()

    def create_release(self, repo: Repo, body: dict) -> Release:
        tag = body.get("tag_name")
        if not isinstance(tag, str) or not tag:
            raise validation("Release", "missing_field", "tag_name")
        if any(r.tag_name == tag for r in repo.releases.values()):
            raise validation("Release", "already_exists", "tag_name")
        self._refuse_burned(repo, tag)
        target = body.get("target_commitish") or repo.default_branch
        if f"refs/tags/{tag}" not in repo.refs and repo.resolve(target) is None:
            raise validation("Release", "invalid", "target_commitish")
        rel = Release(
            self.next_id("release"),
            tag,
            target,
            body.get("name"),
            body.get("body"),
            bool(body.get("draft", False)),
            bool(body.get("prerelease", False)),
        )
        repo.releases[rel.id] = rel
        if not rel.draft:
            self._publish(repo, rel, body.get("make_latest", "true"))
        return rel

    def update_release(self, repo: Repo, rel: Release, body: dict) -> Release:
        if rel.immutable and any(
            k in body and body[k] != getattr(rel, k) for k in ("tag_name", "target_commitish", "draft")
        ):
            raise ApiError(422, "Cannot change the tag or state of an immutable release")
        if "tag_name" in body and body["tag_name"] != rel.tag_name:
            if any(r.tag_name == body["tag_name"] for r in repo.releases.values()):
                raise validation("Release", "already_exists", "tag_name")
            self._refuse_burned(repo, body["tag_name"])
            rel.tag_name = body["tag_name"]
        for key in ("target_commitish", "name", "body"):
            if key in body:
                setattr(rel, key, body[key])
        if "prerelease" in body:
            rel.prerelease = bool(body["prerelease"])
        was_draft = rel.draft
        if "draft" in body:
            rel.draft = bool(body["draft"])
        rel.updated_at = now_iso()
        if was_draft and not rel.draft:
            self._publish(repo, rel, body.get("make_latest", "true"))
        elif body.get("make_latest") == "true" and not rel.prerelease and not rel.draft:
            repo.latest_release_id = rel.id
        if rel.prerelease and repo.latest_release_id == rel.id:
            repo.latest_release_id = None
        return rel

    def _publish(self, repo: Repo, rel: Release, make_latest: str) -> None:
        ref = f"refs/tags/{rel.tag_name}"
        if ref not in repo.refs:
            sha = repo.resolve(rel.target_commitish)
            if sha is None:
                raise validation("Release", "invalid", "target_commitish")
            repo.refs[ref] = sha
        rel.published_at = now_iso()
        rel.immutable = repo.immutable_releases
        if make_latest != "false" and not rel.prerelease:
            repo.latest_release_id = rel.id

    def delete_release(self, repo: Repo, rel: Release) -> None:
        if rel.immutable:  # allowed, but the tag stays and its name is burned
            repo.burned_tags.add(rel.tag_name)
        for asset_id in list(rel.asset_ids):
            self.assets.pop(asset_id, None)
        del repo.releases[rel.id]
        if repo.latest_release_id == rel.id:
            repo.latest_release_id = None

    def latest(self, repo: Repo) -> Release:
        if repo.latest_release_id in repo.releases:
            return repo.releases[repo.latest_release_id]
        raise not_found()

    # -- assets -------------------------------------------------------------------
    def release_assets(self, rel: Release) -> list[Asset]:
        return [self.assets[i] for i in rel.asset_ids if i in self.assets]

    def asset(self, repo: Repo, asset_id: int) -> tuple[Asset, Release]:
        asset = self.assets.get(asset_id)
        if asset is None or asset.release_id not in repo.releases:
            raise not_found()
        return asset, repo.releases[asset.release_id]

    def upload(
        self, rel: Release, name: str, label: str, content_type: str, data: bytes, state: str = "uploaded"
    ) -> Asset:
        if rel.immutable:
            raise ApiError(422, "Cannot upload assets to an immutable release")
        name = safe_asset_name(name)
        if any(a.name == name for a in self.release_assets(rel)):
            raise validation("ReleaseAsset", "already_exists", "name")
        if len(rel.asset_ids) >= ASSET_CAP:
            raise validation("ReleaseAsset", "custom", "file_count", "file_count limited to 1000 assets")
        asset = Asset(self.next_id("asset"), rel.id, name, label, content_type, data, state)
        self.assets[asset.id] = asset
        rel.asset_ids.append(asset.id)
        return asset

    def unstored(self, rel: Release, name: str, label: str, content_type: str, data: bytes) -> Asset:
        """An asset as an upload's answer describes it, refused as `upload` would be, but not stored."""
        if rel.immutable:
            raise ApiError(422, "Cannot upload assets to an immutable release")
        name = safe_asset_name(name)
        if any(a.name == name for a in self.release_assets(rel)):
            raise validation("ReleaseAsset", "already_exists", "name")
        return Asset(self.next_id("asset"), rel.id, name, label, content_type, data)

    def store_late(self, rel: Release, asset: Asset) -> None:
        """Store an acknowledged asset now (a delayed upload), unless its name was taken meanwhile."""
        with self.lock:
            if rel.immutable or any(a.name == asset.name for a in self.release_assets(rel)):
                return
            self.assets[asset.id] = asset
            rel.asset_ids.append(asset.id)

    def update_asset(self, rel: Release, asset: Asset, body: dict) -> Asset:
        if rel.immutable:
            raise ApiError(422, "Cannot modify assets of an immutable release")
        name = safe_asset_name(body.get("name") or asset.name)
        if name != asset.name and any(a.name == name for a in self.release_assets(rel)):
            raise validation("ReleaseAsset", "already_exists", "name")
        asset.name = name
        if "label" in body:
            asset.label = body["label"]
        if body.get("state"):
            asset.state = body["state"]
        asset.updated_at = now_iso()
        return asset

    def delete_asset(self, rel: Release, asset: Asset) -> None:
        if rel.immutable:
            raise ApiError(422, "Cannot delete assets of an immutable release")
        del self.assets[asset.id]
        rel.asset_ids.remove(asset.id)

    def download(self, repo: Repo, tag: str, name: str) -> Asset:
        for rel in repo.releases.values():
            if rel.tag_name == tag and not rel.draft:
                for asset in self.release_assets(rel):
                    if asset.name == name and asset.state == "uploaded":
                        return asset
        raise not_found()


def node_id(kind: str, ident: int) -> str:
    return base64.b64encode(f"0:{kind}{ident}".encode()).decode()
