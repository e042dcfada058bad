"""What a build's sources are (issue 33): the wheel cache keys on the files of the clean copy, so the
tool's own output and rehearsal dirs and git-ignored files never count as a source change; a project in
a subdirectory of its repository builds from a copy that holds the repository's tracked files, so a
setup.py reading `../README.md` builds as `pip wheel .` does.

Before: a rehearsal's `dist-all.rehearsal/` made the next build miss ("sources changed:
dist-all.rehearsal/pypi/...whl") and rebuild every Python; the subdirectory project failed with
"FileNotFoundError: .../copy/<pkg>/../README.md".
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import run_cli

pytestmark = pytest.mark.slow
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def _commit_all(repo: Path) -> None:
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "sources")


def _build(project: Path, cache: Path) -> tuple[bool, str]:
    """(the wheel came from the cache, the -v line saying why)."""
    env = {"KESTREL_RELEASE_CACHE_DIR": str(cache), "SOURCE_DATE_EPOCH": "1700000000"}
    result = run_cli(["build", "--project", str(project), "--no-gpu-check", "--json", "-v"], env=env, timeout=600)
    assert result.code == 0, result.output
    steps = json.loads(result.stdout)["steps"]
    cached = any("cached" in (s.get("detail") or "") for s in steps if s["name"].startswith("python"))
    (why,) = [line for line in result.stderr.splitlines() if line.startswith(f"wheel cache, Python {PY}:")]
    return cached, why


@pytest.mark.parametrize("vcs", ["git", "no-git"])
def test_a_rehearsal_dir_and_ignored_files_are_not_source_changes(tmp_path: Path, vcs: str) -> None:
    project = factories.make_c_ext_project(tmp_path / "p", pythons=(PY,))
    if vcs == "git":
        (project / ".gitignore").write_text("/dist-all/\n/scratch/\n")
        _commit_all(project)
    cache = tmp_path / "cache"
    assert _build(project, cache)[0] is False
    # What a rehearsal leaves (its own `*` .gitignore, as the tool writes it), and the user's ignored files.
    rehearsal = project / "dist-all.rehearsal" / "pypi"
    rehearsal.mkdir(parents=True)
    (project / "dist-all.rehearsal" / ".gitignore").write_text("*\n")
    (rehearsal / "mini_ext-0.1.0-cp312-cp312-linux_x86_64.whl").write_bytes(b"uploaded")
    if vcs == "git":
        (project / "scratch").mkdir()
        (project / "scratch" / "notes.txt").write_text("not a source\n")
    cached, why = _build(project, cache)
    assert cached, why
    assert "sources changed" not in why and "used entry" in why, why


README = "# mini-ext\n\nThe readme the package's setup.py reads from the repository root.\n"


def _subdir_project(repo: Path) -> Path:
    """pytorch/extension-cpp's layout: the package in a subdirectory, its setup.py reading ../README.md."""
    project = factories.make_c_ext_project(repo / "pkg", pythons=(PY,))
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('version = "0.1.0"\n', 'version = "0.1.0"\ndynamic = ["readme"]\n')
    )
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(
        setup.replace(
            "setup(",
            'README = open("../README.md", encoding="utf-8").read()\n\n'
            'setup(long_description=README, long_description_content_type="text/markdown", ',
        )
    )
    (repo / "README.md").write_text(README)
    (repo / "other").mkdir()
    (repo / "other" / "notes.txt").write_text("a sibling of the package\n")
    (repo / ".gitignore").write_text("dist-all/\n")
    _commit_all(repo)
    return project


def _readme_in_wheel(project: Path) -> str:
    (wheel,) = (project / "dist-all").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return zf.read(meta).decode()


def test_a_project_in_a_subdirectory_builds_reading_a_file_above_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project = _subdir_project(repo)
    cache = tmp_path / "cache"
    assert _build(project, cache)[0] is False
    assert README.strip() in _readme_in_wheel(project)
    # A sibling's change is not this package's: the wheel comes from the cache.
    (repo / "other" / "notes.txt").write_text("changed\n")
    cached, why = _build(project, cache)
    assert cached and "sources changed" not in why, why
    # The file it reads above itself is keyed: a new README is a new wheel, never the cached one.
    (repo / "README.md").write_text(README + "\nA new paragraph.\n")
    cached, why = _build(project, cache)
    assert not cached and "sources changed: ../README.md" in why, why
    assert "A new paragraph." in _readme_in_wheel(project)
