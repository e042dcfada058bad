"""Every command line of the getting-started page and the guides works as written.

`bash` blocks are run, in page order, on a copy of a sample package that has never seen the tool (as a user
would: `init` first, then the rehearsal); `text` blocks need credentials, a GitHub repository or other machines'
outputs, so their `kestrel-release` lines are parsed by the real CLI (an unknown command or option fails).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli

PAGES = [ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```", re.S | re.M)
MARK = b"\n[tool.kestrel-release]\n"


def blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for _, lang, body in FENCE.findall(page.read_text(encoding="utf-8")):
            if lang == kind:
                joined = re.sub(r"\\\n\s*", " ", body)  # a command continued over lines with `\` is one line
                found += [(page.name, line.strip()) for line in joined.splitlines() if line.strip()]
    return found


def test_the_pages_have_commands_to_check() -> None:
    assert len(blocks("bash")) >= 5 and len(blocks("text")) >= 4


def test_every_text_command_is_accepted_by_the_cli() -> None:
    import click
    import typer.main

    from kestrel_release.cli import full_app

    root = typer.main.get_command(full_app())
    checked = 0
    for page, line in blocks("text"):
        if not line.startswith("kestrel-release "):
            continue
        args = shlex.split(line)[1:]
        ctx, command = click.Context(root, info_name="kestrel-release"), root
        while isinstance(command, click.Group):  # resolve the (sub)command as click does, parse, never run
            name, sub, args = command.resolve_command(ctx, args)
            assert sub is not None and name, f"{page}: {line}"
            ctx, command = sub.make_context(name, list(args), parent=ctx), sub
        checked += 1
    assert checked >= 4


@pytest.mark.slow
def test_every_bash_command_runs_on_a_fresh_package(tmp_path: Path) -> None:
    project = tmp_path / "c-ext-stub"
    shutil.copytree(
        ROOT / "examples" / "c-ext-stub", project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    committed = (project / "pyproject.toml").read_bytes()
    (project / "pyproject.toml").write_bytes(committed[: committed.index(MARK)])  # as before init
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "sample"],
        cwd=project,
        check=True,
    )
    seen: set[str] = set()
    for page, line in blocks("bash"):
        assert line.startswith("kestrel-release "), f"{page}: a bash block line the test cannot run: {line}"
        if line in seen:
            continue
        seen.add(line)
        result = run_cli(shlex.split(line)[1:], cwd=project, timeout=900)
        assert result.code == 0, f"{page}: {line}\n{result.output[-3000:]}"
        if line.startswith("kestrel-release init"):  # the table init wrote is committed, as the page says
            subprocess.run(["git", "add", "-A"], cwd=project, check=True)
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"],
                cwd=project,
                check=True,
            )
