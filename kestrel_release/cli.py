"""Typer app only: parse flags, load the config, call one stage function, render.

Heavy libraries (PyGithub, twine, auditwheel, build) are imported inside the
stage modules, which are imported inside the command functions, so that
`kestrel-release --help` stays fast. What happens around every command (exit codes,
the one `error:` line, --json's failure document) is in entry.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kestrel_release import __version__, console
from kestrel_release import targets as _targets  # the flags' help lists the built-in targets
from kestrel_release.cli_sandbox import sandbox_app

app = typer.Typer(
    name="kestrel-release",
    help="Release prebuilt CUDA kernel wheels: doctor, build, verify, version, publish, release.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # locals can hold tokens
    rich_markup_mode=None,
)
ci_app = typer.Typer(help="Generate the CI workflow.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(ci_app, name="ci")

ProjectOpt = Annotated[
    Path | None,
    typer.Option("--project", help="Kernel package directory (default: cwd if configured, else ./kernels)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
LayoutOpt = Annotated[
    str | None,
    typer.Option("--layout", help="Also write kernels-hub: HF kernel-builder's build/<variant>/ with metadata.json."),
]
PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(help="Wheels or directories (default: the project's build output).", show_default=False),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")]
InsecureOpt = Annotated[
    bool,
    typer.Option(
        "--allow-insecure-http",
        help="Allow plain http:// to a host other than this machine (credentials cross the network in clear).",
    ),
]
TokenEnvOpt = Annotated[
    str | None, typer.Option("--token-env", help="Name of the environment variable holding the token.")
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"kestrel-release {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show commands and their output.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    from kestrel_release import redact

    redact.register_startup()  # before any build child can print a credential
    console.configure(verbose=verbose)


def _config(project: Path | None, json_mode: bool = False, **overrides):
    import sysconfig

    from kestrel_release import config

    # Initialise sysconfig in the main thread: its first use is not thread-safe in CPython, and
    # stages look up tools (uv's find_uv_bin, auditwheel) from worker threads.
    sysconfig.get_paths()
    console.configure(json_mode=json_mode)
    return config.load(project, overrides=overrides)  # reads only: a stage that needs the name resolves it


def complete_target(incomplete: str) -> list[str]:
    """Shell completion of --target/--targets: the target registry's names (this project's, when it loads)."""
    from kestrel_release import config
    from kestrel_release.errors import KestrelError

    try:
        configured = config.load(None).targets
    except (KestrelError, OSError):  # completion never fails: without a loadable project, the built-in names
        configured = {}
    head, _, last = incomplete.rpartition(",")
    return [f"{head},{n}" if head else n for n in _targets.known(configured) if n.startswith(last)]


def _csv(value: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


@app.command()
def doctor(project: ProjectOpt = None, json: JsonOpt = False) -> None:
    """Check the GPU, CUDA toolkit, interpreters, tools, git and credentials."""
    from kestrel_release.stages import doctor as stage

    cfg = _config(project, json)  # the backend's answer (a project without [project]) is one of doctor's checks
    report = stage.run(cfg)
    console.emit_json(report.to_json()) if json else stage.render(report)
    stage.raise_for(report)


@app.command()
def build(
    project: ProjectOpt = None,
    json: JsonOpt = False,
    python: Annotated[
        str | None, typer.Option("--python", help="Comma-separated versions, e.g. 3.12,3.13,3.14t (t: free-threaded).")
    ] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Parallel builds (default: cores).")] = None,
    out: Annotated[str | None, typer.Option("--out", help="Output directory (default: dist-all).")] = None,
    frontend: Annotated[str | None, typer.Option("--frontend", help="uv or build.")] = None,
    no_isolation: Annotated[
        bool, typer.Option("--no-isolation", help="Build without isolated envs (offline hosts).")
    ] = False,
    no_gpu_check: Annotated[bool, typer.Option("--no-gpu-check", help="Skip the GPU preflight.")] = False,
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
    from kestrel_release.stages import build as stage

    out = str(Path(out).expanduser().resolve()) if out else None  # a flag's path is relative to the cwd
    dotted: dict[str, Any] = {
        "build.jobs": jobs,
        "build.frontend": frontend,
        "build.isolation": False if no_isolation else None,
        "build.container": container,
    }
    from kestrel_release.variants.hub_layout import check_layout

    cfg = _config(project, json, python=_csv(python), out_dir=out, **dotted)
    options: dict[str, Any] = {
        "gpu_check": not no_gpu_check,
        "check_reproducible": check_reproducible,
        "platforms": _csv(platform) or (),
        "use_cache": not no_cache,
        "layout": check_layout(layout),
    }
    if cfg.variants is not None or variant:  # one build per torch x CUDA variant
        from kestrel_release.stages.build import variant_build

        matrix = stage.run_variants(cfg, _csv(variant) or (), **options)
        console.emit_json(matrix.to_json()) if json else variant_build.render(matrix)
        return
    result = stage.run(cfg, **options)
    console.emit_json(result.to_json()) if json else stage.render(result)


@app.command()
def verify(
    paths: PathsArg = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help=f"{_targets.help_names(_targets.VERIFY_DEFAULT, ' or ')} acceptance rules.",
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
) -> None:
    """Inspect wheels for leaks, CUDA architectures, PyPI acceptance and integrity."""
    from kestrel_release.config import discover_project
    from kestrel_release.stages import verify as stage
    from kestrel_release.stages.verify import pypi as verify_pypi

    found = project or discover_project()  # no kernel project: any wheel, integrity and PyPI's rules only
    cfg = _config(found, json, python=_csv(python)) if found else verify_pypi.standalone_config()
    if found is None:
        console.configure(json_mode=json)
    report = stage.run(
        cfg,
        paths or [],
        target=target,
        project=found is not None,
        ask_index=target is not None,
        platforms=_csv(platform) or (),
        partial=partial,
    )
    console.emit_json(report.to_json()) if json else stage.render(report)
    stage.raise_for(report)


@app.command()
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
    from kestrel_release.stages import explain as stage

    if torch is not None:
        cfg = _config(project, json)
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


def _arch_source(project: Path | None):
    """Where the project's arch list comes from, for explain's fix; the default (cuda_arch) when no
    configured project is here or its config does not load (explaining wheels needs none)."""
    from kestrel_release import config
    from kestrel_release.errors import ConfigError
    from kestrel_release.stages.explain import arch_source

    if project is None and config.discover_project() is None:
        return arch_source.ArchSource()
    try:
        return arch_source.find(config.load(project))
    except ConfigError:
        return arch_source.ArchSource()


@app.command()
def version(
    action: Annotated[str | None, typer.Argument(help="bump or set (omit to print the version).")] = None,
    value: Annotated[
        str | None, typer.Argument(help="major|minor|patch|pre|rc|post|dev|nightly, or a version for set.")
    ] = None,
    project: ProjectOpt = None,
    json: JsonOpt = False,
    dry_run: DryRunOpt = False,
    commit: Annotated[bool, typer.Option("--commit", help="Make a git commit.")] = False,
    tag: Annotated[bool, typer.Option("--tag", help="Make an annotated git tag vX.Y.Z (implies --commit).")] = False,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="Allow a dirty git tree with --commit/--tag.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Allow a version that goes backwards, or overwrite files that disagree.")
    ] = False,
) -> None:
    """Print (on stdout), bump or set the version in pyproject.toml and every configured file.

    \b
    kestrel-release version              print the version (v=$(kestrel-release version))
    kestrel-release version bump KIND    KIND: major, minor, patch, pre, rc, post, dev, nightly
    kestrel-release version set X.Y.Z    set an exact PEP 440 version
    """
    from kestrel_release.stages import version as stage

    if action is None:  # printing keeps nothing: it works where no cache dir can be made (HOME=/proc)
        from kestrel_release import statedir

        statedir.allow_temporary_cache()
    cfg = _config(project, json)
    result = stage.run(
        cfg, action, value, dry_run=dry_run, commit=commit, tag=tag, allow_dirty=allow_dirty, force=force
    )
    console.emit_json(result.to_json()) if json else stage.render(result)


@app.command()
def publish(
    paths: PathsArg = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            help=f"{_targets.help_names()}, or a .pypirc repository name (default: $TWINE_REPOSITORY, else "
            f"{_targets.DEFAULT_PUBLISH}).",
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
        from kestrel_release import targets

        target = targets.default_publish_target(repository_url=repository_url)
    from kestrel_release.stages import publish as stage

    cfg = _config(project, json, python=_csv(python))
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
        pythons=_csv(python),
    )
    result = stage.run(cfg, paths or [], target, options)
    console.emit_json(result.to_json()) if json else stage.render(cfg, target, result)


@app.command()
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

    cfg = _config(project, json)
    result = stage.run(cfg, inputs, out, check_layout(layout))  # a failure's JSON document comes from _dispatch
    console.emit_json(result.to_json()) if json else stage.render(result)


@app.command()
def release(
    project: ProjectOpt = None,
    json: JsonOpt = False,
    bump: Annotated[str | None, typer.Option("--bump", help="Version bump kind before building.")] = None,
    targets: Annotated[
        str,
        typer.Option(
            "--targets",
            help=f"Comma-separated: {_targets.help_names(last=',', sep=',')}.",
            autocompletion=complete_target,
        ),
    ] = _targets.help_names(last=",", sep=","),
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
    no_gpu_check: Annotated[bool, typer.Option("--no-gpu-check", help="Skip the GPU preflight.")] = False,
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
    from kestrel_release.stages import release as stage

    http_policy.allow_insecure(allow_insecure_http)

    out = str(from_dir.resolve()) if from_dir else None  # a flag's path is relative to the cwd
    cfg = _config(project, json, python=_csv(python), out_dir=out)
    options = stage.Options(
        targets=_csv(targets) or (),
        bump=bump,
        rehearse=rehearse,
        yes=yes,
        resume=resume,
        gpu_check=not no_gpu_check,
        prebuilt=from_dir is not None,
        force=force,
        allow_dirty=allow_dirty,
    )
    result = stage.run(cfg, options)
    console.emit_json(result.to_json()) if json else stage.render(result)


@app.command()
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
    from kestrel_release.stages import init as stage

    console.configure(json_mode=json)
    result = stage.run(project, yes=yes, python=_csv(python))  # a failure's JSON document comes from _dispatch
    console.emit_json({"ok": True, **result.to_json()}) if json else stage.render(result)


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
    from kestrel_release.stages import ci as stage

    cfg = _config(project)
    path, tool = stage.init(cfg, output=output, force=force)
    console.ok(f"wrote {path}")
    if tool.locked:
        console.info(f"the jobs run the kestrel-release locked in {tool.source} (uv run --locked)")
    else:  # never a name from an index: kestrel-release is not claimed on one
        console.info(
            f"the jobs install {tool.requirement} ({tool.source}): one exact commit, since kestrel-release is on "
            "no package index; change it with ci.tool_source"
        )
