"""`build`: one wheel per Python (or per torch x CUDA variant), kernels precompiled once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kestrel_release.commands.options import JsonOpt, LayoutOpt, NoGpuCheckOpt, ProjectOpt, comma_list, load_config
from kestrel_release.ui import console


def build(
    project: ProjectOpt = None,
    json: JsonOpt = False,
    python: Annotated[
        str | None, typer.Option("--python", help="Comma-separated versions, e.g. 3.12,3.13,3.14t (t: free-threaded).")
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Python builds at once (default: fitted to cores and free memory)."),
    ] = None,
    out: Annotated[str | None, typer.Option("--out", help="Output directory (default: dist-all).")] = None,
    frontend: Annotated[str | None, typer.Option("--frontend", help="uv or build.")] = None,
    no_isolation: Annotated[
        bool, typer.Option("--no-isolation", help="Build without isolated envs (offline hosts).")
    ] = False,
    no_gpu_check: NoGpuCheckOpt = False,
    check_reproducible: Annotated[
        bool, typer.Option("--check-reproducible", help="Build twice and compare bytes.")
    ] = False,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Rebuild everything (kernels too), then refresh the caches.")
    ] = False,
    platform: Annotated[
        str | None,
        typer.Option(
            "--platform", help="The configured platform to build here (default: the one this machine can build)."
        ),
    ] = None,
    container: Annotated[
        str | None,
        typer.Option(
            "--container",
            help="Build the Linux wheels inside this image (or, with the chroot engine, root directory).",
        ),
    ] = None,
    layout: LayoutOpt = None,
    variant: Annotated[
        str | None,
        typer.Option(
            "--variant",
            help="With [tool.kestrel-release.variants]: the variants to build (names or words like "
            "torch2.13-cu130, comma-separated; default: every one this machine can build).",
        ),
    ] = None,
) -> None:
    """Precompile kernels once, build one wheel per Python in parallel, repair to manylinux."""
    from kestrel_release.stages import build_wheels as stage
    from kestrel_release.variants.hub_layout import check_layout

    out = str(Path(out).expanduser().resolve()) if out else None  # a flag's path is relative to the cwd
    dotted: dict[str, Any] = {
        "build.jobs": jobs,
        "build.frontend": frontend,
        "build.isolation": False if no_isolation else None,
        "build.container": container,
    }
    cfg = load_config(project, json, python=comma_list(python), out_dir=out, **dotted)
    options: dict[str, Any] = {
        "gpu_check": not no_gpu_check,
        "check_reproducible": check_reproducible,
        "platforms": comma_list(platform) or (),
        "use_cache": not no_cache,
        "layout": check_layout(layout),
    }
    if cfg.variants is not None or variant:  # one build per torch x CUDA variant
        from kestrel_release.stages.build_wheels import variant_build

        matrix = stage.run_variants(cfg, comma_list(variant) or (), **options)
        console.emit_json(matrix.to_json()) if json else variant_build.render(matrix)
        return
    result = stage.run(cfg, **options)
    console.emit_json(result.to_json()) if json else stage.render(result)


def register(app: typer.Typer) -> None:
    app.command()(build)
