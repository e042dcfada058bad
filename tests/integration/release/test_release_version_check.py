"""A wheel that says another version than the release's never leaves the machine (PyYAML 6.0.4 wheels whose
`yaml.__version__` was 6.0.3: the module holding it was not among the files the bump rewrote)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import assert_one_line_error, run_cli

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "stale-demo"
version = "0.2.0"

[tool.setuptools]
packages = ["stale_demo"]
package-dir = {"" = "lib"}

[tool.kestrel-release]
python = ["3.12"]

[tool.kestrel-release.verify]
required_sass = []
"""


@pytest.mark.slow
def test_a_rehearsal_stops_at_verify_on_a_module_of_another_version(tmp_path):
    project = tmp_path / "stale-demo"
    (project / "lib" / "stale_demo").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "lib" / "stale_demo" / "__init__.py").write_text('__version__ = "0.1.0"\n')  # never bumped
    (project / ".gitignore").write_text("/dist-all/\n/dist-all.rehearsal/\n*.egg-info/\nbuild/\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run([*git, *args], cwd=project, check=True)
    result = run_cli(["release", "--rehearse", "--targets", "testpypi"], cwd=project, timeout=600)
    assert_one_line_error(
        result,
        5,
        "release stopped at step 'verify': stale_demo-0.2.0-py3-none-any.whl: stale_demo/__init__.py says "
        "__version__ = '0.1.0', but the release is 0.2.0",
    )
    assert "the project's lib/stale_demo/__init__.py still says '0.1.0': add it to version_files" in result.stderr
    # the fix it names works: the release goes through
    (project / "pyproject.toml").write_text(
        PYPROJECT.replace(
            'python = ["3.12"]\n',
            'python = ["3.12"]\n'
            'version_files = [{path = "lib/stale_demo/__init__.py", pattern = \'__version__ = "{version}"\'}]\n',
        )
    )
    (project / "lib" / "stale_demo" / "__init__.py").write_text('__version__ = "0.2.0"\n')
    subprocess.run([*git, "commit", "-qam", "version file"], cwd=project, check=True)
    # the advice is the whole command, this run's options spelled out (release/advice.py)
    assert (
        f"then rebuild and go on: kestrel-release release --project {project} --rehearse --targets testpypi "
        "--python 3.12 --resume --force" in result.stderr
    )
    again = run_cli(
        ["release", "--rehearse", "--targets", "testpypi", "--resume", "--force", "--json"], cwd=project, timeout=600
    )
    assert again.code == 0, again.output
    assert json.loads(again.stdout)["version"] == "0.2.0"
