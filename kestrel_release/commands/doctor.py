"""`doctor`: is this machine fit to build and publish (GPU, CUDA toolkit, interpreters, tools, credentials)."""

from __future__ import annotations

import typer

from kestrel_release.commands.options import JsonOpt, ProjectOpt, load_config
from kestrel_release.ui import console


def doctor(project: ProjectOpt = None, json: JsonOpt = False) -> None:
    """Check the GPU, CUDA toolkit, interpreters, tools, git and credentials."""
    from kestrel_release.flows import doctor as stage

    cfg = load_config(project, json)  # the backend's answer (a project without [project]) is one of doctor's checks
    report = stage.run(cfg)
    console.emit_json(report.to_json()) if json else stage.render(report)
    stage.raise_for(report)


def register(app: typer.Typer) -> None:
    app.command()(doctor)
