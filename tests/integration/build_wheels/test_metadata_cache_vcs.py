"""A setuptools-scm project in a real git repository: the version is what git says now.

Was: after `git tag -a v5.11.1` the metadata cache (keyed on HEAD and dirtiness only) kept answering
5.11.1.dev1 for `version`, the release plan and a rehearsal; only deleting a file under the cache's
metadata/ helped, which nothing said. Now the key covers the tags and the dirty files, and `-v` says
whether the cached answer was used and, when not, which input changed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import python_version, run_cli

PYPROJECT = """[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "scm-demo"
dynamic = ["version"]

[tool.setuptools]
packages = ["scm_demo"]

[tool.setuptools_scm]

[tool.kestrel-release]
python = ["3.12"]

[tool.kestrel-release.verify]
required_sass = []
"""
PYPROJECT = PYPROJECT.replace('python = ["3.12"]', f'python = ["{python_version()}"]')  # a Python every machine has
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "tag.gpgsign=false", "-c", "commit.gpgsign=false"]


def _git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def scm(tmp_path: Path) -> Path:
    """Tagged v5.11.0, one commit after it: setuptools-scm says 5.11.1.dev1+g<sha>."""
    root = tmp_path / "scm-demo"
    (root / "scm_demo").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "scm_demo" / "__init__.py").write_text("")
    (root / "README").write_text(f"{root}\n")  # a commit of its own: tests share one cache
    (root / ".gitignore").write_text("/dist-all/\n/dist-all.rehearsal/\n*.egg-info/\nbuild/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    _git(root, "tag", "-a", "v5.11.0", "-m", "5.11.0")
    _git(root, "commit", "-q", "--allow-empty", "-m", "fix")
    return root


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One cache for the module: the build env with setuptools-scm is made once."""
    return {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}


def _version(root: Path, env: dict[str, str]) -> tuple[str, str]:
    result = run_cli(["version", "-v"], cwd=root, env=env, timeout=300)
    assert result.code == 0, result.output
    return result.stdout.strip(), result.stderr


def test_a_new_tag_an_edit_and_a_deleted_tag_change_the_version(scm: Path, env: dict[str, str]) -> None:
    version, said = _version(scm, env)
    assert version.startswith("5.11.1.dev1+g"), said
    assert "metadata cache: no answer for today's inputs (no earlier answer for this project)" in said
    version, said = _version(scm, env)  # nothing changed: the cached answer, and -v says so
    assert version.startswith("5.11.1.dev1+g")
    assert "metadata cache: using scm-demo 5.11.1.dev1" in said and "no tag at HEAD, clean tree" in said

    _git(scm, "tag", "-a", "v5.11.1", "-m", "5.11.1")
    version, said = _version(scm, env)
    assert version == "5.11.1", said
    assert "git tags changed: new v5.11.1" in said
    version, said = _version(scm, env)
    assert version == "5.11.1" and "tags at HEAD: v5.11.1, clean tree" in said

    (scm / "scm_demo" / "__init__.py").write_text("x = 1\n")  # a tracked file edited: setuptools-scm's dirty version
    version, said = _version(scm, env)
    assert version.startswith("5.11.2.dev0+g") and ".d" in version, said
    assert "uncommitted changes differ (scm_demo/__init__.py)" in said
    _git(scm, "checkout", "-q", "--", "scm_demo/__init__.py")

    _git(scm, "tag", "-d", "v5.11.1")  # back to the first state: its answer is reused
    version, said = _version(scm, env)
    assert version.startswith("5.11.1.dev1+g") and "metadata cache: using" in said


def test_a_lightweight_tag_at_head_counts_too(scm: Path, env: dict[str, str]) -> None:
    assert _version(scm, env)[0].startswith("5.11.1.dev1")
    _git(scm, "tag", "v6.0.0")
    assert _version(scm, env)[0] == "6.0.0"


@pytest.mark.slow
def test_a_rehearsal_after_the_tag_releases_the_tagged_version(scm: Path, env: dict[str, str]) -> None:
    assert _version(scm, env)[0].startswith("5.11.1.dev1")  # the cache holds the pre-tag answer
    _git(scm, "tag", "-a", "v5.11.1", "-m", "5.11.1")
    result = run_cli(["release", "--rehearse", "--targets", "testpypi", "--json"], cwd=scm, env=env, timeout=600)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == "5.11.1"
    assert "targets ready for scm-demo 5.11.1" in doc["steps"][0]["detail"]
    out = Path(next(s["detail"] for s in doc["steps"] if s["name"] == "build").split(" in ", 1)[1])
    assert sorted(p.name for p in out.glob("*.whl")) == ["scm_demo-5.11.1-py3-none-any.whl"]


def test_a_pretend_version_in_the_environment_is_an_input(scm: Path, env: dict[str, str]) -> None:
    assert _version(scm, env)[0].startswith("5.11.1.dev1")
    version, said = _version(scm, {**env, "SETUPTOOLS_SCM_PRETEND_VERSION": "9.9.9"})
    assert version == "9.9.9" and "$SETUPTOOLS_SCM_PRETEND_VERSION is set" in said


def test_an_in_tree_backend_is_an_input(tmp_path: Path) -> None:
    """PyYAML's build-system backend-path: its modules compute the metadata, so an edit is a new key."""
    from kestrel_release.project import backend_meta_key

    (tmp_path / "packaging").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "_pep517"\nbackend-path = ["packaging"]\n'
    )
    (tmp_path / "packaging" / "_pep517.py").write_text("from setuptools.build_meta import *\n")
    before = backend_meta_key.inputs(tmp_path, True)
    assert "file packaging/_pep517.py" in before
    (tmp_path / "packaging" / "_pep517.py").write_text("from setuptools.build_meta import *  # edited\n")
    after = backend_meta_key.inputs(tmp_path, True)
    assert backend_meta_key.changes(before, after) == ["packaging/_pep517.py changed"]
