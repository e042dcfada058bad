"""A canary token in every credential source; it must surface nowhere.

Canaries deliberately do NOT look like tokens (no `pypi-`/`ghp_` prefix), so the
pattern-based masking cannot hide a missing `redact.register`. Every command
runs with -v, succeeding and failing. Checked: stdout/stderr, every file under
the dirs the command can write (project, out dir, HOME, TMPDIR, sandbox logs),
and the argv (`/proc/<pid>/cmdline`) of every process alive while it runs.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kestrel_release.sandbox.github.emulator import GithubEmulator
from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests.factories import build_output
from tests.factories import make_github_project as make_gh_project
from tests.helpers import CI_TOOL_ENV
from tests.integration.github_support import REPO
from tests.reliability.conftest import FAST

CANARIES = {src: f"kcanary{src}{secrets.token_hex(12)}" for src in ("twine", "tokenenv", "pypirc", "gh", "github")}


class CmdlineScanner(threading.Thread):
    """Reads /proc/*/cmdline in a loop; records every process whose argv holds a canary."""

    def __init__(self, needles: list[str]) -> None:
        super().__init__(daemon=True)
        self.needles = [n.encode() for n in needles]
        self.hits: list[str] = []
        self.scans = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                        argv = fh.read()
                except OSError:
                    continue
                if any(n in argv for n in self.needles):
                    self.hits.append(argv.replace(b"\0", b" ").decode(errors="replace")[:200])
            self.scans += 1

    def stop(self) -> CmdlineScanner:
        self._halt.set()
        self.join(10)
        return self


@pytest.fixture
def world(tmp_path: Path):
    """HOME with a .pypirc, a private TMPDIR, a project with wheels, every canary in the environment."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    project = make_gh_project(tmp_path / "kernels", "0.1.0", retries=1)
    env = {
        **os.environ,
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "COLUMNS": "200",
        "TWINE_NON_INTERACTIVE": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        **FAST,
        "TWINE_USERNAME": "kestrel",
        "TWINE_PASSWORD": CANARIES["twine"],
        "MY_TOKEN": CANARIES["tokenenv"],
        "GH_TOKEN": CANARIES["gh"],
        "GITHUB_TOKEN": CANARIES["github"],
    }
    env.pop("KESTREL_RELEASE_DEBUG", None)
    return {"root": tmp_path, "home": home, "project": project, "env": env, "outputs": [], "logs": []}


def _run(world, args: list[str], env: dict[str, str | None] | None = None) -> int:
    full = {k: v for k, v in {**world["env"], **(env or {})}.items() if v is not None}  # None: unset it
    proc = subprocess.run(
        [sys.executable, "-m", "kestrel_release", "-v", *args],
        cwd=world["project"],
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )
    world["outputs"].append((args, proc.returncode, proc.stdout + proc.stderr))
    return proc.returncode


def _pypirc(world, box: PypiSandbox) -> None:
    (world["home"] / ".pypirc").write_text(
        f"[distutils]\nindex-servers =\n    sandbox\n\n[sandbox]\nrepository = {box.upload_url}\n"
        f"username = kestrel\npassword = {CANARIES['pypirc']}\n"
    )


def _index_runs(world) -> list[tuple[str, int]]:
    project = world["project"]
    build_output(project, "0.1.0", "a" * 40)
    pub = ["publish", "--project", str(project), "--yes", "--target", "sandbox"]
    codes = []
    for source, extra, env in (
        ("twine", [], {}),
        ("tokenenv", ["--token-env", "MY_TOKEN"], {}),
        ("pypirc", [], {"TWINE_USERNAME": None, "TWINE_PASSWORD": None}),
    ):
        username = "__token__" if source == "tokenenv" else "kestrel"
        with PypiSandbox(
            directory=world["root"] / f"index-{source}", username=username, password=CANARIES[source]
        ) as box:
            _pypirc(world, box)
            url = [] if source == "pypirc" else ["--repository-url", box.upload_url]
            codes.append((f"publish index via {source}", _run(world, [*pub, *url, *extra], env)))
            codes.append((f"publish index again via {source}", _run(world, [*pub, *url, *extra], env)))
            world["logs"].append(box.log.read_text(errors="replace"))
            assert len(box.files()) == 2, (source, world["outputs"][-2:])  # the credential really was used
    with PypiSandbox(directory=world["root"] / "index-wrong", password="the-right-one") as box:
        codes.append(("publish index, refused", _run(world, [*pub, "--repository-url", box.upload_url])))
    return codes


def _github_runs(world) -> list[tuple[str, int]]:
    project = world["project"]
    codes = []
    for source, env in (("gh", {}), ("github", {"GH_TOKEN": None})):
        with GithubEmulator(repos=(REPO,), token=CANARIES[source]) as gh:
            build_output(project, "0.1.0", gh.add_commit(REPO))
            args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url, "--yes"]
            codes.append((f"publish github via {source}", _run(world, args, env)))
            assert len([n for n in gh.assets(REPO, "kestrel-kernels-nightly") if n.endswith(".whl")]) == 2
    with GithubEmulator(repos=(REPO,), token="ghp_" + "x" * 36) as gh:
        build_output(project, "0.1.0", gh.add_commit(REPO))
        args = ["publish", "--target", "github", "--project", str(project), "--api-url", gh.api_url, "--yes"]
        codes.append(("publish github, refused", _run(world, args)))
    return codes


def _other_commands(world) -> list[tuple[str, int]]:
    project = str(world["project"])
    out = world["root"] / "workflow.yml"
    runs = [
        ["doctor", "--project", project],
        ["verify", "--project", project],
        ["version", "--project", project],
        ["version", "bump", "patch", "--project", project, "--dry-run"],
        ["ci", "init", "--project", project, "--output", str(out)],
        ["build", "--project", project, "--no-gpu-check", "--python", "3.12"],  # fails: no sources
        ["publish", "--project", project, "--target", "nowhere", "--yes"],
    ]
    return [
        ("other: " + " ".join(args[:2]), _run(world, args, dict(CI_TOOL_ENV) if args[0] == "ci" else None))
        for args in runs
    ]


def _files_holding_canaries(root: Path, skip: Path) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and path != skip:
            data = path.read_bytes()
            hits += [f"{path.relative_to(root)}: {src}" for src, c in CANARIES.items() if c.encode() in data]
    return hits


def test_no_canary_leaks_from_any_command_or_credential_source(world) -> None:
    scanner = CmdlineScanner(list(CANARIES.values()))
    scanner.start()
    try:
        codes = _index_runs(world) + _github_runs(world) + _other_commands(world)
    finally:
        scanner.stop()
    # Both outcomes were exercised: the successes really authenticated, the refusals really failed.
    assert {code for what, code in codes if "refused" in what} == {6}, codes
    assert all(code == 0 for what, code in codes if what.startswith("publish") and "refused" not in what), codes
    assert scanner.scans > 10 and scanner.hits == []
    for args, code, text in world["outputs"]:
        leaked = [src for src, c in CANARIES.items() if c in text]
        assert leaked == [], (args, code, leaked)
    for log in world["logs"]:
        assert not any(c in log for c in CANARIES.values())
    assert _files_holding_canaries(world["root"], skip=world["home"] / ".pypirc") == []


def test_the_scanner_does_see_a_canary_on_a_child_argv() -> None:
    """Control: the /proc scan above would catch a leak (it is not vacuously empty)."""
    scanner = CmdlineScanner([CANARIES["gh"]])
    scanner.start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)", CANARIES["gh"]])
    try:
        child.wait(10)
    finally:
        scanner.stop()
    assert scanner.hits and CANARIES["gh"] in scanner.hits[0]
