"""`init`: set up an existing package (its [tool.kestrel-release] table and .gitignore lines)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kestrel_release.commands.options import JsonOpt, YesOpt, comma_list
from kestrel_release.ui import console


def init(
    project: Annotated[Path | None, typer.Option("--project", help="The package directory (default: the cwd).")] = None,
    json: JsonOpt = False,
    yes: YesOpt = False,
    python: Annotated[
        str | None,
        typer.Option("--python", help="Comma-separated versions to list (default: the supported CPythons found here)."),
    ] = None,
) -> None:
    """Set up an existing package: append a [tool.kestrel-release] table and .gitignore lines."""
    from kestrel_release.flows import init as stage

    console.configure(json_mode=json)
    result = stage.run(project, yes=yes, python=comma_list(python))  # a failure's JSON document comes from entry
    console.emit_json(result.to_json()) if json else stage.render(result)


def register(app: typer.Typer) -> None:
    app.command()(init)
