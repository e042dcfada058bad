"""`publish`: upload verified wheels to one target (an index, a GitHub release, a static index)."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer

from kestrel_release import targets as target_registry  # the flag's help lists the built-in targets
from kestrel_release.commands.options import (
    DryRunOpt,
    InsecureOpt,
    JsonOpt,
    PathsArg,
    ProjectOpt,
    TokenEnvOpt,
    YesOpt,
    comma_list,
    complete_target,
    load_config,
)
from kestrel_release.ui import console


def publish(
    paths: PathsArg = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help=f"{target_registry.help_names()}, or a .pypirc repository name (default: $TWINE_REPOSITORY, else "
            f"{target_registry.DEFAULT_PUBLISH}).",
            autocompletion=complete_target,
        ),
    ] = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    token_env: TokenEnvOpt = None,
    python: Annotated[
        str | None, typer.Option("--python", help="The Pythons the verify matrix and --smoke-test expect, e.g. 3.12.")
    ] = None,
    allow_insecure_http: InsecureOpt = False,
    **kind_flags: Any,
) -> None:
    """Upload verified wheels to a package index or a GitHub release, idempotently."""
    from kestrel_release.adapters import http_policy

    http_policy.allow_insecure(allow_insecure_http)
    if target is None:
        target = target_registry.default_publish_target(repository_url=kind_flags.get("repository_url"))
    from kestrel_release.targets import publishing as stage

    cfg = load_config(project, json, python=comma_list(python))
    options = stage.options(
        cfg, target, dry_run=dry_run, yes=yes, token_env=token_env, pythons=comma_list(python), **kind_flags
    )
    result = stage.run(cfg, paths or [], target, options)
    console.emit_json(result.to_json()) if json else stage.render(cfg, target, result)


def _signature() -> inspect.Signature:
    """publish's parameters: its own, then each kind's flags (targets.publish_flags: a kind declares the
    flags it takes on its Options; the stage refuses a flag of another kind, exit 2)."""
    vars(publish).pop("__signature__", None)  # registered before in this process: start from the function's own
    own = inspect.signature(publish, eval_str=True)
    fixed = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    kinds = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=f.default,
            annotation=Annotated[f.type, typer.Option(*f.spelling.split(" "), help=f.help)],
        )
        for f in target_registry.publish_flags()
    ]
    keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in fixed[-2:]]  # --python, insecure last
    return own.replace(parameters=[*fixed[:-2], *kinds, *keyword])


def register(app: typer.Typer) -> None:
    publish.__signature__ = _signature()  # type: ignore[attr-defined]
    app.command()(publish)
