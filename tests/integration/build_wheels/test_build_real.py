"""Real builds of (a copy of) kernels/: wheels, caches, nvcc counts, failures, interrupts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import copy_kernels
from tests.helpers import ROOT, assert_one_line_error, need_pythons, python_version, run_cli

pytestmark = pytest.mark.slow
PYTHONS = "3.12,3.13"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_kernels(tmp_path / "kernels")


@pytest.fixture
def nvcc_log(tmp_path: Path) -> Path:
    return tmp_path / "nvcc-calls.log"


@pytest.fixture
def env(tmp_path: Path, nvcc_log: Path) -> dict[str, str]:
    """A private tool cache and an nvcc wrapper that logs every invocation."""
    real = shutil.which("nvcc")
    if real is None:
        pytest.skip("nvcc not installed")
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{nvcc_log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    nvcc_log.write_text("")
    # One (toolkit, arch) pair: these tests are about the build's mechanics; the multi-generation
    # build is built_wheels' (and test_multigen's).
    return {
        "CUDACXX": str(wrapper),
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
        "SOURCE_DATE_EPOCH": "1700000000",
        "KESTREL_RELEASE_CUDA": _nvcc_toolkit(real),
        "KESTREL_RELEASE_CUDA_ARCH": "90a",
    }


def _nvcc_toolkit(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split("release ", 1)[1].split(",", 1)[0]


def _build(project: Path, out: Path, env: dict[str, str], *extra: str):
    need_pythons(*PYTHONS.split(","))
    result = run_cli(
        [
            "build",
            "--project",
            str(project),
            "--out",
            str(out),
            "--python",
            PYTHONS,
            "--no-gpu-check",
            "--json",
            *extra,
        ],
        env=env,
    )
    return result, (json.loads(result.stdout) if result.code == 0 else None)


def _compiles(log: Path) -> int:
    return sum("-cubin" in line or "-fatbin" in line for line in log.read_text().splitlines())


def _hashes(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("*.whl"))}


def test_nvcc_once_per_variant_then_never(project, env, nvcc_log, tmp_path):
    shutil.rmtree(project / "python/kestrel_kernels/precompiled", ignore_errors=True)
    out = tmp_path / "out"
    result, data = _build(project, out, env)
    assert result.code == 0, result.output
    kernels = data["precompile"]["kernels"]
    assert data["precompile"]["status"] == "compiled" and len(kernels) >= 3
    assert _compiles(nvcc_log) == len(kernels)  # once per variant, not once per Python
    first = _hashes(out)
    assert sorted(first) == [f"kestrel_kernels-0.1.0-cp{v}-cp{v}-manylinux_2_34_x86_64.whl" for v in ("312", "313")]

    nvcc_log.write_text("")
    result, data = _build(project, out, env)
    assert result.code == 0, result.output
    assert data["precompile"]["status"] == "up-to-date"
    assert nvcc_log.read_text() == ""  # not even nvcc --version
    assert _hashes(out) == first  # same commit, same bytes

    template = project / "python/kestrel_kernels/silu_and_mul/kernel.py"
    original = template.read_text()
    template.write_text(original + "\n# another branch\n")
    nvcc_log.write_text("")
    result, data = _build(project, out, env)
    assert result.code == 0, result.output
    assert data["precompile"]["status"] == "compiled" and _compiles(nvcc_log) > 0

    template.write_text(original)  # "git checkout" back: the tool cache restores, nothing compiles
    nvcc_log.write_text("")
    result, data = _build(project, out, env)
    assert result.code == 0, result.output
    assert data["precompile"]["status"] == "restored"
    assert nvcc_log.read_text() == ""
    assert _hashes(out) == first


def test_failing_python_leaves_output_untouched(project, env, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "previous.whl").write_text("the last good build")
    source = project / "ext/_C.c"
    source.write_text(
        source.read_text().replace(
            "#include <Python.h>\n",
            "#include <Python.h>\n#if PY_VERSION_HEX >= 0x030D0000\n#error kestrel-test-broken\n#endif\n",
            1,
        )
    )
    result, _ = _build(project, out, env)
    assert_one_line_error(result, 4, "build for Python 3.13 failed", "log:")
    log = Path(result.stderr.split("(log: ")[1].split(")")[0])
    assert "kestrel-test-broken" in log.read_text()
    assert "kestrel-test-broken" in result.stderr  # the log's last lines are shown
    assert sorted(p.name for p in out.iterdir()) == ["previous.whl"]
    assert not list(tmp_path.glob(".kestrel-staging-*"))


def test_check_reproducible(project, env, tmp_path):
    out = tmp_path / "out"
    result = run_cli(
        [
            "build",
            "--project",
            str(project),
            "--out",
            str(out),
            "--python",
            python_version(),
            "--no-gpu-check",
            "--check-reproducible",
            "--json",
        ],
        env=env,
    )
    assert result.code == 0, result.output
    assert json.loads(result.stdout)["reproducible"] is True


def test_sigterm_kills_children_and_leaves_output(project, env, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "previous.whl").write_text("the last good build")
    need_pythons(*PYTHONS.split(","))
    full_env = {**os.environ, **env}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kestrel_release",
            "build",
            "--project",
            str(project),
            "--out",
            str(out),
            "--python",
            PYTHONS,
            "--no-gpu-check",
        ],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    logs = tmp_path / "cache" / "projects"  # the project's build-logs/ in the tool's state dir
    deadline = time.monotonic() + 120
    while not list(logs.glob("*/build-logs/build-*.log")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # let uv start its build backends
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert [line for line in stderr.splitlines() if line.startswith("error:")] == [
        f"error: build interrupted; {out} was left untouched"
    ]
    assert sorted(p.name for p in out.iterdir()) == ["previous.whl"]
    assert not list(tmp_path.glob(".kestrel-staging-*"))
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(project) not in ps  # no orphaned uv/cmake still building


def test_built_wheels_fixture_has_every_python(built_wheels):
    names = sorted(p.name for p in built_wheels.iterdir() if not p.name.startswith("."))
    tags = ("310", "311", "312", "313")
    assert names == sorted(
        [f"kestrel_kernels-0.1.0-cp{t}-cp{t}-manylinux_2_34_x86_64.whl" for t in tags]
        + ["SHA256SUMS", "release-manifest.json"]
    )
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=built_wheels, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    manifest = json.loads((built_wheels / "release-manifest.json").read_text())
    assert [w["python"] for w in manifest["wheels"]] == ["3.10", "3.11", "3.12", "3.13"]
    assert {w["platform_tag"] for w in manifest["wheels"]} == {"manylinux_2_34_x86_64"}
    # Every (toolkit, arch) pair of kernels/pyproject.toml: CUDA 12.9 (NVRTC from PyPI) and 13.0.
    pairs = {(k["cuda"], k["arch"]) for k in manifest["kernels"]}
    assert pairs == {(c, a) for c in ("12.9", "13.0") for a in ("sm_80", "sm_90a", "sm_100f", "sm_120f")}
    with zipfile.ZipFile(next(built_wheels.glob("*.whl"))) as zf:
        fatbins = {"/".join(n.split("/")[-3:]) for n in zf.namelist() if n.endswith(".fatbin")}
    assert fatbins == {f"cu{k['cuda']}/{k['arch']}/{k['cubin']}" for k in manifest["kernels"]}


def test_warm_rebuild_reuses_build_env_and_build_dir(project, env, tmp_path):
    out = tmp_path / "out"
    result, _ = _build(project, out, env, "--python", "3.12")
    assert result.code == 0, result.output
    envs = [p for p in (tmp_path / "cache/build-envs").iterdir() if p.is_dir()]
    assert len(envs) == 1
    marker = envs[0] / "kestrel-build-env.json"
    assert json.loads(marker.read_text())["requires"] == ["scikit-build-core>=0.10"]
    created = marker.stat().st_ino, (envs[0] / "bin/python").stat().st_mtime_ns

    init = project / "python/kestrel_kernels/__init__.py"
    init.write_text(init.read_text() + "\nWARM_REBUILD_MARK = 1\n")
    result, data = _build(project, out, env, "--python", "3.12")
    assert result.code == 0, result.output
    assert (marker.stat().st_ino, (envs[0] / "bin/python").stat().st_mtime_ns) == created  # env reused as is
    log = (Path(data["logs"]) / "build-3.12.log").read_text()
    assert Path(data["logs"]).is_relative_to(tmp_path / "cache")  # the state dir, not the work tree
    assert f"--python {envs[0]}/bin/python" in log and "--no-build-isolation" in log
    assert "ninja: no work to do." in log  # the extension was not recompiled: an incremental build
    with zipfile.ZipFile(out / data["wheels"][0]["filename"]) as zf:
        assert b"WARM_REBUILD_MARK = 1" in zf.read("kestrel_kernels/__init__.py")
