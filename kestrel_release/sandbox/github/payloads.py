"""JSON shapes of the emulated objects, exactly the keys real GitHub sends (see the
octokit fixtures), with every URL on the emulator's own scheme, host and port so that
PyGithub follows them (it refuses other ports on the same host)."""

from __future__ import annotations

from urllib.parse import quote

from kestrel_release.sandbox.github.state import Asset, Release, Repo, node_id

USER = {"login": "kestrel-emulator", "id": 1000, "type": "User", "site_admin": False}


def user(base: str) -> dict:
    login = USER["login"]
    return {
        **USER,
        "node_id": node_id("User", 1000),
        "avatar_url": f"{base}/avatars/u/1000?v=4",
        "gravatar_id": "",
        "url": f"{base}/api/v3/users/{login}",
        "html_url": f"{base}/{login}",
    }


def repo_json(base: str, repo: Repo) -> dict:
    owner, name = repo.full_name.split("/")
    return {
        "id": abs(hash(repo.full_name)) % 10**6,
        "node_id": node_id("Repository", 1),
        "name": name,
        "full_name": repo.full_name,
        "private": False,
        "owner": {**user(base), "login": owner},
        "html_url": f"{base}/{repo.full_name}",
        "url": f"{base}/api/v3/repos/{repo.full_name}",
        "default_branch": repo.default_branch,
        "permissions": {"admin": True, "push": True, "pull": True},
    }


def asset_json(base: str, repo: Repo, rel: Release, asset: Asset) -> dict:
    api = f"{base}/api/v3/repos/{repo.full_name}"
    tag = rel.untagged if rel.draft else rel.tag_name
    return {
        "url": f"{api}/releases/assets/{asset.id}",
        "id": asset.id,
        "node_id": node_id("ReleaseAsset", asset.id),
        "name": asset.name,
        "label": asset.label,
        "uploader": user(base),
        "content_type": asset.content_type,
        "state": asset.state,
        "size": len(asset.data),
        "digest": asset.digest,
        "download_count": 0,
        "created_at": asset.created_at,
        "updated_at": asset.updated_at,
        "browser_download_url": f"{base}/{repo.full_name}/releases/download/{quote(tag)}/{quote(asset.name)}",
    }


def release_json(base: str, repo: Repo, rel: Release, assets: list[Asset], uploads: str | None = None) -> dict:
    """`uploads`: the origin of upload_url when not `base` (a test's foreign upload host)."""
    api = f"{base}/api/v3/repos/{repo.full_name}"
    tag = rel.untagged if rel.draft else rel.tag_name
    return {
        "url": f"{api}/releases/{rel.id}",
        "assets_url": f"{api}/releases/{rel.id}/assets",
        "upload_url": f"{uploads or base}/api/uploads/repos/{repo.full_name}/releases/{rel.id}/assets{{?name,label}}",
        "html_url": f"{base}/{repo.full_name}/releases/tag/{quote(tag)}",
        "id": rel.id,
        "author": user(base),
        "node_id": node_id("Release", rel.id),
        "tag_name": rel.tag_name,
        "target_commitish": rel.target_commitish,
        "name": rel.name,
        "draft": rel.draft,
        "immutable": rel.immutable,
        "prerelease": rel.prerelease,
        "created_at": rel.created_at,
        "updated_at": rel.updated_at,
        "published_at": rel.published_at,
        "assets": [asset_json(base, repo, rel, a) for a in assets],
        "tarball_url": f"{api}/tarball/{quote(rel.tag_name)}",
        "zipball_url": f"{api}/zipball/{quote(rel.tag_name)}",
        "body": rel.body,
    }


def ref_json(base: str, repo: Repo, ref: str, sha: str) -> dict:
    api = f"{base}/api/v3/repos/{repo.full_name}"
    return {
        "ref": ref,
        "node_id": node_id("Ref", 1),
        "url": f"{api}/git/{ref}",
        "object": {"sha": sha, "type": "commit", "url": f"{api}/git/commits/{sha}"},
    }


def commit_json(base: str, repo: Repo, sha: str) -> dict:
    api = f"{base}/api/v3/repos/{repo.full_name}"
    parents = [{"sha": p, "url": f"{api}/commits/{p}"} for p in repo.commits[sha]]
    return {
        "sha": sha,
        "node_id": node_id("Commit", 1),
        "url": f"{api}/commits/{sha}",
        "html_url": f"{base}/{repo.full_name}/commit/{sha}",
        "parents": parents,
        "commit": {"message": f"commit {sha[:7]}", "tree": {"sha": sha}, "url": f"{api}/git/commits/{sha}"},
    }
