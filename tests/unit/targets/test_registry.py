"""The target registry: the one list of target kinds and names; every caller asks it."""

from __future__ import annotations

import re

import pytest

from kestrel_release import targets
from kestrel_release.config.model import GithubTarget, IndexTarget
from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError, UsageError
from tests.factories import make_project
from tests.helpers import ROOT


def _load(tmp_path, table: str, env: dict[str, str] | None = None):
    project = make_project(tmp_path / "kernels")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(table)
    return config.load(project, env=env or {})


def test_a_name_gets_the_kind_that_has_it_built_in_else_an_index_unless_it_says(tmp_path):
    cfg = _load(
        tmp_path,
        '[tool.kestrel-release.targets.corp]\nrepository_url = "https://corp.example/legacy/"\n'
        '[tool.kestrel-release.targets.mirror]\nkind = "github"\nrepo = "acme/mirror"\n'
        '[tool.kestrel-release.targets.github]\nrepo = "acme/widgets"\n',
    )
    assert [(n, targets.get(cfg, n).kind) for n in targets.names(cfg)] == [
        ("testpypi", "index"),
        ("pypi", "index"),
        ("github", "github"),
        ("corp", "index"),
        ("mirror", "github"),
    ]
    assert cfg.targets["corp"] == IndexTarget("https://corp.example/legacy/", "")
    assert cfg.targets["mirror"] == GithubTarget(repo="acme/mirror")
    assert targets.get(cfg, "internal").kind == "index"  # a .pypirc repository: nothing configures it
    # each GitHub target publishes with its own settings (the publish code reads cfg.github())
    assert [targets.get(cfg, n).cfg.github().repo for n in ("github", "mirror")] == ["acme/widgets", "acme/mirror"]


def test_an_unknown_kind_is_one_configuration_problem_naming_the_known_kinds(tmp_path):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, '[tool.kestrel-release.targets.shelf]\nkind = "githb"\nrepo = "a/b"\n')
    assert info.value.exit_code == 2
    assert "[tool.kestrel-release.targets.shelf].kind: unknown target kind 'githb' (did you mean 'github'?)" in str(
        info.value
    )
    assert "known kinds: index, github" in str(info.value)


def test_each_kind_parses_its_own_table_and_variables(tmp_path):
    with pytest.raises(ConfigError) as info:
        _load(
            tmp_path,
            '[tool.kestrel-release.targets.mirror]\nkind = "github"\nrepo = "not-a-repo"\nnightly = "weekly"\n',
            env={"KESTREL_RELEASE_TARGETS_GITHUB_REPOSITORY_URL": "https://x/"},
        )
    message = str(info.value)
    assert "targets.mirror.repo: 'not-a-repo' is not OWNER/NAME" in message
    assert "targets.mirror.nightly: 'weekly' is not 'rolling' or 'dated'" in message
    assert "KESTREL_RELEASE_TARGETS_GITHUB_REPOSITORY_URL: the GitHub target's variables are" in message


def test_an_unknown_target_name_is_a_usage_error_listing_the_known_ones(tmp_path):
    cfg = _load(tmp_path, '[tool.kestrel-release.targets.corp]\nrepository_url = "https://corp.example/legacy/"\n')
    with pytest.raises(UsageError) as info:
        targets.check(cfg.targets, ("pypi", "cropp"), "release")
    assert info.value.exit_code == 2
    assert (info.value.message, info.value.hint) == (
        "unknown release target(s): cropp",
        "choose from testpypi, pypi, github, corp, or add a [tool.kestrel-release.targets.NAME] table "
        "(kind = index | github | static-index)",
    )
    assert targets.check(cfg.targets, ("corp", "github"), "release") == ["github", "corp"]  # in release order


# Files that may spell a built-in target's name: the registry's package, the local stand-ins and their
# command (`sandbox pypi|github`), twine's own view of .pypirc (twine treats pypi and testpypi as sections
# that always exist), the static-index kind's table (its `github` key), and explain's answer, whose
# "index" is where a user installs from ("pypi": PyPI itself, no publish target); config_tables, which holds
# the index kind's settings and the name of the target whose rules verify applies without --target (verify
# sits below the registry).
MAY_NAME = (
    "kestrel_release/config/tables.py",
    "kestrel_release/targets/",
    "kestrel_release/sandbox/",
    "kestrel_release/commands/sandbox.py",
    "kestrel_release/adapters/pypi/config.py",
    "kestrel_release/flows/explain/",
)


def test_no_module_outside_targets_spells_a_target_name():
    names = "|".join(re.escape(n) for n in targets.builtin())
    pattern = re.compile(rf"""["']({names})["'](?!\s*:)""")  # a string, not a dict key ({"github": ...})
    found = []
    for path in sorted((ROOT / "kestrel_release").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(MAY_NAME):
            continue
        found += [
            f"{rel}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(line)
        ]
    assert not found, "ask kestrel_release.targets instead of naming a target:\n" + "\n".join(found)
