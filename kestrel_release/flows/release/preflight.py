"""release's preflight: everything that would make the release fail later, found before its first side effect.

A release that builds for minutes and then fails at a publish step (no token, the version
already on PyPI, no repository) wastes the build and may leave a bump behind. So before the
bump, preflight asks each planned target (targets/: its `preflight`) what publish will ask it:
for an index, credentials present (resolved as publish resolves them; values are never printed),
the version not on the index yet (or, for `--from`, only with the same bytes), PyPI's 14-day rule
and the project quota; for GitHub, a repository and token; plus a clean git tree. Every problem is collected and
reported at once (exit 3). The rehearsal runs the same checks against its stand-ins.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from kestrel_release import targets as registry
from kestrel_release.adapters import git
from kestrel_release.errors import KestrelError, PreflightError
from kestrel_release.targets.base import Taken
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.flows.release.rehearsal import Endpoints

# What a rehearsal cannot know: printed at its end so nobody mistakes a rehearsal for a real release.
REAL_WORLD_ONLY = (
    "the real credentials are valid and may upload this project (TestPyPI, PyPI) and write releases (GitHub)",
    "acceptance by the real indexes beyond the rules the strict sandbox enforces",
    "Trusted Publishing (OIDC) when the release runs in CI",
    "the GitHub token's permissions and the real repository's settings (immutable releases, protected tags)",
    "the network to the real indexes and api.github.com",
    "whether the version is already on the real indexes (a real release's preflight reads them)",
)


def available_pythons(cfg: Config) -> tuple[Config, list[str]]:
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
    cfg: Config,
    targets: tuple[str, ...],
    ends: Endpoints,
    *,
    version: str,
    allow_dirty: bool,
    prebuilt: bool,
    resume: bool = False,
) -> list[str]:
    """Every problem that would make this release fail later (empty: go ahead)."""
    problems: list[str] = []
    tree = git.state(cfg.project_dir)
    if tree.dirty and not allow_dirty:
        problems.append(
            f"the git tree at {cfg.project_dir} has uncommitted changes (a release is built from a "
            "commit): commit them, or pass --allow-dirty"
        )
    for name in (n for n in registry.names(cfg) if n in targets):  # each target asks what its publish will
        problems += registry.get(cfg, name).preflight(ends[name], version=version, prebuilt=prebuilt, resume=resume)
    return problems


__all__ = ["REAL_WORLD_ONLY", "Taken", "VersionTaken", "available_pythons", "check", "raise_for"]


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
