"""SIGKILL at seeded points of version bump, build, publish and release (plain, rehearsed, resumed).

A killed run cleans up nothing. Afterwards a re-run (or `release --resume`, when the tool says
so) completes with no manual step: the version moved exactly once, the output holds one
consistent build and the user's files, the index holds whole files, no staging or temp file
of the tool is left, and no child of the killed tool (build trees, sandbox servers) survives.

Before: a kill between two version files left them disagreeing ("versions disagree" on every
re-run), temp files beside pyproject.toml and `.kestrel-staging-*` were never collected,
`release --resume` after a kill just past the bump said "versions disagree", and the rehearsal's
servers outlived the tool.
"""

from __future__ import annotations

import json
import random
import signal
import time
from pathlib import Path

import pytest

from kestrel_release.sandbox.pypi.server import PypiSandbox
from tests import factories
from tests.helpers import run_cli
from tests.reliability import killpoints
from tests.reliability.conftest import FAST, local_wheels, sha256s

ENV = {"SOURCE_DATE_EPOCH": "1700000000"}
JOURNAL = ".kestrel-version.json"  # a killed `version` change's record (see stages/version/resume.py)


def _versions(project: Path) -> tuple[str, str]:
    pyproject = next(
        line for line in (project / "pyproject.toml").read_text().splitlines() if line.startswith("version = ")
    )
    return pyproject.split('"')[1], (project / "src/mini_ext/__init__.py").read_text().split('"')[1]


def _tool_debris(*folders: Path) -> list[str]:
    """Temp and staging names of the tool (and of its older versions) left in `folders`."""
    return [
        p.name
        for folder in folders
        for p in folder.rglob(".*")
        if p.name.endswith(".tmp") or p.name.startswith(".kestrel-staging-") or ".old-" in p.name
    ]


def _points(seed: int, total: int) -> int:
    return random.Random(seed).randint(1, max(1, total))


# --- version bump ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bump_ops(tmp_path_factory) -> int:
    tmp = tmp_path_factory.mktemp("count")
    project = factories.make_c_ext_project(tmp / "p")
    return killpoints.count_ops(["version", "bump", "patch", "--project", str(project)], tmp)


@pytest.mark.parametrize("seed", range(12))
def test_version_bump_killed_anywhere_then_rerun_bumps_once(tmp_path: Path, bump_ops: int, seed: int) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    args = ["version", "bump", "patch", "--project", str(project)]
    killpoints.run_killed_at(_points(seed, bump_ops), args)
    finished = _versions(project) == ("0.1.1", "0.1.1") and not (project / JOURNAL).exists()
    rerun = run_cli(args)
    assert rerun.code == 0, rerun.output
    want = "0.1.2" if finished else "0.1.1"  # the killed bump counts once, whether it finished or not
    assert _versions(project) == (want, want)
    assert not _tool_debris(project), _tool_debris(project)
    assert not (project / JOURNAL).exists()


def test_every_kill_point_of_a_bump_is_recovered(tmp_path: Path, bump_ops: int) -> None:
    """Exhaustive over the bump's operations: no point leaves a state the re-run cannot finish."""
    for n in range(1, bump_ops + 1):
        project = factories.make_c_ext_project(tmp_path / f"p{n}")
        args = ["version", "bump", "minor", "--project", str(project)]
        killpoints.run_killed_at(n, args)
        rerun = run_cli(args)
        assert rerun.code == 0, (n, rerun.output)
        assert _versions(project) in {("0.2.0", "0.2.0"), ("0.3.0", "0.3.0")}, n
        assert not _tool_debris(project), (n, _tool_debris(project))


# --- build ------------------------------------------------------------------------------------------


def _consistent(out: Path) -> dict[str, str]:
    """The build's own files agree: manifest, SHA256SUMS and the wheels they name."""
    listed = {w["filename"]: w["sha256"] for w in json.loads((out / "release-manifest.json").read_text())["wheels"]}
    sums = dict(reversed(line.split("  ")) for line in (out / "SHA256SUMS").read_text().splitlines())
    assert listed and listed == sums == sha256s(out / name for name in listed), (listed, sums)
    return listed


def _with_user_files(out: Path) -> dict[str, bytes]:
    factories.write_wheel(out, "other-project", "1.0.0")
    (out / "notes.txt").write_text("the user's\n")
    return {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_build_killed_at_a_file_operation_then_rerun_completes(tmp_path: Path, seed: int) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    out = project / "dist-all"
    out.mkdir()
    users = _with_user_files(out)
    args = ["build", "--project", str(project), "--no-gpu-check"]
    first = run_cli(args, env=ENV, timeout=600)
    assert first.code == 0, first.output
    (project / "src" / "c.c").write_text(factories.C_EXT_SOURCE + f"/* seed {seed} */\n")  # the next build differs
    total = killpoints.count_ops(args, tmp_path, ENV)
    (project / "src" / "c.c").write_text(factories.C_EXT_SOURCE + f"/* seed {seed} again */\n")
    killpoints.run_killed_at(_points(seed, total), args, ENV)
    assert killpoints.wait_gone(str(project)) == []  # no build child outlives the tool
    rerun = run_cli(args, env=ENV, timeout=600)
    assert rerun.code == 0, rerun.output
    _consistent(out)
    assert all((out / name).read_bytes() == data for name, data in users.items())
    assert not _tool_debris(project.parent), _tool_debris(project.parent)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_build_killed_while_children_build_leaves_no_process_behind(tmp_path: Path, seed: int) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    (project / "src" / "c.c").write_text(factories.C_EXT_SOURCE + f"/* {tmp_path.name} {seed} */\n")  # no cache hit
    args = ["build", "--project", str(project), "--no-gpu-check"]
    proc = killpoints.start(args, ENV)
    killpoints.wait_ready(proc)
    time.sleep(random.Random(seed).uniform(0.3, 2.0))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert killpoints.wait_gone(str(project)) == []
    rerun = run_cli(args, env=ENV, timeout=600)
    assert rerun.code == 0, rerun.output
    _consistent(project / "dist-all")
    assert not _tool_debris(tmp_path), _tool_debris(tmp_path)


# --- publish -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_publish_killed_then_rerun_completes(dist_project: Path, tmp_path: Path, seed: int) -> None:
    with PypiSandbox(directory=tmp_path / "index") as box:
        env = {"TWINE_USERNAME": box.username, "TWINE_PASSWORD": box.password, **FAST}
        args = [
            "publish",
            "--project",
            str(dist_project),
            "--target",
            "sandbox",
            "--repository-url",
            box.upload_url,
            "--yes",
        ]
        proc = killpoints.start(args, env)
        killpoints.wait_ready(proc)
        time.sleep(random.Random(seed).uniform(0.0, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        local = local_wheels(dist_project)
        on_index = sha256s(p for p in box.directory.iterdir() if p.is_file() and not p.name.startswith("."))
        assert all(local.get(n) == d for n, d in on_index.items()), (on_index, local)
        rerun = run_cli(args, env=env, timeout=300)
        assert rerun.code == 0, rerun.output
        assert sha256s(p for p in box.directory.iterdir() if p.is_file()) == local


# --- release (rehearsed: the same code path as a real release, against local stand-ins) --------------

RELEASE = ["release", "--rehearse", "--yes", "--bump", "patch", "--targets", "github", "--no-gpu-check"]
REL_ENV = {**ENV, "KESTREL_RELEASE_GITHUB_REPO": "m87-labs/mini-ext"}  # the release target, as configured


def rel_env(project: Path) -> dict[str, str]:
    """REL_ENV with a cache dir of this project's own: the tool's caches (build envs, verify verdicts, build
    facts) write files only when cold, so a shared warm cache would move every kill point between runs."""
    return {**REL_ENV, "KESTREL_RELEASE_CACHE_DIR": str(project.parent / f"{project.name}.cache")}


def _finish_like_a_user(project: Path, resume_first: bool) -> None:
    """Re-run; when the tool says to use --resume, do that. Two commands at most, no manual step."""
    args = [*RELEASE, "--project", str(project)]
    result = run_cli([*args, "--resume"] if resume_first else args, env=rel_env(project), timeout=600)
    if result.code == 2 and "--resume" in result.stderr and not resume_first:
        result = run_cli([*args, "--resume"], env=rel_env(project), timeout=600)
    elif result.code == 2 and "nothing to resume" in result.stderr:
        result = run_cli(args, env=rel_env(project), timeout=600)
    assert result.code == 0, result.output
    assert "release 0.1.1 complete" in result.stderr, result.stderr  # released as 0.1.1: bumped once


def _bumped_at_most_once(project: Path) -> None:
    """The version files agree and moved at most once (a rehearsal may restore the project's version)."""
    first, second = _versions(project)
    assert first == second and first in ("0.1.0", "0.1.1"), (first, second)


@pytest.fixture(scope="module")
def release_ops(tmp_path_factory) -> int:
    tmp = tmp_path_factory.mktemp("count-release")
    project = factories.make_c_ext_project(tmp / "p")
    return killpoints.count_ops([*RELEASE, "--project", str(project)], tmp, rel_env(project))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_release_killed_anywhere_then_rerun_or_resume_releases_once(
    tmp_path: Path, release_ops: int, seed: int
) -> None:
    project = factories.make_c_ext_project(tmp_path / "p")
    killpoints.run_killed_at(_points(seed, release_ops), [*RELEASE, "--project", str(project)], rel_env(project))
    assert killpoints.wait_gone(str(project)) == []  # the rehearsal's servers died with the tool
    _finish_like_a_user(project, resume_first=seed % 2 == 0)
    _bumped_at_most_once(project)
    _consistent(project / "dist-all")
    assert not _tool_debris(project), _tool_debris(project)


@pytest.mark.slow
def test_resume_after_a_kill_just_past_the_bump(tmp_path: Path) -> None:
    """The step's files are written but the state does not say so yet: resume must not disagree."""

    def in_project(project: Path) -> dict[str, str]:
        # Kill points counted on the project's own files only: the rehearsal's stand-ins write from other
        # threads, so counting every operation would move the point found between runs.
        return {**rel_env(project), "KESTREL_TEST_COUNT_UNDER": str(project)}

    def killed_at(n: int) -> Path:
        project = factories.make_c_ext_project(tmp_path / f"p{n}-{len(list(tmp_path.iterdir()))}")
        killpoints.run_killed_at(n, [*RELEASE, "--project", str(project)], in_project(project))
        return project

    counted = factories.make_c_ext_project(tmp_path / "count")
    project_ops = killpoints.count_ops([*RELEASE, "--project", str(counted)], tmp_path, in_project(counted))

    def bumped(project: Path) -> bool:
        # Monotonic in the kill point, which a binary search needs: once the state records the bump it
        # keeps it, while the version files alone go back to 0.1.0 when the rehearsal restores them.
        state = project / "dist-all" / ".release-state.json"
        done = json.loads(state.read_text()).get("done", []) if state.exists() else []
        return "bump" in done or _versions(project) == ("0.1.1", "0.1.1")

    low, high = 1, project_ops  # the first kill point after which both version files hold 0.1.1
    while low < high:
        mid = (low + high) // 2
        if bumped(killed_at(mid)):
            high = mid
        else:
            low = mid + 1
    project = killed_at(low)
    args = [*RELEASE, "--project", str(project)]
    state = json.loads((project / "dist-all" / ".release-state.json").read_text())
    assert "bump" not in state["done"]
    plain = run_cli(args, env=rel_env(project), timeout=600)  # a plain re-run would bump again: refused, says --resume
    assert plain.code == 2 and "--resume" in plain.stderr, plain.output
    assert _versions(project) == ("0.1.1", "0.1.1")
    resumed = run_cli([*args, "--resume"], env=rel_env(project), timeout=600)
    assert resumed.code == 0, resumed.output
    assert "versions disagree" not in resumed.output
    assert "release 0.1.1 complete" in resumed.stderr, resumed.stderr
    _bumped_at_most_once(project)
