"""`assemble`: one release from the build outputs of several machines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kestrel_release.commands.options import JsonOpt, LayoutOpt, ProjectOpt, load_config
from kestrel_release.ui import console


def assemble(
    inputs: Annotated[
        list[Path], typer.Argument(help="Build output directories (one per machine or CI job).", show_default=False)
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The release directory to write (new, empty, or an earlier assembled one).")
    ],
    project: ProjectOpt = None,
    json: JsonOpt = False,
    layout: LayoutOpt = None,
) -> None:
    """Combine the build outputs of several machines into one release (wheels, SHA256SUMS, manifest)."""
    from kestrel_release.stages import assemble as stage
    from kestrel_release.variants.hub_layout import check_layout

    cfg = load_config(project, json)
    result = stage.run(cfg, inputs, out, check_layout(layout))  # a failure's JSON document comes from entry
    console.emit_json(result.to_json()) if json else stage.render(result)


def register(app: typer.Typer) -> None:
    app.command()(assemble)
