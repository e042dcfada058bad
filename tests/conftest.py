"""Shared fixtures.

`built_wheels` builds the real kernels/ package ONCE per test session with the
real CLI (`kestrel-release build --project <copy of kernels> --out <tmp>`) and
returns the output directory: four manylinux wheels (cp310-cp313), SHA256SUMS
and release-manifest.json. It builds a copy of kernels/ so that concurrent test
sessions and edits in the checkout never collide on the project lock or the
in-tree precompiled cubins. Treat the directory as read-only (copy it with
`shutil.copytree` before changing anything); mark tests that use it `slow`.

Set KESTREL_TEST_BUILT_WHEELS=/path/to/dist-all to reuse an existing build
output instead (handy when iterating on verify/publish tests).

A test skipped because the machine lacks a prerequisite (tests/helpers.py: need, need_pythons,
c_compiler) fails instead under `CI=true`: CI must run every test, a laptop may not.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import KERNELS, MissingPrerequisite, kernels_pythons, need_pythons, run_cli

_SKIP = shutil.ignore_patterns("dist", "dist-all", "build", ".kestrel-*", "__pycache__", "*.egg-info", ".pytest_cache")


def copy_kernels(dest: Path) -> Path:
    """A private copy of kernels/ (sources and in-tree cubins, no build outputs); returns it."""
    shutil.copytree(KERNELS, dest, ignore=_SKIP)
    return dest


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown (and unused) under `-p no:xdist`
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under pytest-xdist (`pytest -n 2`) the unit tests run beside the rest: they
    start no process and no server (tests/unit/conftest.py), so nothing they do can meet another test's. Every
    other test is one work unit for ONE worker, in order, as without xdist: they build with every core and
    share session fixtures (one real kernels/ build), caches and local servers. (A scheduler of our own:
    xdist 3.8's xdist_group marks are lost under pytest 9, whose item.nodeid drops the group suffix.)"""
    from xdist.scheduler import LoadScopeScheduling

    class UnitTestsBesideTheRest(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid if nodeid.startswith("tests/unit/") else "the rest, in order"

    return UnitTestsBesideTheRest(config, log)  # type: ignore[arg-type]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if (
        os.environ.get("CI") == "true"
        and report.skipped
        and call.excinfo is not None
        and isinstance(call.excinfo.value, MissingPrerequisite)
    ):
        report.outcome = "failed"
        report.longrepr = f"CI=true: this machine must run every test, but it {call.excinfo.value.msg}"


@pytest.fixture(autouse=True)
def _not_in_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process code under test speaks GitHub Actions only where a test sets GITHUB_ACTIONS itself: the suite
    running in an Actions job must neither change what tests see nor write into that job's summary."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(autouse=True)
def _own_run_context() -> Iterator[None]:
    """Each test starts in a run context of its own (kestrel_release/run_context.py): a flag, a held --json
    document or a reported failure of one test never reaches the next."""
    from kestrel_release import run_context

    with run_context.using(run_context.RunContext()):
        yield


@pytest.fixture(scope="session")
def built_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory with the wheels, SHA256SUMS and manifest of one real build of kernels/."""
    reuse = os.environ.get("KESTREL_TEST_BUILT_WHEELS")
    if reuse:
        return Path(reuse).resolve()
    need_pythons(*kernels_pythons())  # one wheel per configured Python: tests count them
    root = tmp_path_factory.mktemp("built-wheels")
    project = copy_kernels(root / "kernels")
    out = root / "dist-all"
    result = run_cli(["build", "--project", str(project), "--out", str(out), "--no-gpu-check"], timeout=1800)
    if result.code != 0:
        pytest.fail(f"kestrel-release build failed (exit {result.code}):\n{result.output[-4000:]}")
    return out
