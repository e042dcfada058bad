"""Precompile once per (toolkit, arch): placeholders and env reach the step, one cache entry per pair,
only the pairs whose toolkit or arch changed run again, and a step that writes nothing is an error."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kestrel_release.adapters import cuda_toolkit
from kestrel_release.config_loader import load as config
from kestrel_release.errors import BuildError
from kestrel_release.stages.build_wheels import precompile_pairs

STEP = textwrap.dedent("""\
    import json, os, sys
    out, cuda, arch, nvcc, ptx = sys.argv[1:6]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.log"), "a") as log:
        log.write(f"{cuda} {arch}\\n")
    if os.environ.get("WRITE_NOTHING"):
        sys.exit(0)
    keys = ("KESTREL_CUDA", "KESTREL_CUDA_VERSION", "KESTREL_CUDA_ARCH", "KESTREL_NVCC", "KESTREL_PRECOMPILE_OUT",
            "CUDA_HOME", "CUDACXX", "KESTREL_CUDA_PTX")
    seen = {"argv": [cuda, arch, nvcc, ptx], "env": {k: os.environ.get(k) for k in keys}}
    with open(os.path.join(out, "k.json"), "w") as f:
        json.dump(seen, f)
    """)


def _nvcc(root: Path, version: str) -> Path:
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True, exist_ok=True)
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {version[:4]}, V{version}'\n")
    nvcc.chmod(0o755)
    return nvcc


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "proj"
    project.mkdir()
    (project / "step.py").write_text(STEP)
    (project / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "demo"
        version = "0.1"
        [tool.kestrel-release]
        cuda_arch = ["80", "90a"]
        cuda = ["12.9", "13.0"]
        cuda_ptx = ["80"]
        precompile = ["{python}", "step.py", "{out}", "{cuda}", "{arch}", "{nvcc}", "{ptx}"]
        precompile_inputs = ["step.py"]
        precompile_outputs = "pre"
        [tool.kestrel-release.build]
        jobs = 2
        """)
    )
    cu12, cu13 = _nvcc(tmp_path / "cuda-12.9", "12.9.86"), _nvcc(tmp_path / "cuda-13.0", "13.0.88")
    env = {"PATH": "/usr/bin:/bin", "CUDA_HOME": str(cu12.parent.parent), "CUDACXX": str(cu13)}
    return project, env, cu12, cu13


def _run(project: Path, env: dict, **overrides):
    cfg = config.load(project, env={})
    if overrides:
        import dataclasses

        cfg = dataclasses.replace(cfg, **overrides)
    toolkits = cuda_toolkit.resolve(cfg.cuda, allow_install=False, env=env)
    return precompile_pairs.run(cfg, toolkits, log_dir=project / "logs")


def _runs(project: Path) -> list[str]:
    log = project / "runs.log"
    lines = sorted(log.read_text().splitlines()) if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def test_each_pair_runs_once_with_its_toolkit_and_is_cached_per_pair(setup):
    project, env, cu12, cu13 = setup
    first = _run(project, env)
    assert first.status == "compiled"
    assert _runs(project) == ["12.9 80", "12.9 90a", "13.0 80", "13.0 90a"]
    seen = json.loads((project / "pre" / "cu12.9" / "sm_80" / "k.json").read_text())
    assert seen["argv"] == ["12.9", "80", str(cu12), "1"]
    assert seen["env"]["KESTREL_CUDA_VERSION"] == "12.9.86" and seen["env"]["CUDACXX"] == str(cu12)
    assert seen["env"]["CUDA_HOME"] == str(cu12.parent.parent)
    assert seen["env"]["KESTREL_PRECOMPILE_OUT"] == str(project / "pre" / "cu12.9" / "sm_80")
    assert json.loads((project / "pre" / "cu13.0" / "sm_90a" / "k.json").read_text())["argv"][3] == "0"  # no PTX
    index = json.loads((project / "pre" / precompile_pairs.INDEX).read_text())
    assert next((p["cuda"], p["arch"], p["dir"]) for p in index["pairs"]) == ("12.9", "80", "cu12.9/sm_80")

    assert _run(project, env).status == "up-to-date" and _runs(project) == []
    # A new toolkit release recompiles that toolkit's pairs only.
    _nvcc(cu13.parent.parent, "13.0.99")
    again = _run(project, env)
    assert _runs(project) == ["13.0 80", "13.0 90a"]
    assert {(r["cuda"], r["arch"]): r["status"] for r in again.pairs}[("12.9", "80")] == "up-to-date"
    # A new arch compiles that arch only; a dropped one's directory goes (this step wrote it).
    _run(project, env, cuda_arch=("90a", "120f"))
    assert _runs(project) == ["12.9 120f", "13.0 120f"]
    assert not (project / "pre" / "cu12.9" / "sm_80").exists()
    assert (project / "pre" / "cu13.0" / "sm_120f" / "k.json").is_file()


def test_a_step_that_writes_nothing_is_a_build_error_naming_the_pair(setup, monkeypatch):
    project, env, _cu12, _cu13 = setup
    monkeypatch.setenv("WRITE_NOTHING", "1")
    with pytest.raises(BuildError, match=r"precompile for CUDA (12.9|13.0) sm_(80|90a) wrote nothing to"):
        _run(project, env)


def test_an_arch_a_toolkit_cannot_build_is_exit_2_naming_both(tmp_path):
    from tests.helpers import assert_one_line_error, run_cli

    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "demo"
        version = "0.1"
        [tool.kestrel-release]
        cuda_arch = ["80", "110"]
        cuda = ["12.9", "13.0"]
        """)
    )
    result = run_cli(["build", "--project", str(tmp_path), "--out", str(tmp_path / "out")])
    assert_one_line_error(result, 2, "sm_110 cannot be built by CUDA 12.9", '"110@13.0"')
    assert not (tmp_path / "out").exists()
