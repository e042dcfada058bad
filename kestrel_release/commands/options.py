"""What the command modules share: the option types several commands take, and loading the config.

Why here and not in cli.py: cli.py imports each command module (lazily) to register it, so a command
module importing cli.py would close a cycle (tests/unit/test_layers.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kestrel_release.ui import console

if TYPE_CHECKING:  # config pulls in more than `--help` needs
    from kestrel_release.config.model import Config

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
NoGpuCheckOpt = Annotated[bool, typer.Option("--no-gpu-check", help="Skip the GPU preflight.")]


def load_config(project: Path | None, json_mode: bool = False, **overrides: Any) -> Config:
    """The project's config with the command's flags over it (reads only: a stage that needs the name resolves it)."""
    import sysconfig

    from kestrel_release.config_loader import load as config

    # Initialise sysconfig in the main thread: its first use is not thread-safe in CPython, and
    # stages look up tools (uv's find_uv_bin, auditwheel) from worker threads.
    sysconfig.get_paths()
    console.configure(json_mode=json_mode)
    return config.load(project, overrides=overrides)


def complete_target(incomplete: str) -> list[str]:
    """Shell completion of --target/--targets: the target registry's names (this project's, when it loads)."""
    from kestrel_release import targets
    from kestrel_release.config_loader import load as config
    from kestrel_release.errors import KestrelError

    try:
        configured = config.load(None).targets
    except (KestrelError, OSError):  # completion never fails: without a loadable project, the built-in names
        configured = {}
    head, _, last = incomplete.rpartition(",")
    return [f"{head},{n}" if head else n for n in targets.known(configured) if n.startswith(last)]


def comma_list(value: str | None) -> tuple[str, ...] | None:
    """`a, b,,c` -> ("a", "b", "c"); None for no value."""
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None
