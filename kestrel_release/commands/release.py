"""`release`: the whole pipeline (preflight, bump, build, verify, publish, smoke test), resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kestrel_release import run_context
from kestrel_release import targets as target_registry  # the flag's help and default list the built-in targets
from kestrel_release.commands.options import (
    InsecureOpt,
    JsonOpt,
    NoGpuCheckOpt,
    ProjectOpt,
    YesOpt,
    comma_list,
    complete_target,
    load_config,
)
from kestrel_release.ui import console


def release(
    project: ProjectOpt = None,
    json: JsonOpt = False,
    bump: Annotated[str | None, typer.Option("--bump", help="Version bump kind before building.")] = None,
    targets: Annotated[
        str,
        typer.Option(
            "--targets",
            help=f"Comma-separated: {target_registry.help_names(last=',', sep=',')}.",
            autocompletion=complete_target,
        ),
    ] = target_registry.help_names(last=",", sep=","),
    rehearse: Annotated[
        bool, typer.Option("--rehearse", help="Run against local stand-ins (sandbox PyPI, GitHub emulator).")
    ] = False,
    yes: YesOpt = False,
    resume: Annotated[bool, typer.Option("--resume", help="Continue after the last finished step.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Override the saved state: start a new release over an unfinished bump, or with --resume rebuild from the build step.",
        ),
    ] = False,
    python: Annotated[
        str | None,
        typer.Option(
            "--python", help="Comma-separated versions (with --resume: the same, or fewer before the build finished)."
        ),
    ] = None,
    no_gpu_check: NoGpuCheckOpt = False,
    from_dir: Annotated[
        Path | None, typer.Option("--from", help="Release this build or assembled output; skip the build.")
    ] = None,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="Release from a git tree with uncommitted changes.")
    ] = False,
    allow_insecure_http: InsecureOpt = False,
) -> None:
    """The whole pipeline: preflight, bump, build, verify, publish, smoke test."""
    from kestrel_release.adapters import http_policy
    from kestrel_release.flows import release as stage

    http_policy.allow_insecure(allow_insecure_http)

    out = str(from_dir.resolve()) if from_dir else None  # a flag's path is relative to the cwd
    cfg = load_config(project, json, python=comma_list(python), out_dir=out)
    options = stage.Options(
        targets=comma_list(targets) or (),
        bump=bump,
        rehearse=rehearse,
        yes=yes,
        resume=resume,
        gpu_check=not no_gpu_check,
        prebuilt=from_dir is not None,
        force=force,
        allow_dirty=allow_dirty,
    )
    result = stage.run(cfg, options, run=run_context.current())
    console.emit_json(result.to_json()) if json else stage.render(result)


def register(app: typer.Typer) -> None:
    app.command()(release)
