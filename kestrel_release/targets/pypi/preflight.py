"""A release's preflight for one PyPI-like index (targets/pypi/ asks it): found before the first side effect.

Credentials present (resolved as publish resolves them; values are never printed), the version not on
the index yet (or, for `--from`, only with the same bytes), PyPI's 14-day rule and the project quota.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kestrel_release.errors import KestrelError
from kestrel_release.targets.base import Taken
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.adapters.pypi.client import Index
    from kestrel_release.adapters.retry import RetryPolicy
    from kestrel_release.config.model import Config


def problems(
    cfg: Config, target: str, end: Any, version: str, prebuilt: bool, resume: bool, builtin: Any = None
) -> list[str]:
    """What would make publishing `version` to the index `target` (at `end`) fail: its URL, credentials,
    the version already there (or, for release --from, other bytes), the 14-day rule, the project quota."""
    from kestrel_release.adapters.pypi import client as pypi
    from kestrel_release.adapters.pypi import config as pypi_config
    from kestrel_release.adapters.retry import RetryPolicy

    try:
        index = pypi_config.resolve_index(target, cfg.targets, end.repository_url, end.simple_url, builtin=builtin)
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


def _prebuilt_conflicts(cfg: Config, target: str, index: Index, there: dict[str, dict[str, str]]) -> list[str]:
    """release --from: the same bytes may already be there (skipped later); other bytes never can."""
    from types import SimpleNamespace

    from kestrel_release.files.fsutil import sha256_file
    from kestrel_release.output_dir import manifest
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


def _quota(cfg: Config, index: Index, there: dict, creds: tuple[str, str] | None, policy: RetryPolicy) -> list[str]:
    """publish's quota forecast, before the build: the next release is estimated by the largest earlier one."""
    from kestrel_release.adapters.pypi import json_api as pypi_json
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
