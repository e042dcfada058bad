"""cli.py: the commands are registered lazily, one module each, and only the one a run names."""

from __future__ import annotations

import sys

import typer.main

from kestrel_release import cli


def _names(app: typer.Typer) -> list[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.main.TyperGroup)
    return list(group.commands)


def test_every_listed_command_registers_itself_under_its_name():
    for name in cli.COMMANDS:
        assert _names(cli.with_commands([name])) == [name]
    assert _names(cli.full_app()) == list(cli.COMMANDS)  # the --help listing's order


def test_a_run_registers_only_the_command_it_names():
    assert _names(cli.with_commands(["-v", "build", "--help"])) == ["build"]
    assert _names(cli.with_commands(["sandbox", "pypi"])) == ["sandbox"]
    for args in ([], ["--help"], ["bulid"]):  # the listing, and click's "No such command" with its suggestion
        assert _names(cli.with_commands(args)) == list(cli.COMMANDS)
    assert cli.app.registered_commands == [] and cli.app.registered_groups == []  # the root stays bare


def test_a_commands_module_is_imported_only_when_it_runs(monkeypatch):
    import kestrel_release.commands as package

    for name in cli.COMMANDS:  # as in a fresh process: no command module loaded yet
        monkeypatch.delitem(sys.modules, f"kestrel_release.commands.{name}", raising=False)
        monkeypatch.delattr(package, name, raising=False)
    cli.with_commands(["doctor", "--json"])
    loaded = sorted(m for m in sys.modules if m.startswith("kestrel_release.commands."))
    assert loaded == ["kestrel_release.commands.doctor", "kestrel_release.commands.options"]
