"""`publish`: upload verified wheels to one target (an index, a GitHub release, a static index)."""

from __future__ import annotations

from typing import Annotated

import typer

from kestrel_release import console
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
    repository_url: Annotated[str | None, typer.Option("--repository-url", help="Upload URL of the index.")] = None,
    simple_url: Annotated[
        str | None, typer.Option("--simple-url", help="Simple index URL (default: derived from the upload URL).")
    ] = None,
    dry_run: DryRunOpt = False,
    yes: YesOpt = False,
    smoke_test: Annotated[
        bool, typer.Option("--smoke-test", help="Install the published version into fresh venvs.")
    ] = False,
    token_env: TokenEnvOpt = None,
    repo: Annotated[str | None, typer.Option("--repo", help="GitHub OWNER/NAME.")] = None,
    tag: Annotated[str | None, typer.Option("--tag", help="GitHub release tag (default: the rolling nightly).")] = None,
    api_url: Annotated[
        str | None, typer.Option("--api-url", help="GitHub API URL (Enterprise: https://HOST/api/v3).")
    ] = None,
    prune: Annotated[
        bool | None,
        typer.Option("--prune/--no-prune", help="Remove wheels of other versions from the rolling release."),
    ] = None,
    python: Annotated[
        str | None, typer.Option("--python", help="The Pythons the verify matrix and --smoke-test expect, e.g. 3.12.")
    ] = None,
    allow_insecure_http: InsecureOpt = False,
) -> None:
    """Upload verified wheels to a package index or a GitHub release, idempotently."""
    from kestrel_release.adapters import http_policy

    http_policy.allow_insecure(allow_insecure_http)
    if target is None:
        target = target_registry.default_publish_target(repository_url=repository_url)
    from kestrel_release.targets import publishing as stage

    cfg = load_config(project, json, python=comma_list(python))
    options = stage.options(
        cfg,
        target,
        dry_run=dry_run,
        yes=yes,
        token_env=token_env,
        repository_url=repository_url,
        simple_url=simple_url,
        smoke_test=smoke_test,
        repo=repo,
        tag=tag,
        api_url=api_url,
        prune=prune,
        pythons=comma_list(python),
    )
    result = stage.run(cfg, paths or [], target, options)
    console.emit_json(result.to_json()) if json else stage.render(cfg, target, result)


def register(app: typer.Typer) -> None:
    app.command()(publish)
