"""`kestrel-release version`: print, bump or set the version everywhere it is written.

The version lives in `[project].version` of the kernel package's pyproject.toml
(rewritten with tomlkit, so comments, ordering and quoting stay byte-identical)
and in every `version_files` entry of the config (a path relative to the project
and a pattern containing `{version}`). All files must agree before a change; the
change is all-or-nothing: every file is written to a temp file and renamed, and
if any write fails the files already written are restored.

Bump kinds (PEP 440 via `packaging`; never a local `+...` version, which PyPI refuses):

=========  ===========================================================================
kind       result (examples from 0.1.0 unless noted)
=========  ===========================================================================
major      1.0.0; a pre/dev release of X.0.0 is finalized: 1.0.0rc1 -> 1.0.0
minor      0.2.0; a pre/dev release of X.Y.0 is finalized: 0.2.0b1 -> 0.2.0
patch      0.1.1; a pre/dev release is finalized: 0.1.1rc2 -> 0.1.1, 0.1.1.dev3 -> 0.1.1
pre        cycles the phase a -> b -> rc: a final starts 0.1.1a1; 0.1.1a2 -> 0.1.1b1;
           0.1.1b1 -> 0.1.1rc1; 0.1.1rc1 -> 0.1.1rc2; 0.1.1.dev3 -> 0.1.1a1;
           0.1.1a1.dev2 -> 0.1.1a1
rc         0.1.1rc1; 0.1.1a2 -> 0.1.1rc1; 0.1.1rc1 -> 0.1.1rc2; 0.1.1rc2.dev1 -> 0.1.1rc2
post       0.1.0.post1; 0.1.0.post1 -> 0.1.0.post2 (refused on pre and dev releases)
dev        0.1.1.dev1; 0.1.1.dev1 -> 0.1.1.dev2; 0.1.1a1 -> 0.1.1a2.dev1;
           0.1.0.post1 -> 0.1.0.post2.dev1
nightly    0.1.1.devYYYYMMDDHHMM (UTC) of the next patch: sortable, accepted by PyPI.
           A version that already has a .devN keeps its base (0.1.1.dev202611221530
           -> 0.1.1.dev202611230300); 0.1.1rc1 -> 0.1.1rc2.devYYYYMMDDHHMM
=========  ===========================================================================

Refused with exit 2: a dynamic version, an invalid or local version, a version that
does not go forward (unless --force), files that disagree (unless --force, which
overwrites them all), a dirty tree with --commit/--tag (unless --allow-dirty), an
existing tag. `--tag` implies `--commit` (a tag must point at the version change).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
from kestrel_release.stages.version.files import (
    diff_of,
    disagreeing,
    disagreement,
    rewrite_all,
    stated_version,
    version_locations,
    write_all,
)
from kestrel_release.stages.version.pep440 import next_version, parse
from kestrel_release.stages.version.result import VersionResult  # re-exported: callers name version.VersionResult
from kestrel_release.stages.version.source import backend_version as _backend_version
from kestrel_release.stages.version.source import check_bumpable, repo_tag_prefix
from kestrel_release.stages.version.source import is_static as _static
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.stages.version.files import Location

# ---------------------------------------------------------------- show / change


def run(cfg: Config, action: str | None, value: str | None = None, **options: bool) -> VersionResult:
    """`version` (action None: show), `version bump KIND` or `version set X`; options as for `change`."""
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg)  # a project without [project]: the backend says (cached)
    if action is None:
        return show(cfg)
    if action not in ("bump", "set"):
        raise UsageError(f"unknown version action '{action}'", "use 'bump KIND' or 'set X'")
    if value is None:
        raise UsageError(f"version {action} needs an argument", "see kestrel-release version --help")
    return change(cfg, action, value, **options)


def show(cfg: Config) -> VersionResult:
    """The current version (warns, without refusing, when the files disagree)."""
    from kestrel_release.stages.version import source as version_source

    tool = None if _static(cfg) else version_source.vcs_tool(cfg.project_dir)
    if tool:
        current = _backend_version(cfg)
        return VersionResult(
            "show", cfg.name, current, current, [], warnings=[f"the version comes from git tags ({tool})"]
        )
    if cfg.metadata_source == "backend" and not cfg.version_files and cfg.version is not None:
        return VersionResult(
            "show",
            cfg.name,
            cfg.version,
            cfg.version,
            [],
            warnings=[
                "the build backend reports this version; list the files that hold it in version_files to bump it"
            ],
        )
    locations = version_locations(cfg)
    current = stated_version(locations)
    return VersionResult("show", cfg.name, current, current, _names(locations), warnings=disagreeing(locations))


def _names(locations: list[Location]) -> list[str]:
    return list(dict.fromkeys(loc.rel for loc in locations))  # a file named by two patterns once


def _target(current: str, action: str, value: str, force: bool) -> str:
    if action == "bump":
        new = next_version(current, value)
    elif action == "set":
        new = str(parse(value))
    else:
        raise UsageError(f"unknown version action '{action}'", "use 'bump KIND' or 'set X'")
    if not force and parse(new) <= parse(current):
        word = "is already" if parse(new) == parse(current) else "would go backwards from"
        raise UsageError(f"version {new} {word} the current version {current}", "pass --force to write it anyway")
    return new


def change(
    cfg: Config,
    action: str,
    value: str,
    *,
    dry_run: bool = False,
    commit: bool = False,
    tag: bool = False,
    allow_dirty: bool = False,
    force: bool = False,
) -> VersionResult:
    """Bump or set the version in pyproject.toml and every configured version file.

    `action` is "bump" (value: one of KINDS) or "set" (value: a PEP 440 version).
    With `dry_run` nothing is written; the result's `diff` shows every change.
    `tag` implies `commit`; both refuse a dirty tree unless `allow_dirty`.
    """
    if action == "bump":
        check_bumpable(cfg, value)
    elif action == "set":
        check_bumpable(cfg, "patch", str(parse(value)))
    from kestrel_release.stages.version import resume as version_resume

    recovered = None if dry_run else version_resume.recover(cfg, action, value)  # a killed run's change
    if recovered is not None:
        if recovered[1]:
            return recovered[0]
        cfg = dataclasses.replace(cfg, version=recovered[0].new) if _static(cfg) else cfg
    locations = version_locations(cfg)
    problem = disagreement(locations)
    if problem and not force:
        raise UsageError(problem, "make them agree, or pass --force to overwrite them all")
    current = stated_version(locations)
    new = _target(current, action, value, force)
    changes = rewrite_all(locations, new)
    result = VersionResult(
        action, cfg.name, current, new, [loc.rel for loc, _ in changes], dry_run=dry_run, diff=diff_of(changes)
    )
    commit = commit or tag
    tag_name = f"{repo_tag_prefix(cfg.project_dir)}{new}" if tag else None
    root = _git_preflight(cfg, tag_name, allow_dirty) if commit else None
    if dry_run:
        return result
    with fsutil.project_lock(cfg.project_dir, "version"):
        version_resume.collect_leftovers(locations)
        with version_resume.journal(cfg, action, value, current, new):
            write_all(changes, current)
        if root is not None:
            _git_record(cfg, result, changes, tag_name)
    return result


def _git_preflight(cfg: Config, tag_name: str | None, allow_dirty: bool) -> Path:
    """Refuse before writing anything: not a repository, a dirty tree, an existing tag."""
    from kestrel_release.adapters import git

    st = git.state(cfg.project_dir)
    if st.root is None or st.commit is None:
        raise UsageError(
            f"{cfg.project_dir} is not in a git repository with a commit",
            "drop --commit/--tag or run 'git init' and commit first",
        )
    if st.dirty and not allow_dirty:
        raise UsageError(
            f"the git tree under {cfg.project_dir} has uncommitted changes",
            "commit or stash them, or pass --allow-dirty",
        )
    if tag_name and git.tag_exists(st.root, tag_name):
        raise UsageError(f"git tag {tag_name} already exists", "delete it or choose another version")
    return st.root


def _git_record(cfg: Config, result: VersionResult, changes: list[tuple[Location, str]], tag: str | None) -> None:
    """Commit the changed files (restoring them if the commit fails), then tag."""
    from kestrel_release.adapters import git

    message = f"{cfg.name} {result.new}"
    try:
        git.commit_files(cfg.project_dir, [loc.path for loc, _ in changes], f"Bump {message}")
    except UsageError:
        for loc, _ in changes:
            fsutil.atomic_write_text(loc.path, loc.text)
        raise
    result.commit = git.state(cfg.project_dir).commit
    if tag:
        git.tag(cfg.project_dir, tag, message)  # in the repository's own style (26.1.1 or v26.1.1)
        result.tag = tag


def render(result: VersionResult) -> None:
    """Human output: the version, or what changed (the diff with --dry-run)."""
    for warning in result.warnings:
        console.warn(warning)
    if result.action == "show":
        console.answer(result.new)  # stdout, alone: v=$(kestrel-release version)
        return
    if result.dry_run:
        console.info(result.diff.rstrip("\n"))
        console.ok(f"dry run: would change {result.old} -> {result.new} in {', '.join(result.files)}")
        return
    console.ok(f"{result.name} {result.old} -> {result.new} in {', '.join(result.files)}")
    if result.commit:
        console.ok(f"committed {result.commit[:12]}" + (f", tagged {result.tag}" if result.tag else ""))
