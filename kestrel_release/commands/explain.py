"""`explain`: which wheel a machine installs and which CUDA image its GPU and driver load, or why none."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kestrel_release.commands.options import JsonOpt, ProjectOpt, load_config
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.flows.explain.arch_source import ArchSource


def explain(
    source: Annotated[Path | None, typer.Argument(help="A wheel or a directory of wheels.", show_default=False)] = None,
    index: Annotated[
        str | None, typer.Option("--index", help="The project's page on a simple index (PEP 503/691).")
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option("--gpu", help="Compute capability (sm_89, 8.9) or auto (NVML; the default for wheels)."),
    ] = None,
    driver: Annotated[
        str | None, typer.Option("--driver", help="NVIDIA driver version, e.g. 550.54.15 (auto: the detected one).")
    ] = None,
    python: Annotated[str | None, typer.Option("--python", help="The machine's Python (default: this one).")] = None,
    platform: Annotated[
        str | None, typer.Option("--platform", help="The machine's platform tag (default: this host's).")
    ] = None,
    torch: Annotated[
        str | None,
        typer.Option("--torch", help="A torch version (2.13, 2.13+cu126): which variant of the project to install."),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds the whole download from --index may take.", min=1),
    ] = 900.0,
    project: ProjectOpt = None,
    json: JsonOpt = False,
) -> None:
    """Which wheel a machine installs and which cubin/PTX its GPU and driver load, or why none.

    \b
    Exit 0: every CUDA binary of the wheel has an image this GPU and driver load.
    Exit 5: no wheel for this Python/platform, or a binary with nothing loadable (the fix is printed).
    Exit 3: --gpu auto found no GPU.
    With --torch: the variant of the project's torch x CUDA matrix, its index and the pip/uv line (exit 5: none).
    """
    from kestrel_release.flows import explain as stage

    if torch is not None:
        cfg = load_config(project, json)
        answer = stage.run_torch(cfg, torch, gpu, platform)
        console.emit_json(answer.to_json()) if json else stage.render_torch(answer)
        stage.raise_for_torch(answer)
        return
    console.configure(json_mode=json)
    gpu = gpu or "auto"
    request = stage.Request(source, index, gpu, driver, python, platform, arches=_arch_source(project), timeout=timeout)
    report = stage.run(request)
    console.emit_json(report.to_json()) if json else stage.render(report)
    stage.raise_for(report)


def _arch_source(project: Path | None) -> ArchSource:
    """Where the project's arch list comes from, for explain's fix; the default (cuda_arch) when no
    configured project is here or its config does not load (explaining wheels needs none)."""
    from kestrel_release.config_loader import load as config
    from kestrel_release.errors import ConfigError
    from kestrel_release.flows.explain import arch_source

    if project is None and config.discover_project() is None:
        return arch_source.ArchSource()
    try:
        return arch_source.find(config.load(project))
    except ConfigError:
        return arch_source.ArchSource()


def register(app: typer.Typer) -> None:
    app.command()(explain)
