"""`kestrel-release version` as a user runs it: exit codes, the one error line, files, git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_cli
from tests.schemas import fits

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
PYPROJECT = """\
[project]
name = "demo-kernels"
version = "{version}"  # owned by kestrel-release

[tool.kestrel-release]
version_files = [{{ path = "pkg/__init__.py", pattern = '__version__ = "{{version}}"' }}]
"""


def make_project(root: Path, version: str = "0.1.0", init_version: str | None = None) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    (root / "pkg" / "__init__.py").write_text(f'__version__ = "{init_version or version}"\n')
    return root


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env={**GIT_ENV, "PATH": "/usr/bin:/bin"}, check=True, capture_output=True, text=True
    ).stdout.strip()


def version_cli(root: Path, *args: str):
    return run_cli(["version", *args, "--project", str(root)], env=GIT_ENV)


def files(root: Path) -> tuple[str, str]:
    return (root / "pyproject.toml").read_text(), (root / "pkg/__init__.py").read_text()


def test_show_prints_the_version(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = version_cli(root)
    assert result.code == 0 and result.stdout == "0.1.0\n"  # alone on stdout: v=$(kestrel-release version)
    assert fits("version", version_cli(root, "--json").stdout)["new"] == "0.1.0"


def test_bump_writes_every_file(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    result = version_cli(root, "bump", "rc")
    assert result.code == 0, result.output
    assert "0.1.0 -> 0.1.1rc1" in result.stderr
    assert files(root) == (PYPROJECT.format(version="0.1.1rc1"), '__version__ = "0.1.1rc1"\n')


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    before = files(root)
    result = version_cli(root, "bump", "nightly", "--dry-run")
    assert result.code == 0, result.output
    assert '+version = "0.1.1.dev' in result.stderr and '+__version__ = "0.1.1.dev' in result.stderr
    assert files(root) == before
    as_json = fits("version", version_cli(root, "bump", "nightly", "--dry-run", "--json").stdout)
    assert as_json["dry_run"] is True and as_json["files"] == ["pyproject.toml", "pkg/__init__.py"]
    assert '+__version__ = "0.1.1.dev' in as_json["diff"] and files(root) == before


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["set", "0.0.9"], ["version 0.0.9 would go backwards from the current version 0.1.0", "--force"]),
        (["set", "0.1.0"], ["version 0.1.0 is already the current version 0.1.0"]),
        (["set", "banana"], ["version 'banana' is not a valid PEP 440 version"]),
        (["set", "0.2.0+cu124"], ["'0.2.0+cu124' is a local version (+cu124); PyPI refuses local versions"]),
        (["bump", "nighty"], ["unknown bump kind 'nighty' (did you mean 'nightly'?)"]),
        (["bump"], ["version bump needs an argument"]),
    ],
)
def test_refusals(tmp_path: Path, args: list[str], needles: list[str]) -> None:
    root = make_project(tmp_path)
    before = files(root)
    assert_one_line_error(version_cli(root, *args), 2, *needles)
    assert files(root) == before


def test_force_allows_going_backwards(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    assert version_cli(root, "set", "0.0.9", "--force").code == 0
    assert files(root)[1] == '__version__ = "0.0.9"\n'


def test_disagreeing_files_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path, init_version="0.0.7")
    assert_one_line_error(
        version_cli(root, "bump", "patch"), 2, "versions disagree: pyproject.toml has 0.1.0, pkg/__init__.py has 0.0.7"
    )
    assert files(root)[1] == '__version__ = "0.0.7"\n'


def test_dynamic_version_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\ndynamic = ["version"]\n')
    for args in ([], ["bump", "patch"]):
        assert_one_line_error(version_cli(tmp_path, *args), 2, "[project].version of demo is dynamic")


def test_commit_and_tag(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    result = version_cli(root, "bump", "minor", "--tag")  # --tag implies --commit
    assert result.code == 0, result.output
    assert git(root, "log", "-1", "--format=%s") == "Bump demo-kernels 0.2.0"
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(root, "cat-file", "-t", "v0.2.0") == "tag"  # annotated, not lightweight
    assert git(root, "rev-parse", "v0.2.0^{commit}") == git(root, "rev-parse", "HEAD")
    assert git(root, "show", "HEAD:pkg/__init__.py") == '__version__ = "0.2.0"'
    # The same tag again is refused before anything is written.
    assert version_cli(root, "set", "0.1.5", "--force").code == 0
    git(root, "commit", "-qam", "back")
    assert_one_line_error(version_cli(root, "set", "0.2.0", "--tag"), 2, "git tag v0.2.0 already exists")
    assert files(root)[1] == '__version__ = "0.1.5"\n'


def test_commit_refuses_dirty_tree(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    (root / "pkg/other.py").write_text("x = 1\n")
    git(root, "add", "pkg/other.py")
    assert_one_line_error(version_cli(root, "bump", "patch", "--commit"), 2, "has uncommitted changes", "--allow-dirty")
    assert files(root)[1] == '__version__ = "0.1.0"\n'
    result = version_cli(root, "bump", "patch", "--commit", "--allow-dirty")
    assert result.code == 0, result.output
    # Only the version files went into the commit; the user's staged work stays staged.
    assert git(root, "show", "--name-only", "--format=", "HEAD").splitlines() == ["pkg/__init__.py", "pyproject.toml"]
    assert git(root, "status", "--porcelain", "--untracked-files=no") == "A  pkg/other.py"


def test_commit_outside_git_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    assert_one_line_error(version_cli(root, "bump", "patch", "--commit"), 2, "is not in a git repository")
    assert files(root)[1] == '__version__ = "0.1.0"\n'
