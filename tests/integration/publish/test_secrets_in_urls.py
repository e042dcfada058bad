"""A token in a git remote URL (any shape: not only ghp_/ghs_) never reaches the output, `-v` included."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TOKEN = "Zq8rT0kenOfAnyShape42xyz"  # no known token prefix: only registration can hide it


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True, capture_output=True
    )


def test_sandbox_github_with_v_prints_the_remote_without_its_token(tmp_path) -> None:
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    git(repo, "remote", "add", "origin", f"https://x-access-token:{TOKEN}@github.com/m87-labs/kestrel.git")
    env = {**os.environ, "COLUMNS": "200", "HOME": str(tmp_path / "home")}
    server = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "-v", "sandbox", "github"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("kestrel-release publish"):
                break
    finally:
        server.kill()
        server.wait(10)
    output = "".join(lines)
    assert "m87-labs/kestrel" in output and "git remote 'origin'" in output, output  # it read the remote
    assert "https://x-access-token:****@github.com/m87-labs/kestrel.git" in output, output  # -v shows the URL
    assert TOKEN not in output
