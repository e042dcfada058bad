"""`verify`: inspect wheels (a project's build output, or any wheel) before they are published."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kestrel_release import targets as target_registry  # the flag's help lists the built-in targets
from kestrel_release.commands.options import JsonOpt, PathsArg, ProjectOpt, comma_list, complete_target, load_config
from kestrel_release.ui import console


def verify(
    paths: PathsArg = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help=f"{target_registry.help_names(target_registry.VERIFY_DEFAULT, ' or ')} acceptance rules.",
            autocompletion=complete_target,
        ),
    ] = None,
    platform: Annotated[
        str | None,
        typer.Option(
            "--platform",
            help="Check the matrix of these configured platforms only (one machine's output); not recorded for publish.",
        ),
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Configured platforms without wheels are warnings (a build before assemble); not recorded for publish.",
        ),
    ] = False,
    python: Annotated[
        str | None,
        typer.Option("--python", help="The Pythons the matrix expects (a subset of the configured ones), e.g. 3.12."),
    ] = None,
    attestation: Annotated[
        Path | None,
        typer.Option(
            "--attestation",
            help="Check each wheel against this attestation: a PEP 740 *.publish.attestation or a Sigstore "
            "bundle (*.sigstore.json, GitHub's artifact attestations): subject name and sha256.",
        ),
    ] = None,
    identity: Annotated[
        str | None,
        typer.Option(
            "--identity",
            help="With --attestation: the signer expected (a GitHub workflow's URI, e.g. "
            "https://github.com/OWNER/REPO/.github/workflows/kernels-release.yml@refs/tags/v1.0.0); "
            "the Sigstore signature is then verified (needs Sigstore's trust root online).",
        ),
    ] = None,
    issuer: Annotated[
        str | None,
        typer.Option("--issuer", help="With --identity: its OIDC issuer (default: GitHub Actions')."),
    ] = None,
    sigstore_offline: Annotated[
        bool,
        typer.Option(
            "--sigstore-offline",
            help="With --identity: use the Sigstore trust root sigstore-python ships instead of refreshing it "
            "online (a machine that cannot reach Sigstore; it misses keys rotated since).",
        ),
    ] = False,
) -> None:
    """Inspect wheels for leaks, CUDA architectures, PyPI acceptance and integrity."""
    from kestrel_release.config_loader.load import discover_project
    from kestrel_release.stages import verify as stage
    from kestrel_release.stages.verify import pypi as verify_pypi

    if (identity or issuer or sigstore_offline) and attestation is None:
        from kestrel_release.errors import UsageError

        raise UsageError(
            "--identity, --issuer and --sigstore-offline check an attestation's signer", "pass --attestation FILE too"
        )
    found = project or discover_project()  # no kernel project: any wheel, integrity and PyPI's rules only
    cfg = load_config(found, json, python=comma_list(python)) if found else verify_pypi.standalone_config()
    if found is None:
        console.configure(json_mode=json)
    report = stage.run(
        cfg,
        paths or [],
        target=target,
        project=found is not None,
        ask_index=target is not None,
        platforms=comma_list(platform) or (),
        partial=partial,
        attest=stage.Attested(attestation, identity, issuer, sigstore_offline) if attestation is not None else None,
    )
    console.emit_json(report.to_json()) if json else stage.render(report)
    stage.raise_for(report)


def register(app: typer.Typer) -> None:
    app.command()(verify)
