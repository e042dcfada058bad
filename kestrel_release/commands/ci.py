"""`ci init`: write the GitHub Actions workflow that builds, verifies and publishes on GPU runners."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kestrel_release.commands.options import ProjectOpt, load_config
from kestrel_release.ui import console

ci_app = typer.Typer(help="Generate the CI workflow.", no_args_is_help=True)


@ci_app.command("init")
def ci_init(
    project: ProjectOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", help="Workflow path (default: .github/workflows/kernels-release.yml at the git root)."
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing workflow.")] = False,
) -> None:
    """Write a GitHub Actions workflow: per-Python GPU builds, verify, publish."""
    from kestrel_release.flows import ci as stage

    cfg = load_config(project)
    path, tool = stage.init(cfg, output=output, force=force)
    console.ok(f"wrote {path}")
    if tool.locked:
        console.info(f"the jobs run the kestrel-release locked in {tool.source} (uv run --locked)")
    else:  # never a name from an index: kestrel-release is not claimed on one
        console.info(
            f"the jobs install {tool.requirement} ({tool.source}): one exact commit, since kestrel-release is on "
            "no package index; change it with ci.tool_source"
        )


def register(app: typer.Typer) -> None:
    app.add_typer(ci_app, name="ci")
