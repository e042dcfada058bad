"""The `next:` command init prints runs as printed: without a known GitHub repository (no github.com
origin, no targets.github.repo) it names --targets testpypi,pypi, since release refuses the default
github target without a repository; with one it is the plain rehearsal."""

from __future__ import annotations

import json
import subprocess

from tests.factories import make_c_ext_project
from tests.helpers import run_cli

REHEARSE = "kestrel-release release --rehearse"


def _git_repo(project, origin: str | None):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if origin:
        subprocess.run(["git", "-C", str(project), "remote", "add", "origin", origin], check=True)


def _bare_project(tmp_path, origin: str | None):
    project = make_c_ext_project(tmp_path / "p")
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text[: text.index("[tool.kestrel-release]")])  # before init
    _git_repo(project, origin)
    return project


def test_no_github_origin_prints_a_rehearsal_without_github(tmp_path):
    project = _bare_project(tmp_path, "https://gitlab.com/me/mini-ext.git")
    result = run_cli(["init", "--yes", "--python", "3.12"], cwd=project)
    assert result.code == 0, result.output
    assert f"next: {REHEARSE} --targets testpypi,pypi\n" in result.stderr
    again = run_cli(["init", "--json"], cwd=project)  # already set up: the same advice
    assert again.code == 0 and json.loads(again.stdout)["next"] == f"{REHEARSE} --targets testpypi,pypi"


def test_a_github_origin_prints_the_plain_rehearsal(tmp_path):
    project = _bare_project(tmp_path, "git@github.com:me/mini-ext.git")
    result = run_cli(["init", "--yes", "--python", "3.12", "--json"], cwd=project)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["next"] == REHEARSE and doc["table"]["targets"] == {"github": {"repo": "me/mini-ext"}}
    again = run_cli(["init", "--json"], cwd=project)  # the written table's repo is read back
    assert json.loads(again.stdout)["next"] == REHEARSE


def test_a_table_without_repo_but_a_github_origin_prints_the_plain_rehearsal(tmp_path):
    project = _bare_project(tmp_path, None)
    assert run_cli(["init", "--yes", "--python", "3.12"], cwd=project).code == 0
    subprocess.run(["git", "-C", str(project), "remote", "add", "origin", "https://github.com/me/mini-ext"], check=True)
    again = run_cli(["init", "--json"], cwd=project)  # release takes the repository from origin as well
    assert json.loads(again.stdout)["next"] == REHEARSE
