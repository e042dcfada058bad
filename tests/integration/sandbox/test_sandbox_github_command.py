"""`sandbox github` started in a kernel project prints a publish command that works as printed.

The emulator's repository gets the project's git history (as if pushed), so publish finds
the commit the wheels were built from; the repository defaults to targets.github.repo.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.factories import build_output, make_github_project
from tests.helpers import assert_one_line_error, run_cli
from tests.integration.github_support import REPO


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def printed_lines(proc: subprocess.Popen) -> list[str]:
    """stderr up to and including the printed publish command."""
    lines, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("kestrel-release publish"):
            return lines
    proc.kill()
    pytest.fail("no publish command printed:\n" + "\n".join(lines))


@pytest.mark.parametrize("immutable", [False, True], ids=["plain", "immutable-releases"])
def test_printed_publish_command_works_as_printed(tmp_path, immutable) -> None:
    project = make_github_project(tmp_path / "kernels", "0.4.0", extra='nightly = "dated"\n' if immutable else "")
    git(project, "init", "-q", "-b", "trunk")
    git(project, "add", "pyproject.toml")
    git(project, "commit", "-q", "-m", "kernels")
    head = git(project, "rev-parse", "HEAD")
    build_output(project, "0.4.0", head)
    bindir = str(Path(sys.executable).parent)  # where `kestrel-release` is installed
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "COLUMNS": "80"}
    env.pop("GH_TOKEN", None)
    env.pop("GITHUB_TOKEN", None)
    args = ["sandbox", "github"] + (["--immutable-releases"] if immutable else [])
    server = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = printed_lines(server)
        assert any(REPO in line and "targets.github.repo" in line for line in lines), lines
        script = "\n".join(lines[lines.index("publish with:") + 1 :])
        assert script.startswith("export GH_TOKEN=") and f"--repo {REPO}" in script
        run = subprocess.run(
            ["bash", "-e", "-c", script], check=False, cwd=project, env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "/releases/tag/kestrel-kernels-nightly" in run.stderr + run.stdout  # the release URL
        if immutable:
            assert f"-{head[:7]}" in run.stderr + run.stdout  # the dated tag names the commit
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    assert server.returncode == 0


def test_git_option_gives_another_directory_s_history(tmp_path) -> None:
    project = make_github_project(tmp_path / "kernels", "0.4.0")
    git(project, "init", "-q")
    git(project, "add", "pyproject.toml")
    git(project, "commit", "-q", "-m", "kernels")
    build_output(project, "0.4.0", git(project, "rev-parse", "HEAD"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    server = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "sandbox", "github", "--repo", REPO, "--git", str(project)],
        cwd=elsewhere,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = printed_lines(server)
        assert any("1 commit(s)" in line for line in lines), lines
        script = "\n".join(lines[lines.index("publish with:") + 1 :])
        run = subprocess.run(
            ["bash", "-e", "-c", script], check=False, cwd=project, env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stdout + run.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)


def test_git_option_without_commits_is_a_one_line_usage_error(tmp_path) -> None:
    result = run_cli(["sandbox", "github", "--repo", "acme/widgets", "--git", str(tmp_path)], cwd=tmp_path, timeout=60)
    assert_one_line_error(result, 2, "--git", "no git repository with commits")


def test_no_repository_anywhere_is_refused_not_defaulted(tmp_path) -> None:
    result = run_cli(["sandbox", "github"], cwd=tmp_path, timeout=60)  # no project, no git remote
    assert_one_line_error(result, 2, "no GitHub repository to emulate", "--repo OWNER/NAME")
    assert "m87-labs" not in result.output
