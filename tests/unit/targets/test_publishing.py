"""targets/publishing options(): each target takes its own kind's flags; another kind's flag is a usage error."""

from __future__ import annotations

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.errors import UsageError
from kestrel_release.targets import publishing as publish
from tests.factories import make_project

# What the publish command passes when no flag is given (commands/publish.py).
UNSET = dict(
    dry_run=False, yes=False, token_env=None, repository_url=None, simple_url=None, smoke_test=False,
    repo=None, tag=None, api_url=None, prune=None, pythons=None,
)  # fmt: skip


@pytest.fixture
def cfg(tmp_path):
    project = make_project(tmp_path / "kernels")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write('[tool.kestrel-release.targets.mirror]\nkind = "github"\nrepo = "acme/mirror"\n')
    return config.load(project, env={})


def test_a_flag_of_another_kind_names_the_targets_it_applies_to(cfg):
    with pytest.raises(UsageError) as info:
        publish.options(cfg, "pypi", **{**UNSET, "repo": "acme/widgets"})
    assert info.value.exit_code == 2
    assert (info.value.message, info.value.hint) == (
        "--repo does not apply to target 'pypi' (kind index)",
        "--repo applies to github, mirror: drop it, or choose such a target with --target",
    )


def test_every_stray_flag_is_named_in_the_one_line(cfg):
    with pytest.raises(UsageError) as info:
        publish.options(cfg, "github", **{**UNSET, "smoke_test": True, "repository_url": "https://x.example/"})
    assert info.value.message == "--repository-url, --smoke-test do not apply to target 'github' (kind github)"
    assert info.value.hint.startswith("--repository-url applies to testpypi, pypi; --smoke-test applies to")
    with pytest.raises(UsageError, match="--no-prune does not apply to target 'testpypi'"):
        publish.options(cfg, "testpypi", **{**UNSET, "prune": False})  # given as --no-prune: not its default


def test_a_targets_own_and_shared_flags_are_taken(cfg):
    index = publish.options(cfg, "pypi", **{**UNSET, "repository_url": "https://x.example/", "smoke_test": True})
    assert (index.repository_url, index.smoke_test) == ("https://x.example/", True)
    shared = {"dry_run": True, "yes": True, "token_env": "T", "pythons": ("3.12",)}
    github = publish.options(cfg, "mirror", **{**UNSET, **shared, "repo": "a/b", "prune": False})
    assert (github.repo, github.prune, github.dry_run, github.token_env, github.pythons) == (
        "a/b",
        False,
        True,
        "T",
        ("3.12",),
    )
    assert publish.options(cfg, "internal", **UNSET).dry_run is False  # a .pypirc name: an index, nothing given
