"""build's pieces that need no wheel build: interpreters, preflight, cache keys, zip normalisation."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from kestrel_release.adapters import pythons
from kestrel_release.errors import BuildError, PreflightError
from tests.helpers import KERNELS, assert_one_line_error, python_version, run_cli


@pytest.fixture(autouse=True)
def _fresh_interpreter_cache():
    pythons.find_interpreter.cache_clear()
    yield
    pythons.find_interpreter.cache_clear()


def _fake_python(path: Path, answer: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{answer}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_finds_pyenv_version_newest_patch(tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    _fake_python(tmp_path / "versions/3.77.1/bin/python3.77", "CPython 3.77 ")
    newest = _fake_python(tmp_path / "versions/3.77.10/bin/python3.77", "CPython 3.77 ")
    _fake_python(tmp_path / "versions/3.777.0/bin/python3.777", "CPython 3.777 ")
    assert pythons.find_interpreter("3.77") == newest


def test_skips_broken_and_free_threaded_candidates(tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    _fake_python(tmp_path / "versions/3.77.2t/bin/python3.77", "CPython 3.77 t")
    _fake_python(tmp_path / "versions/3.77.1/bin/python3.77", "PyPy 3.77 ")
    with pytest.raises(PreflightError) as info:
        pythons.find_interpreter("3.77")
    assert "no working CPython 3.77 found (searched: PATH, pyenv" in str(info.value)


def test_finds_free_threaded_builds_by_their_t_name(tmp_path, monkeypatch):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    regular = _fake_python(tmp_path / "versions/3.77.2/bin/python3.77", "CPython 3.77 ")
    threaded = _fake_python(tmp_path / "versions/3.77.2t/bin/python3.77t", "CPython 3.77 t")
    on_path = _fake_python(tmp_path / "bin/python3.78t", "CPython 3.78 t")
    _fake_python(tmp_path / "bin/python3.79t", "CPython 3.79 ")  # says it is a regular build: not taken
    assert pythons.find_interpreter("3.77t") == threaded
    assert pythons.find_interpreter("3.77") == regular
    assert pythons.find_interpreter("3.78t") == on_path
    with pytest.raises(PreflightError, match=r"no working CPython 3\.79t found"):
        pythons.find_interpreter("3.79t")


def test_find_all_names_every_missing_version(monkeypatch, tmp_path):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    with pytest.raises(PreflightError, match=r"no working CPython 3\.97, 3\.98 found"):
        pythons.find_all(["3.97", "3.98"])


def test_build_missing_interpreter_is_exit_3_before_building(tmp_path):
    out = tmp_path / "out"
    result = run_cli(["build", "--project", str(KERNELS), "--python", f"{python_version()},3.98", "--out", str(out)])
    assert_one_line_error(result, 3, "no working CPython 3.98 found", "searched: PATH")
    assert not out.exists()


def test_build_missing_nvcc_is_exit_3_before_building(tmp_path):
    out = tmp_path / "out"
    result = run_cli(
        ["build", "--project", str(KERNELS), "--python", python_version(), "--out", str(out)],
        env={"CUDACXX": "/nonexistent/nvcc"},
    )
    assert_one_line_error(result, 3, "build preflight", "CUDACXX=/nonexistent/nvcc", "set CUDACXX=")
    assert not out.exists()


def test_build_requires_gpu_is_exit_3_unless_skipped(tmp_path):
    from kestrel_release.adapters import gpu

    if gpu.has_arch(gpu.detect()[0], "90a"):
        pytest.skip("this machine has an sm_90 GPU")
    out = tmp_path / "out"
    result = run_cli(
        ["build", "--project", str(KERNELS), "--python", python_version(), "--out", str(out)],
        env={"KESTREL_RELEASE_REQUIRES_GPU": "true"},
    )
    assert_one_line_error(result, 3, "needs an sm_80/sm_90a/sm_100f/sm_120f GPU", "--no-gpu-check")
    assert not out.exists()


def test_build_env_failure_falls_back_with_one_warning(tmp_path, monkeypatch, capsys):
    from kestrel_release.project import build_env as _buildenv

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    offline_uv = _fake_python(tmp_path / "bin/uv", "error: Failed to fetch: network unreachable")
    offline_uv.write_text(offline_uv.read_text() + "exit 2\n")
    envs = _buildenv.Envs(
        offline_uv, {"3.12": Path(sys.executable), "3.13": Path(sys.executable)}, KERNELS, tmp_path / "logs", {}
    )
    try:
        assert envs.get("3.12") is None and envs.get("3.13") is None
    finally:
        envs.close()
    err = capsys.readouterr().err
    assert err.count("no reusable build env") == 1 and "building with uv's isolated envs instead" in err
    assert "network unreachable" in (tmp_path / "logs/env-3.12.log").read_text()
    assert not [p for p in (tmp_path / "cache/build-envs").iterdir() if not p.name.endswith(".lock")]


def test_repairer_reports_each_wheel_with_its_log(tmp_path):
    from kestrel_release.stages.build_wheels import repair as _repair

    bad = [tmp_path / f"kestrel_kernels-0.1.0-cp31{i}-cp31{i}-linux_x86_64.whl" for i in (2, 3)]
    for wheel in bad:
        wheel.write_bytes(b"not a zip")
    pids = set()
    with _repair.Repairer(1700000000) as repairer:
        for i, wheel in enumerate(bad):
            log = tmp_path / f"repair-{i}.log"
            with pytest.raises(
                BuildError,
                match=rf"auditwheel repair for Python 3\.1{i + 2} failed with exit code "
                rf"\d+ \(log: {log}\)",
            ):
                repairer.repair(
                    wheel,
                    tmp_path / "out",
                    "manylinux_2_34_x86_64",
                    (),
                    log=log,
                    what=f"auditwheel repair for Python 3.1{i + 2}",
                )
            text = log.read_text()
            assert text.startswith("+ auditwheel repair --plat manylinux_2_34_x86_64") and wheel.name in text
            pids.add(repairer._child.pid)
    assert len(pids) == 1  # one child served both wheels, and outlived the first failure
    assert not Path(f"/proc/{pids.pop()}").exists()  # closed and reaped
