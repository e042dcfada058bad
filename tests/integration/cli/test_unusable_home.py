"""An unusable HOME (HOME=/proc: every mkdir under it fails with ENOENT) in a project whose name and
version come from the build backend (setup.py, no [project] table).

Before: build, version and doctor stopped with `internal error: FileNotFoundError ... '/proc/.cache'`
(exit 1); printing the version needed a writable cache.
After: a command that keeps state there is one line, exit 2, naming the directory and the variables
that move it; `version` (printing) keeps nothing and works, leaving nothing in the temp dir.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_cli

SETUP = "from setuptools import setup\nsetup(name='home-demo', version='2.3.4', packages=['home_demo'])\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "home-demo"
    (root / "home_demo").mkdir(parents=True)
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[tool.kestrel-release]\npython = ["{py}"]\n'
    )
    (root / "setup.py").write_text(SETUP)
    (root / "home_demo" / "__init__.py").write_text("")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """HOME=/proc and no cache variable; uv keeps the suite's own cache (it is uv's, not the tool's)."""
    from uv import find_uv_bin

    uv_cache = subprocess.run([find_uv_bin(), "cache", "dir"], capture_output=True, text=True, check=True)
    temp = tmp_path / "tmp"
    temp.mkdir()
    return {
        "HOME": "/proc",
        "XDG_CACHE_HOME": "",
        "KESTREL_RELEASE_CACHE_DIR": "",
        "UV_CACHE_DIR": uv_cache.stdout.strip(),
        "TMPDIR": str(temp),
    }


@pytest.mark.parametrize("command", [["build", "--no-gpu-check"], ["doctor"], ["version", "bump", "patch"]])
def test_a_command_that_needs_the_cache_is_one_line_exit_2_naming_it(
    project: Path, env: dict[str, str], command: list[str]
) -> None:
    result = run_cli([*command, "--project", str(project)], env=env, timeout=300)
    assert_one_line_error(result, 2, "/proc/.cache/kestrel-release", "KESTREL_RELEASE_CACHE_DIR", "XDG_CACHE_HOME")
    assert "setup(" in (project / "setup.py").read_text()  # nothing changed


def test_its_json_failure_document_names_it_too(project: Path, env: dict[str, str]) -> None:
    result = run_cli(["build", "--no-gpu-check", "--json", "--project", str(project)], env=env, timeout=300)
    assert result.code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "filesystem" and "/proc/.cache/kestrel-release" in error["message"]


def test_version_prints_the_backends_version_without_a_cache(project: Path, env: dict[str, str]) -> None:
    result = run_cli(["version", "--project", str(project)], env=env, timeout=600)
    assert result.code == 0, result.output
    assert result.stdout == "2.3.4\n" and "Traceback" not in result.stderr
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # its temporary cache is gone
    assert sorted(p.name for p in project.iterdir()) == ["home_demo", "pyproject.toml", "setup.py"]


def test_a_cache_variable_naming_a_file_is_one_line_naming_that_variable(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    result = run_cli(
        ["doctor", "--project", str(project)],
        env={**env, "HOME": str(tmp_path), "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "a-file")},
    )
    assert_one_line_error(result, 2, str(tmp_path / "a-file"), "KESTREL_RELEASE_CACHE_DIR")
