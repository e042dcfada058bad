"""Pure-Python projects (hatchling, setuptools): one `-none-any` wheel, no repair, a rehearsal that completes;
and setuptools' in-tree build leaves `git status` clean, so a second rehearsal is not refused as dirty."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import run_cli

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
BACKENDS = {
    "hatchling": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n',
    "setuptools": '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[tool.setuptools]\npackages = ["purepkg"]\n',
}


def _project(root: Path, backend: str) -> Path:
    """A committed pure-Python project that has never seen the tool, after `init --yes` (committed too)."""
    (root / "purepkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        BACKENDS[backend] + '\n[project]\nname = "purepkg"\nversion = "0.3.0"\nrequires-python = ">=3.9"\n'
    )
    (root / "purepkg" / "__init__.py").write_text('__version__ = "0.3.0"\n')
    _commit(root, "project")
    init = run_cli(["init", "--yes"], cwd=root)
    assert init.code == 0, init.output
    _commit(root, "init")
    return root


def _commit(root: Path, message: str) -> None:
    if not (root / ".git").exists():
        subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", message], cwd=root, check=True)


def _porcelain(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hatchling", "setuptools"])
def test_a_pure_python_project_builds_one_any_wheel_and_releases(tmp_path, backend):
    project = _project(tmp_path / backend, backend)
    build = run_cli(["build", "--json"], cwd=project, timeout=600)
    assert build.code == 0, build.output
    wheels = sorted(p.name for p in (project / "dist-all").glob("*.whl"))
    assert len(wheels) == 1 and wheels[0].startswith("purepkg-0.3.0-") and wheels[0].endswith("-none-any.whl"), wheels
    assert "py3" in wheels[0].split("-")[2]
    assert "auditwheel" not in build.stderr

    verify = run_cli(["verify"], cwd=project, timeout=300)
    assert verify.code == 0, verify.output

    release = run_cli(["release", "--rehearse", "--targets", "testpypi,pypi", "--json"], cwd=project, timeout=900)
    assert release.code == 0, release.output
    steps = {s["name"]: s["status"] for s in json.loads(release.stdout)["steps"]}
    assert steps["smoke-test"] == "done" and steps["publish-pypi"] == "done", steps


@pytest.mark.slow
def test_setuptools_rehearsals_leave_the_tree_clean(tmp_path):
    project = _project(tmp_path / "st", "setuptools")
    assert {"/build/", "*.egg-info/"} <= set((project / ".gitignore").read_text().splitlines())
    # A project that commits its egg-info, stale: the build (in a clean copy) never rewrites the user's.
    info = project / "purepkg.egg-info"
    info.mkdir()
    (info / "SOURCES.txt").write_text("pyproject.toml\nstale/entry.py\n")
    subprocess.run(["git", "add", "-f", "purepkg.egg-info"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-qm", "egg-info"], cwd=project, check=True)
    for attempt in (1, 2):
        release = run_cli(["release", "--rehearse", "--targets", "testpypi,pypi"], cwd=project, timeout=900)
        assert release.code == 0, f"rehearsal {attempt}: {release.output}"
        assert "uncommitted changes" not in release.stderr
        assert _porcelain(project) == "", f"rehearsal {attempt} left: {_porcelain(project)}"
    assert (info / "SOURCES.txt").read_text() == "pyproject.toml\nstale/entry.py\n"
    assert not (project / "build").exists()  # each build runs in a clean copy: nothing generated in the tree
