"""The Typer app: the global flags, and the commands of kestrel_release/commands/ registered lazily.

Each command is a module of commands/ (parse flags, load the config, call one stage, render). COMMANDS
below is the one list of them, in the order `--help` lists them; a run registers only the command its
arguments name (every one for the listing, and for a name that is no command: click's "No such command").
Why: typer builds a click command from the signature of every registered function on each start (0.1 s
for the whole CLI), and one is enough; a command's module, and what it imports for its help, load only
when it runs. Heavy libraries (PyGithub, twine, auditwheel, build) are imported inside the stages, which
are imported inside the command functions. What happens around every command (exit codes, the one
`error:` line, --json's failure document) is in entry.py.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from kestrel_release import __version__
from kestrel_release.ui import console

Register = Callable[[typer.Typer], None]  # a command module's `register(app)`


class LazyApp(typer.Typer):
    """The root app: called, it runs a copy with the commands its arguments need registered (the root
    itself stays bare: tests run the CLI many times in one process)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args", args[0] if args else None)
        return typer.Typer.__call__(with_commands(sys.argv[1:] if argv is None else list(argv)), *args, **kwargs)


app = LazyApp(
    name="kestrel-release",
    help="Release prebuilt CUDA kernel wheels: doctor, build, verify, version, publish, release.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,  # locals can hold tokens
    rich_markup_mode=None,
)


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
    from kestrel_release.ui import redact

    redact.register_startup()  # before any build child can print a credential
    console.configure(verbose=verbose)


# Each command's module, imported when a run needs it (written out: test_layers refuses a computed import).
def _doctor() -> Register:
    from kestrel_release.commands import doctor

    return doctor.register


def _build() -> Register:
    from kestrel_release.commands import build

    return build.register


def _verify() -> Register:
    from kestrel_release.commands import verify

    return verify.register


def _explain() -> Register:
    from kestrel_release.commands import explain

    return explain.register


def _version() -> Register:
    from kestrel_release.commands import version

    return version.register


def _publish() -> Register:
    from kestrel_release.commands import publish

    return publish.register


def _assemble() -> Register:
    from kestrel_release.commands import assemble

    return assemble.register


def _release() -> Register:
    from kestrel_release.commands import release

    return release.register


def _init() -> Register:
    from kestrel_release.commands import init

    return init.register


def _sandbox() -> Register:
    from kestrel_release.commands import sandbox

    return sandbox.register


def _ci() -> Register:
    from kestrel_release.commands import ci

    return ci.register


# name -> its module's `register`, in the order `--help` lists them (the groups, sandbox and ci, last).
COMMANDS: dict[str, Callable[[], Register]] = {
    "doctor": _doctor,
    "build": _build,
    "verify": _verify,
    "explain": _explain,
    "version": _version,
    "publish": _publish,
    "assemble": _assemble,
    "release": _release,
    "init": _init,
    "sandbox": _sandbox,
    "ci": _ci,
}


def with_commands(args: list[str]) -> typer.Typer:
    """A copy of the app with the command `args` name registered; every command when they name none (the
    listing), or a name that is no command (click's "No such command" and its "Did you mean")."""
    name = next((a for a in args if not a.startswith("-")), None)
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = [], []
    for wanted in [name] if name in COMMANDS else list(COMMANDS):
        COMMANDS[wanted]()(only)
    return only


def full_app() -> typer.Typer:
    """The app with every command (the reference pages, tests that walk the whole CLI)."""
    return with_commands([])
