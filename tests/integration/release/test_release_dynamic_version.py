"""A [project] table with dynamic = ["version"] (Levenshtein, scikit-build-core's regex provider; setuptools'
attr:): release asks the backend for the version; the plan, preflight and smoke test never say `None`."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.factories import C_EXT_SOURCE
from tests.helpers import assert_one_line_error, python_version, run_cli

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "Dyn-Demo"
dynamic = ["version"]

[tool.setuptools]
packages = ["dyn_demo"]
ext-modules = [{name = "dyn_demo._c", sources = ["c.c"]}]

[tool.setuptools.dynamic]
version = {attr = "dyn_demo.__version__"}

[tool.kestrel-release]
python = ["3.12"]

[tool.kestrel-release.verify]
required_sass = []
"""
PYPROJECT = PYPROJECT.replace('python = ["3.12"]', f'python = ["{python_version()}"]')  # a Python every machine has


@pytest.mark.slow
def test_rehearsal_of_a_dynamic_version_installs_that_version(tmp_path):
    project = tmp_path / "dyn"
    (project / "dyn_demo").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "dyn_demo" / "__init__.py").write_text('__version__ = "0.4.2"\n')
    (project / "c.c").write_text(C_EXT_SOURCE)
    (project / ".gitignore").write_text("/dist-all/\n/dist-all.rehearsal/\n*.egg-info/\nbuild/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=project, check=True)
    result = run_cli(["release", "--rehearse", "--targets", "testpypi,pypi", "--json"], cwd=project, timeout=600)
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == "0.4.2"
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["smoke-test"]["status"] == "done" and "None" not in result.stderr
    assert "targets ready for Dyn-Demo 0.4.2" in steps["preflight"]["detail"]


def _dynamic_project(root, version_files: bool):
    """A pure-Python Dyn-Demo whose version is setuptools' attr: dyn_demo.__version__, committed in git."""
    (root / "dyn_demo").mkdir(parents=True)
    text = PYPROJECT.replace('ext-modules = [{name = "dyn_demo._c", sources = ["c.c"]}]\n', "")
    if version_files:
        text = text.replace(
            "[tool.kestrel-release]\n",
            "[tool.kestrel-release]\n"
            'version_files = [{path = "dyn_demo/__init__.py", pattern = \'__version__ = "{version}"\'}]\n',
        )
    (root / "pyproject.toml").write_text(text)
    (root / "dyn_demo" / "__init__.py").write_text('__version__ = "0.4.2"\n')
    (root / ".gitignore").write_text("/dist-all/\n/dist-all.rehearsal/\n*.egg-info/\nbuild/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    return root


@pytest.mark.slow
def test_release_bump_on_a_dynamic_version_bumps_what_version_bump_bumps(tmp_path):
    """Was: `internal error: NonExistentKey: 'Key "version" does not exist.'` (release filled in the
    backend's version and then took [project].version for the file that holds it)."""
    project = _dynamic_project(tmp_path / "dyn", version_files=True)
    dry = run_cli(["version", "bump", "patch", "--dry-run", "--json"], cwd=project, timeout=300)
    assert dry.code == 0, dry.output
    assert json.loads(dry.stdout)["new"] == "0.4.3"
    result = run_cli(
        ["release", "--rehearse", "--bump", "patch", "--targets", "testpypi", "--json"], cwd=project, timeout=600
    )
    assert result.code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["version"] == "0.4.3"
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["bump"]["detail"] == "0.4.2 -> 0.4.3"
    assert steps["smoke-test"]["status"] == "done"
    assert [p.name for p in (project / doc_out(doc, project)).glob("*.whl")] == ["dyn_demo-0.4.3-py3-none-any.whl"]
    # a rehearsal's bump is undone: the project is as it was
    assert (project / "dyn_demo" / "__init__.py").read_text() == '__version__ = "0.4.2"\n'


def doc_out(doc, project):
    """The output folder the build step reported ("1 wheels in DIR")."""
    detail = next(s["detail"] for s in doc["steps"] if s["name"] == "build")
    return detail.split(" in ", 1)[1]


def test_release_bump_without_version_files_refuses_as_version_bump_does(tmp_path):
    project = _dynamic_project(tmp_path / "dyn", version_files=False)
    plain = run_cli(["version", "bump", "patch"], cwd=project, timeout=300)
    assert_one_line_error(plain, 2, "is dynamic; kestrel-release cannot own it without version_files")
    for extra in (["--rehearse"],):
        result = run_cli(["release", "--bump", "patch", "--targets", "testpypi", *extra], cwd=project, timeout=300)
        assert_one_line_error(result, 2, "is dynamic; kestrel-release cannot own it without version_files")
        assert "NonExistentKey" not in result.output
    assert (project / "dyn_demo" / "__init__.py").read_text() == '__version__ = "0.4.2"\n'
