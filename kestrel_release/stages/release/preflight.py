"""release's preflight: everything that would make the release fail later, found before its first side effect.

A release that builds for minutes and then fails at a publish step (no token, the version
already on PyPI, no repository) wastes the build and may leave a bump behind. So before the
bump, preflight asks each planned target what publish will ask it: credentials present
(resolved as publish resolves them; values are never printed), the version not on the index
yet (or, for `--from`, only with the same bytes), PyPI's 14-day rule and the project quota,
a GitHub repository and token; plus a clean git tree. Every problem is collected and
reported at once (exit 3). The rehearsal runs the same checks against its stand-ins.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kestrel_release import console
from kestrel_release.adapters import git
from kestrel_release.adapters.github import target_repo as github_repo  # noqa: F401 - release, rehearsal
from kestrel_release.errors import KestrelError, PreflightError

INDEXES = ("testpypi", "pypi")
REPO_HINT = (
    'set targets.github.repo ([tool.kestrel-release.targets.github] repo = "OWNER/NAME", or '
    "KESTREL_RELEASE_GITHUB_REPO), add a github.com remote 'origin', or leave github out of --targets"
)
# What a rehearsal cannot know: printed at its end so nobody mistakes a rehearsal for a real release.
REAL_WORLD_ONLY = (
    "the real credentials are valid and may upload this project (TestPyPI, PyPI) and write releases (GitHub)",
    "acceptance by the real indexes beyond the rules the strict sandbox enforces",
    "Trusted Publishing (OIDC) when the release runs in CI",
    "the GitHub token's permissions and the real repository's settings (immutable releases, protected tags)",
    "the network to the real indexes and api.github.com",
    "whether the version is already on the real indexes (a real release's preflight reads them)",
)


def available_pythons(cfg) -> tuple[Any, list[str]]:
    """A rehearsal works with the configured Pythons this machine has: (narrowed cfg, skipped ones)."""
    from kestrel_release.adapters import pythons

    found, skipped = [], []
    for py in cfg.python:
        try:
            pythons.find_interpreter(py)
            found.append(py)
        except KestrelError:
            skipped.append(py)
    if not found:
        raise PreflightError(
            f"none of the configured Pythons ({', '.join(cfg.python)}) is on this machine",
            f"install one (uv python install {cfg.python[-1]}, or pyenv), or pass --python",
        )
    return dataclasses.replace(cfg, python=tuple(found)), skipped


def check(
    cfg, targets: tuple[str, ...], ends, *, version: str, allow_dirty: bool, prebuilt: bool, resume: bool = False
) -> list[str]:
    """Every problem that would make this release fail later (empty: go ahead)."""
    problems: list[str] = []
    tree = git.state(cfg.project_dir)
    if tree.dirty and not allow_dirty:
        problems.append(
            f"the git tree at {cfg.project_dir} has uncommitted changes (a release is built from a "
            "commit): commit them, or pass --allow-dirty"
        )
    for target in (t for t in targets if t in INDEXES):
        problems += _index_problems(cfg, target, ends.index[target], version, prebuilt, resume)
    if "github" in targets:
        problems += _github_problems(cfg, ends.github)
    for target in targets:
        problems += _static_problems(cfg, target, getattr(ends, "static", {}).get(target))
    return problems


def _static_problems(cfg, name: str, stand_in) -> list[str]:
    """A static-index target: its directory usable and holding no page another tool wrote; a token for its
    GitHub release (a rehearsal's stand-in has both)."""
    from kestrel_release.static_target import StaticIndexTarget

    target = cfg.targets.get(name)
    if not isinstance(target, StaticIndexTarget) or stand_in is not None:
        return []
    from kestrel_release.adapters import static_index
    from kestrel_release.stages.publish.static_index import root_of

    try:
        root = root_of(cfg, target)
    except KestrelError as exc:
        return [f"{name}: {exc.message}"]
    problems = [
        f"{name}: {page} was not written by kestrel-release (move it away)"
        for page in static_index.foreign_pages(root, cfg.name)
    ]
    from kestrel_release.adapters import github as gh_adapter

    if target.github_repo and gh_adapter.resolve_token(None, None, required=False) is None:
        problems.append(
            f"{name}: no GitHub token for the wheels' release on {target.github_repo} (GH_TOKEN or GITHUB_TOKEN)"
        )
    return problems


class Taken(str):
    """A problem that only another version solves: the version is already on a target index."""


class VersionTaken(PreflightError):
    """Preflight failed, and one problem is the version already on an index (release's advice bumps)."""


def raise_for(problems: list[str], rehearse: bool) -> None:
    if not problems:
        return
    if not console.json_mode():
        console.info(
            f"preflight found {len(problems)} problem(s) that would make this "
            f"{'rehearsal' if rehearse else 'release'} fail:"
        )
        for p in problems:
            console.info(f"  ✗ {p}")
    kind = VersionTaken if any(isinstance(p, Taken) for p in problems) else PreflightError
    raise kind(
        f"preflight: {len(problems)} problem(s): " + "; ".join(problems),
        "nothing was bumped, built or uploaded",
    )


def _index_problems(cfg, target: str, end, version: str, prebuilt: bool, resume: bool) -> list[str]:
    from kestrel_release.adapters import pypi, pypi_config
    from kestrel_release.retry import RetryPolicy

    try:
        index = pypi_config.resolve_index(target, cfg.targets, end.repository_url, end.simple_url)
    except KestrelError as exc:
        return [f"{target}: {exc.message}"]
    out = []
    creds = None
    try:  # presence, resolved exactly as publish will (given > TWINE_* > .pypirc > keyring)
        creds = pypi_config.resolve_credentials(index, given=end.credentials)
    except KestrelError as exc:
        out.append(f"{target}: {exc.message} ({exc.hint})" if exc.hint else f"{target}: {exc.message}")
    # A read, not an upload: one retry and a short deadline keep an unreachable index from holding preflight.
    policy = dataclasses.replace(
        RetryPolicy.from_config(cfg.publish), retries=1, timeout=min(cfg.publish.timeout, 15.0)
    )
    try:
        there = pypi.existing_files(index, cfg.name, policy, creds)
    except KestrelError as exc:
        return [*out, f"{target}: cannot read what {index.simple_url} holds for {cfg.name}: {exc.message}"]
    mine = {name: info for name, info in there.items() if _version_of(name) == _normal(version)}
    if not mine:
        return [*out, *_quota(cfg, index, there, creds, policy)]
    if not prebuilt:
        if not resume:
            out.append(
                Taken(
                    f"{target}: {cfg.name} {version} is already on {index.simple_url} ({len(mine)} file(s)); an "
                    "index never takes files of a version twice: release a new version (--bump)"
                )
            )
        return out
    return out + _prebuilt_conflicts(cfg, target, index, mine)


def _prebuilt_conflicts(cfg, target: str, index, there: dict[str, dict[str, str]]) -> list[str]:
    """release --from: the same bytes may already be there (skipped later); other bytes never can."""
    from types import SimpleNamespace

    from kestrel_release import manifest
    from kestrel_release.fsutil import sha256_file
    from kestrel_release.stages.verify import pypi as verify_pypi

    local = {p.name: p for p in manifest.wheel_paths(cfg.out_path, cfg.name)}
    out = [
        f"{target}: {name} is already on {index.simple_url} with other bytes (index sha256 {info['sha256']}); "
        "a filename can never be reused: bump the version and rebuild"
        for name, info in there.items()
        if name in local and info["sha256"] and info["sha256"] != sha256_file(local[name])
    ]
    missing = [SimpleNamespace(name=cfg.name, version=str(cfg.version), filename=n) for n in local if n not in there]
    if missing:  # PyPI's 14-day rule for new files of an existing release (reused from publish)
        out += [
            f"{target}: {f.member}: {f.message}"
            for f in verify_pypi.release_age_check(missing, index.simple_url, min(cfg.publish.timeout, 10.0))
            if f.severity == "error"
        ]
    return out


def _quota(cfg, index, there: dict, creds, policy) -> list[str]:
    """publish's quota forecast, before the build: the next release is estimated by the largest earlier one."""
    from kestrel_release.adapters import pypi_json
    from kestrel_release.stages.publish import quota

    usage = pypi_json.project_usage(index.simple_url, cfg.name, min(policy.timeout, 10.0))
    if usage is None or not usage.exists or not usage.releases:
        return []  # no JSON API or a new project: publish's own forecast says so
    estimate = max(usage.releases.values())
    limit = cfg.verify.project_size_budget
    if usage.total + estimate <= limit:
        return []
    return [
        f"{index.name}: {cfg.name} holds {console.size(usage.total)} of its {console.size(limit)} project limit; "
        f"a release the size of its largest one ({console.size(estimate)}) would go over it: {quota.REMEDIES}"
    ]


def _github_problems(cfg, end) -> list[str]:
    from kestrel_release.adapters import github as github_adapter

    out = []
    if not end.repo:
        out.append(f"github: no repository configured: {REPO_HINT}")
    if end.token is None:  # the real GitHub: the token publish will use must be present, and see the repo
        try:
            token = github_adapter.resolve_token(None, None, required=True)
        except KestrelError as exc:
            return [*out, f"github: {exc.message} ({exc.hint})"]
        if end.repo and token:
            out += _github_repo_problems(cfg, end.repo, token)
    return out


def _github_repo_problems(cfg, repo: str, token: str) -> list[str]:
    """Open the repository with the token as publish will (a read): missing, invisible or read-only is a problem."""
    from kestrel_release.adapters.github import GithubClient
    from kestrel_release.retry import RetryPolicy

    policy = dataclasses.replace(
        RetryPolicy.from_config(cfg.publish), retries=1, timeout=min(cfg.publish.timeout, 15.0)
    )
    api_url = cfg.github().api_url
    try:
        client = GithubClient(api_url, token, repo, timeout=policy.timeout, policy=policy)
    except KestrelError as exc:
        return [f"github: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")]
    if client.can_push() is False:
        return [f"github: the token can read {repo} but not write to it (creating releases needs contents:write)"]
    return []


def _normal(version: str) -> str:
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version))
    except InvalidVersion:
        return version


def _version_of(filename: str) -> str | None:
    from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename

    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
