"""A [project] table with dynamic = ["version"] (Levenshtein, scikit-build-core's regex provider; setuptools'
attr:): release asks the backend for the version; the plan, preflight and smoke test never say `None`."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.factories import C_EXT_SOURCE
from tests.helpers import run_cli

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
