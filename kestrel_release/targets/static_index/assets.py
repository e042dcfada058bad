"""A static index whose wheels are GitHub release assets (`github = {repo = ..., tag = "v{version}"}`).

The wheels go to the release `tag` of `repo` (created, then published, when missing; never replaced:
an asset of that name with other bytes is refused, exit 6); the pages, still written to the target's
`dir` for a static host (GitHub Pages), link each wheel at its asset's download URL. A release only
serves files, not folder pages, so the index itself still needs a static host.
Idempotent: a re-run finds every asset in place and uploads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import PublishError
from kestrel_release.files.fsutil import sha256_file
from kestrel_release.output_dir import manifest
from kestrel_release.targets.static_index.settings import StaticIndexTarget
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


@dataclass
class Assets:
    repo: str
    tag: str
    urls: dict[str, str] = field(default_factory=dict)  # filename -> download URL
    uploaded: list[str] = field(default_factory=list)
    release_url: str = ""


def public_version(wheels: list[Path]) -> str:
    """The one release version of the wheels (their local `+cu130` parts dropped)."""
    from packaging.utils import parse_wheel_filename

    found = sorted({parse_wheel_filename(w.name)[1].public for w in wheels})
    if len(found) != 1:
        raise PublishError(
            f"expected wheels of one version, got {', '.join(found) or 'none'}", "publish one build output at a time"
        )
    return found[0]


def publish(
    cfg: Config,
    target: StaticIndexTarget,
    wheels: list[Path],
    *,
    api_url: str | None = None,
    token: str | None = None,
    token_env: str | None = None,
    commit: str | None = None,
    dry_run: bool = False,
) -> Assets:
    from kestrel_release.adapters.github import client as gh_adapter

    version = public_version(wheels)
    tag = target.tag_for(version)
    result = Assets(target.github_repo, tag)
    token = gh_adapter.resolve_token(token, token_env, required=not dry_run)
    if token is None:  # a dry run without a token: the URLs the assets will have
        result.urls = {w.name: target.asset_url(version, w.name) for w in wheels}
        return result
    from kestrel_release.adapters.retry import RetryPolicy

    client = gh_adapter.GithubClient(
        api_url or cfg.github().api_url,
        token,
        target.github_repo,
        timeout=cfg.publish.timeout,
        policy=RetryPolicy.from_config(cfg.publish),
    )
    rel = client.find_release(tag)
    assets = {a.name: a for a in client.list_assets(rel)} if rel is not None else {}
    todo = []
    for wheel in wheels:
        have = assets.get(wheel.name)
        sha, size = sha256_file(wheel), wheel.stat().st_size
        if have is None:
            todo.append((wheel, sha))
        elif not have.same_bytes(size, sha, need_digest=False):
            raise PublishError(
                f"release {tag} on {target.github_repo} already has {wheel.name} with other bytes",
                "a published file never changes: bump the version and rebuild; nothing was changed",
            )
        else:
            result.urls[wheel.name] = have.browser_download_url
    if dry_run:
        result.urls.update({w.name: target.asset_url(version, w.name) for w, _ in todo})
        result.uploaded = [w.name for w, _ in todo]
        return result
    if rel is None:
        sha_commit = commit or _commit(wheels)
        if not sha_commit or not client.commit_exists(sha_commit):
            head = client.default_head()
            console.warn(f"the build's commit {sha_commit or '(unknown)'} is not on GitHub: tagging {tag} at {head}")
            sha_commit = head
        console.step(f"creating release {tag} on {target.github_repo}")
        rel = client.create_release(tag, f"{cfg.name} {version}", "", prerelease=False, target=sha_commit)
    if rel.immutable and todo:
        raise PublishError(
            f"release {tag} on {target.github_repo} is immutable and lacks {todo[0][0].name}",
            'use a tag of its own for the index\'s wheels (github = {tag = "v{version}-wheels"}); nothing was changed',
        )
    for wheel, sha in todo:
        client.upload(rel, wheel, wheel.name, sha)
        result.uploaded.append(wheel.name)
    if rel.draft:  # a draft's assets cannot be downloaded by users: publish it once every asset is there
        rel = client.update_release(rel, name=rel.name or f"{cfg.name} {version}", body="", prerelease=False)
    # Read back once published: a draft's download URLs name an `untagged-...` tag that stops working.
    names = {w.name for w in wheels}
    result.urls = {a.name: a.browser_download_url for a in client.list_assets(rel) if a.name in names}
    result.release_url = rel.html_url
    return result


def _commit(wheels: list[Path]) -> str:
    found = manifest.for_wheel(wheels[0]) if wheels else None
    return (found[1].commit if found else None) or ""
