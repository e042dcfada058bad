"""commands/options.py: what the commands share besides their flags (shell completion of target names)."""

from __future__ import annotations

from kestrel_release.commands import options
from tests.factories import make_project


def test_target_completion_offers_the_registrys_names_this_projects_included(tmp_path, monkeypatch):
    project = make_project(tmp_path / "kernels")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write('[tool.kestrel-release.targets.corp]\nrepository_url = "https://corp.example/legacy/"\n')
    monkeypatch.chdir(project)
    assert options.complete_target("") == ["testpypi", "pypi", "github", "corp"]
    assert options.complete_target("testpypi,c") == ["testpypi,corp"]  # --targets: the last name of the list
    monkeypatch.chdir(tmp_path)  # no project here: the built-in names
    assert options.complete_target("p") == ["pypi"]


def test_comma_list_drops_blanks():
    assert options.comma_list(" 3.12, ,3.13,") == ("3.12", "3.13")
    assert options.comma_list("") is None and options.comma_list(None) is None
