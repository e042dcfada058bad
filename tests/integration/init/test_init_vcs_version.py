"""`init` on a hatch-vcs package: the version git gives now, the tag advice in the repository's own
style, and the warning that an sdist's PKG-INFO pins the version."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import run_cli

PYPROJECT = (
    '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
    '[project]\nname = "hv"\ndynamic = ["version"]\n[tool.hatch.version]\nsource = "vcs"\n'
)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root, check=True, capture_output=True
    )


def _project(root: Path, tag: str) -> Path:
    (root / "hv").mkdir(parents=True)
    (root / "hv" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text(PYPROJECT)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    _git(root, "tag", tag)
    return root


def test_tag_on_head_is_the_version_and_advice_keeps_bare_tags(tmp_path):
    project = _project(tmp_path / "hv", "26.1.0")
    result = run_cli(["init", "--yes", "--python", "3.12", "--project", str(project)])
    assert result.code == 0, result.output
    written = (project / "pyproject.toml").read_text()
    assert "version: 26.1.0 (from git tag 26.1.0 (hatch-vcs))" in written
    assert "release by tagging, e.g. git tag -a 26.1.1 -m 26.1.1" in result.stderr
    assert "v26.1.1" not in result.output


def test_pkg_info_of_an_sdist_pins_the_version(tmp_path):
    project = _project(tmp_path / "hv", "v1.2.3")
    (project / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: hv\nVersion: 1.2.0\n")
    result = run_cli(["init", "--yes", "--python", "3.12", "--project", str(project)])
    assert result.code == 0, result.output
    assert "version: 1.2.0 (from PKG-INFO)" in (project / "pyproject.toml").read_text()
    stderr = " ".join(result.stderr.split())  # the console wraps long warnings
    assert (
        "the version comes from PKG-INFO (1.2.0), an sdist's metadata that hatchling reads before hatch-vcs" in stderr
    )
    assert "bumps must go through tags in the source repository" in stderr
    assert "git tag -a v1.2.1 -m v1.2.1" in stderr
