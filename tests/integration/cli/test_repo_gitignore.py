"""This repository's projects: what kestrel-release writes inside them is ignored by git.

A killed run leaves its staging dir, `version` journal or temp files for the next run; `git add -A`
must not commit them (a committed journal makes every clone "finish" that change)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release._compat import tomllib
from kestrel_release.adapters import git
from kestrel_release.config_loader import load as config
from kestrel_release.files import safepaths
from kestrel_release.flows import init

ROOT = Path(__file__).resolve().parents[3]
PROJECTS = [p.parent for p in [ROOT / "kernels" / "pyproject.toml", *sorted(ROOT.glob("examples/*/pyproject.toml"))]]


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_init_would_add_no_gitignore_line(project):
    table = tomllib.loads((project / "pyproject.toml").read_text())["tool"]["kestrel-release"]
    out_dir = table.get("out_dir", config.Config.__dataclass_fields__["out_dir"].default)  # no backend run
    assert init._missing_ignores(project, out_dir) == []  # `init` would print ".gitignore: add ..." otherwise


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_killed_runs_temp_file_is_ignored(project):
    name = f"{safepaths.temp_prefix('pyproject.toml')}abc123.tmp"  # as fsutil.atomic_write names it
    assert git.ignored(project, [name]) == {name}
