"""A package that has never seen the tool: `init`, then the rehearsal `init` points to."""

from __future__ import annotations

import json
import shlex
import shutil

import pytest

from tests.helpers import ROOT, run_cli

MARK = b"\n[tool.kestrel-release]\n"


@pytest.mark.slow
def test_init_then_rehearsal_on_a_setuptools_abi3_extension(tmp_path):
    project = tmp_path / "c-ext-stub"
    shutil.copytree(
        ROOT / "examples" / "c-ext-stub", project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    committed = (project / "pyproject.toml").read_bytes()
    (project / "pyproject.toml").write_bytes(committed[: committed.index(MARK)])  # as before init

    init = run_cli(["init", "--yes"], cwd=project)
    assert init.code == 0, init.output
    # No github.com origin: the command init prints must run exactly as printed (github is a default target).
    printed = next(line for line in init.stderr.splitlines() if line.startswith("next: ")).removeprefix("next: ")
    assert printed == "kestrel-release release --rehearse --targets testpypi,pypi"

    release = run_cli([*shlex.split(printed)[1:], "--json"], cwd=project, timeout=900)
    assert release.code == 0, release.output
    doc = json.loads(release.stdout)
    steps = {s["name"]: s["status"] for s in doc["steps"]}
    assert steps["smoke-test"] == "done" and steps["publish-pypi"] == "done", steps
    wheels = sorted(p.name for p in (project / "dist-all").glob("*.whl"))
    assert len(wheels) == 1 and "-cp310-abi3-" in wheels[0]  # built once, for every listed Python
    # The working files the rehearsal left are the ones init told git to ignore.
    ignored = (project / ".gitignore").read_text().splitlines()
    assert {"/dist-all/", "/dist-all.rehearsal/"} <= set(ignored)
    assert (project / "dist-all.rehearsal").exists()
