"""publish --target github: a rolling nightly (or a versioned release) that is never broken.

Order (everything that can refuse comes first): integrity against the manifest, verify,
token, repository, commit, release lookup, immutability; then assets, then tag and notes.
Assets are replaced without a gap: the new bytes go up under a temporary name, the old
asset is deleted, the new one renamed, so a failed upload never removes what is
published. Leftovers of failed runs (temporary names, assets not `uploaded`) are removed
first; identical assets are skipped (re-runs are idempotent); the rolling release is
pruned to exactly the current wheels. New releases start as drafts and are published
after every asset is up, which is what repositories with immutable releases require.
There a rolling nightly is refused before any change; `targets.github.nightly = "dated"`
makes one prerelease per nightly instead (publish_github_dated.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets as _random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from kestrel_release.adapters import git
from kestrel_release.adapters.github import client as gh_adapter
from kestrel_release.adapters.github.client import Asset, GithubClient, Release
from kestrel_release.errors import PublishError, UsageError
from kestrel_release.files import fsutil, statedir
from kestrel_release.output_dir import manifest
from kestrel_release.targets.github import confirm as confirm_mod
from kestrel_release.targets.github import dated as dated_mod
from kestrel_release.targets.github import files as files_mod
from kestrel_release.targets.github.files import LocalFile
from kestrel_release.targets.github.result import GithubResult, Target
from kestrel_release.targets.github.result import render as render  # the module's render, as index.py's
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.stages.verify.report import VerifyReport

# A file -> what its upload calls with each chunk's size (None: no progress shown).
AdvanceFor = Callable[[LocalFile], Callable[[int], None] | None]

TMP_PREFIX = "kestrel-tmp-"
ASSET_CAP = 1000


@dataclass
class Plan:
    cleanup: list[Asset] = field(default_factory=list)  # leftovers of failed runs
    existing: dict[str, Asset] = field(default_factory=dict)  # name -> complete asset
    skip: set[str] = field(default_factory=set)
    prune: list[Asset] = field(default_factory=list)
    prune_first: bool = False


@fsutil.locked("publish")  # two publishes of one project never interleave
def run(
    cfg: Config,
    paths: list[Path],
    *,
    repo: str | None = None,
    tag: str | None = None,
    api_url: str | None = None,
    prune: bool | None = None,
    dry_run: bool = False,
    token_env: str | None = None,
    yes: bool = False,
    token: str | None = None,
    commit: str | None = None,
    name: str,
) -> GithubResult:
    """Publish verified wheels (+ SHA256SUMS, manifest) to a GitHub release; raise on failure.
    `name`: the target's name (verify's rules and the manifest's record of what was published where)."""
    from kestrel_release.stages.publish import snapshot

    target = _target(cfg, repo, tag, api_url, prune)
    token = gh_adapter.resolve_token(token, token_env, required=not dry_run)
    # A killed run's snapshots and scratch copy are collected by the next one (statedir.owned_dir).
    with snapshot.session() as snaps, statedir.temp_dir("gh") as scratch:
        # what verify reads is the tool's own copy: every asset upload and retry sends exactly it
        report = snapshot.verified(cfg, snaps, paths, integrity=name, rules=name)
        result = GithubResult(target.repo, target.tag, target.rolling, _version(report), dry_run)
        files = files_mod.collect([w.path for w in report.wheels], scratch)
        if token is None:
            console.warn("no GitHub token: planning as if the release were empty")
            for f in files:
                result.add(f.name, "uploaded", f)
            return result
        snaps.check_sources()
        _publish(cfg, target, token, commit, files, result)
    return result


def _publish(
    cfg: Config, target: Target, token: str, commit: str | None, files: list[LocalFile], result: GithubResult
) -> None:
    from kestrel_release.adapters.retry import RetryPolicy

    p = cfg.publish
    policy = RetryPolicy.from_config(p)
    client = GithubClient(target.api_url, token, target.repo, timeout=p.timeout, policy=policy)
    if target.rolling and client.immutable_releases():  # before any change, dry run included
        raise PublishError(
            f"immutable releases are enabled on {target.repo}: the rolling nightly {target.tag} "
            "could never be updated; nothing was changed",
            'set targets.github.nightly = "dated" (KESTREL_RELEASE_GITHUB_NIGHTLY=dated) for one '
            "release per nightly, or publish a versioned release with --tag",
        )
    try:
        _publish_once(cfg, client, target, commit, files, result)
    except gh_adapter.ReleaseExists:
        # Another publisher (a second CI job) created the release between our lookup and our create:
        # join it, reading it back as a re-run would (its assets, its tag), once.
        console.info(f"release {target.tag} was created meanwhile by another publisher; joining it")
        _publish_once(cfg, client, target, commit, files, result)


def _publish_once(
    cfg: Config, client: GithubClient, target: Target, commit: str | None, files: list[LocalFile], result: GithubResult
) -> None:
    sha = _commit(cfg, client, target, commit, files)
    result.commit = sha
    if target.dated:
        target = dataclasses.replace(target, tag=dated_mod.tag_for(client, target.tag, sha))
        result.tag = target.tag
    rel = client.find_release(target.tag)
    existing = client.list_assets(rel) if rel is not None else []
    plan = _plan(cfg, target, files, existing)
    _refuse_immutable(client, target, rel, plan, files, sha)
    base = _download_base(target, rel, client)
    notes = files_mod.render_notes(
        cfg,
        template=cfg.github().notes_template,
        version=result.version,
        commit=sha,
        tag=target.tag,
        rolling=target.rolling,
        download_base=base,
        files=files,
    )
    if result.dry_run:
        _record_plan(plan, files, result)
        _prune_dated(client, cfg, target, result)
        return
    title = _title(cfg, target, result.version)
    if rel is not None and not rel.draft and _nothing_to_do(client, target, plan, files, sha):
        for f in files:  # a re-run of a finished release: leave it (and its notes) as they are
            result.add(f.name, "skipped", f)
        result.release_url = rel.html_url
        _prune_dated(client, cfg, target, result)
        return
    if rel is None:
        console.step(f"creating draft release {target.tag} on {target.repo}")
        rel = client.create_release(target.tag, title, notes, prerelease=target.rolling or target.dated, target=sha)
    _sync(client, rel, files, plan, result)
    client.set_tag(target.tag, sha)  # a nightly's tag moves (force); a versioned one was checked above
    nightly = target.rolling or target.dated
    rel = client.update_release(
        rel,
        name=title,
        body=notes,
        prerelease=nightly or _is_pre(result.version),
        draft=False,
        make_latest="false" if nightly else "legacy",
    )
    result.release_url = rel.html_url
    _prune_dated(client, cfg, target, result)


def _nothing_to_do(client: GithubClient, target: Target, plan: Plan, files: list[LocalFile], sha: str) -> bool:
    return len(plan.skip) == len(files) and not plan.prune and not plan.cleanup and client.tag_sha(target.tag) == sha


def _prune_dated(client: GithubClient, cfg: Config, target: Target, result: GithubResult) -> None:
    if target.dated:
        base = cfg.github().tag or f"{cfg.name}-nightly"
        result.pruned_releases = dated_mod.prune(client, base, target.tag, target.keep, result.dry_run)


def _target(cfg: Config, repo: str | None, tag: str | None, api_url: str | None, prune: bool | None) -> Target:
    gh = cfg.github()
    repo = repo or gh.repo
    if not repo or repo.count("/") != 1 or not all(repo.split("/")):
        raise UsageError(
            f"no valid GitHub repository ({repo or 'none given'})",
            "pass --repo OWNER/NAME or set [tool.kestrel-release.targets.github] repo",
        )
    nightly = gh.tag or f"{cfg.name}-nightly"
    tag = tag or nightly
    if tag == nightly and gh.nightly == "dated":  # the real tag (<base>-YYYYMMDD-<sha7>) needs the commit
        return Target(repo, tag, False, api_url or gh.api_url, False, dated=True, keep=gh.keep)
    rolling = tag == nightly
    return Target(repo, tag, rolling, api_url or gh.api_url, gh.prune if prune is None and rolling else bool(prune))


def _version(report: VerifyReport) -> str:
    versions = sorted({cast(str, w.version) for w in report.wheels})  # verified: each names its version
    if len(versions) != 1:
        raise UsageError(
            f"expected wheels of one version, got {', '.join(versions) or 'none'}", "publish one build output at a time"
        )
    return versions[0]


def _commit(cfg: Config, client: GithubClient, target: Target, given: str | None, files: list[LocalFile]) -> str:
    """The commit the wheels were built from (flag, manifest, local git), which GitHub must have."""
    found = next((manifest.for_wheel(f.path) for f in files if f.wheel), None)
    sha = given or (found[1].commit if found else None) or git.state(cfg.project_dir).commit
    tag_sha = None if target.rolling or target.dated else client.tag_sha(target.tag)
    if sha is None:
        sha = tag_sha or client.default_head()
        console.warn(f"no build commit known; using {sha[:12]} ({'the tag' if tag_sha else 'the default branch'})")
    elif not client.commit_exists(sha):
        raise PublishError(f"commit {sha[:12]} is not on {target.repo}", "push it first, then publish again")
    if tag_sha is not None and tag_sha != sha:
        raise PublishError(
            f"tag {target.tag} points at {tag_sha[:12]}, but the wheels were built from {sha[:12]}",
            "a versioned tag is never moved: publish from the tagged commit or use a new tag",
        )
    return sha


def _plan(cfg: Config, target: Target, files: list[LocalFile], existing: list[Asset]) -> Plan:
    plan = Plan()
    for asset in existing:
        if asset.name.startswith(TMP_PREFIX) or asset.state != "uploaded":
            plan.cleanup.append(asset)
        else:
            plan.existing[asset.name] = asset
    for f in files:
        old = plan.existing.get(f.name)
        if old is not None and old.same_bytes(f.size, f.sha256, need_digest=True):
            plan.skip.add(f.name)
    wanted = {f.name for f in files}
    if target.prune:
        plan.prune = [
            a
            for a in plan.existing.values()
            if a.name not in wanted and a.name.startswith(cfg.dist_name + "-") and a.name.endswith(".whl")
        ]
    after = len(plan.existing) + sum(f.name not in plan.existing for f in files) + 1  # +1: one temporary upload
    if after > ASSET_CAP:
        if after - len(plan.prune) > ASSET_CAP:
            raise PublishError(
                f"release {target.tag} holds {len(existing)} assets; this upload would pass "
                f"GitHub's {ASSET_CAP}-asset cap",
                "prune old assets (--prune) or use a new tag",
            )
        plan.prune_first = True
    return plan


def _refuse_immutable(
    client: GithubClient, target: Target, rel: Release | None, plan: Plan, files: list[LocalFile], sha: str
) -> None:
    if rel is None or not rel.immutable:
        return
    if _nothing_to_do(client, target, plan, files, sha):
        return
    hint = (
        f"immutable releases are enabled on {target.repo}, so a rolling release cannot be updated: set "
        'targets.github.nightly = "dated", or publish versioned releases with --tag'
        if target.rolling
        else "publish a new version under a new tag"
    )
    raise PublishError(
        f"release {target.tag} is published and immutable: its assets and tag cannot change; nothing was modified", hint
    )


def _download_base(target: Target, rel: Release | None, client: GithubClient) -> str:
    if rel is not None and "/releases/" in rel.html_url:
        repo_url = rel.html_url.split("/releases/")[0]
    else:
        repo_url = client.repo_html_url()
    return f"{repo_url}/releases/download/{target.tag}"


def _title(cfg: Config, target: Target, version: str) -> str:
    default = (
        "{name} nightly {version}"
        if target.rolling
        else "{name} nightly {version} ({tag})"
        if target.dated
        else "{name} {version}"
    )
    template = cfg.github().title or default
    try:
        return template.format(name=cfg.name, version=version, tag=target.tag)
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(
            f"targets.github.title '{template}' is not a valid template ({exc})",
            "use the fields {name}, {version}, {tag}",
        ) from None


def _is_pre(version: str) -> bool:
    from packaging.version import Version

    return Version(version).is_prerelease


def _record_plan(plan: Plan, files: list[LocalFile], result: GithubResult) -> None:
    for asset in plan.cleanup:
        result.add(asset.name, "cleaned")
    for f in files:
        action = "skipped" if f.name in plan.skip else "replaced" if f.name in plan.existing else "uploaded"
        result.add(f.name, action, f)
    for asset in plan.prune:
        result.add(asset.name, "pruned")


def _sync(client: GithubClient, rel: Release, files: list[LocalFile], plan: Plan, result: GithubResult) -> None:
    """Upload what the release lacks, confirm it, then swap it in. On a public release (a rolling
    nightly) every new file goes up under a temporary name and takes its real name only once all
    of them are confirmed, so users never see a name with missing or other bytes."""
    for asset in plan.cleanup:
        client.delete_asset(asset)
        result.add(asset.name, "cleaned")
    if plan.prune_first:
        _prune(client, plan, result)
    run_id = _random.token_hex(4)
    staged: dict[str, LocalFile] = {}  # asset name uploaded -> the file it holds
    with _progress() as advance_for:
        for f in files:
            if f.name in plan.skip:
                continue
            temporary = not rel.draft or f.name in plan.existing  # no gap: the old asset stays until the swap
            name = f"{TMP_PREFIX}{run_id}-{f.name}" if temporary else f.name
            client.upload(rel, f.path, name, f.sha256, advance_for(f), size=f.size, shown=f.name)
            staged[name] = f
    held = confirm_mod.confirm(client, rel, staged, "after the upload") if staged else {}
    confirm_mod.check_sums(files)
    for name, f in staged.items():
        old = plan.existing.get(f.name)
        if name != f.name:
            if old is not None:
                client.delete_asset(old)
            client.rename_asset(held[name], f.name)
    confirm_mod.confirm(client, rel, {f.name: f for f in files}, "read back by name")
    for f in files:
        action = "skipped" if f.name in plan.skip else "replaced" if f.name in plan.existing else "uploaded"
        result.add(f.name, action, f)
    if not plan.prune_first:
        _prune(client, plan, result)


def _prune(client: GithubClient, plan: Plan, result: GithubResult) -> None:
    for asset in plan.prune:
        client.delete_asset(asset)
        result.add(asset.name, "pruned")


@contextlib.contextmanager
def _progress() -> Iterator[AdvanceFor]:
    """Per-asset progress bars on a terminal; nothing otherwise (logs stay short)."""
    con = console.console
    if console.json_mode() or not con.is_terminal:
        yield lambda f: None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=con,
        transient=True,
    ) as bars:

        def advance_for(f: LocalFile) -> Callable[[int], None]:
            task = bars.add_task(f.name, total=f.size)
            return lambda n: bars.advance(task, n)

        yield advance_for
