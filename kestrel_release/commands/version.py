"""`version`: print, bump or set the project's version in every file that holds it."""

from __future__ import annotations

from typing import Annotated

import typer

from kestrel_release.commands.options import DryRunOpt, JsonOpt, ProjectOpt, load_config
from kestrel_release.ui import console


def version(
    action: Annotated[str | None, typer.Argument(help="bump or set (omit to print the version).")] = None,
    value: Annotated[
        str | None, typer.Argument(help="major|minor|patch|pre|rc|post|dev|nightly, or a version for set.")
    ] = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
    dry_run: DryRunOpt = False,
    commit: Annotated[bool, typer.Option("--commit", help="Make a git commit.")] = False,
    tag: Annotated[bool, typer.Option("--tag", help="Make an annotated git tag vX.Y.Z (implies --commit).")] = False,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="Allow a dirty git tree with --commit/--tag.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Allow a version that goes backwards, or overwrite files that disagree.")
    ] = False,
) -> None:
    """Print (on stdout), bump or set the version in pyproject.toml and every configured file.

    \b
    kestrel-release version              print the version (v=$(kestrel-release version))
    kestrel-release version bump KIND    KIND: major, minor, patch, pre, rc, post, dev, nightly
    kestrel-release version set X.Y.Z    set an exact PEP 440 version
    """
    from kestrel_release.stages import version as stage

    if action is None:  # printing keeps nothing: it works where no cache dir can be made (HOME=/proc)
        from kestrel_release.files import statedir

        statedir.allow_temporary_cache()
    cfg = load_config(project, json)
    result = stage.run(
        cfg, action, value, dry_run=dry_run, commit=commit, tag=tag, allow_dirty=allow_dirty, force=force
    )
    console.emit_json(result.to_json()) if json else stage.render(result)


def register(app: typer.Typer) -> None:
    app.command()(version)
