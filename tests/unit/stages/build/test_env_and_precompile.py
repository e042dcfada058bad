"""build's pieces that need no wheel build: interpreters, preflight, cache keys, zip normalisation."""

from __future__ import annotations

import stat
import sys
import zipfile
from pathlib import Path

import pytest

from kestrel_release import config
from kestrel_release.adapters import pythons
from kestrel_release.errors import BuildError, PreflightError
from kestrel_release.stages.build import precompile
from kestrel_release.stages.build import wheelzip as _wheelzip
from tests.conftest import copy_kernels
from tests.helpers import KERNELS, assert_one_line_error, run_cli


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


def test_find_all_names_every_missing_version(monkeypatch, tmp_path):
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    with pytest.raises(PreflightError, match=r"no working CPython 3\.97, 3\.98 found"):
        pythons.find_all(["3.97", "3.98"])


def test_build_missing_interpreter_is_exit_3_before_building(tmp_path):
    out = tmp_path / "out"
    result = run_cli(["build", "--project", str(KERNELS), "--python", "3.12,3.98", "--out", str(out)])
    assert_one_line_error(result, 3, "no working CPython 3.98 found", "searched: PATH")
    assert not out.exists()


def test_build_missing_nvcc_is_exit_3_before_building(tmp_path):
    out = tmp_path / "out"
    result = run_cli(["build", "--project", str(KERNELS), "--python", "3.12", "--out", str(out)],
                     env={"CUDACXX": "/nonexistent/nvcc"})
    assert_one_line_error(result, 3, "build preflight", "CUDACXX=/nonexistent/nvcc", "set CUDACXX=")
    assert not out.exists()


def test_build_requires_gpu_is_exit_3_unless_skipped(tmp_path):
    from kestrel_release.adapters import gpu

    if gpu.has_arch(gpu.detect()[0], "90a"):
        pytest.skip("this machine has an sm_90 GPU")
    out = tmp_path / "out"
    result = run_cli(["build", "--project", str(KERNELS), "--python", "3.12", "--out", str(out)],
                     env={"KESTREL_RELEASE_REQUIRES_GPU": "true"})
    assert_one_line_error(result, 3, "needs an sm_90a GPU", "--no-gpu-check")
    assert not out.exists()


def test_precompile_key_follows_inputs_and_env(tmp_path):
    project = copy_kernels(tmp_path / "k")
    cfg = config.load(project, env={})
    key = precompile.cache_key(cfg, "13.0.88", {})
    assert precompile.cache_key(cfg, "13.0.88", {"UNRELATED": "1"}) == key
    assert precompile.cache_key(cfg, "12.8.93", {}) != key
    assert precompile.cache_key(cfg, "13.0.88", {"NVCC_APPEND_FLAGS": "-G"}) != key
    template = next(project.glob("python/kestrel_kernels/*/kernel.py"))
    template.write_text(template.read_text() + "\n# changed\n")
    assert precompile.cache_key(cfg, "13.0.88", {}) != key


def _wheel(path: Path, members: list[tuple[str, bytes, tuple]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data, stamp in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=stamp), data)
    return path


def test_normalize_makes_builds_identical(tmp_path):
    members = [("demo-1.0.dist-info/RECORD", b"r"), ("demo/_C.so", b"\x7fELF"), ("demo-1.0.dist-info/METADATA", b"m")]
    a = _wheel(tmp_path / "a.whl", [(n, d, (2024, 1, 1, 0, 0, 0)) for n, d in members])
    b = _wheel(tmp_path / "b.whl", [(n, d, (2025, 6, 6, 6, 6, 6)) for n, d in reversed(members)])
    for w in (a, b):
        _wheelzip.normalize(w, 1700000000)
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as zf:
        assert zf.namelist() == ["demo/_C.so", "demo-1.0.dist-info/METADATA", "demo-1.0.dist-info/RECORD"]
        assert zf.read("demo/_C.so") == b"\x7fELF"
        assert {i.date_time for i in zf.infolist()} == {(2023, 11, 14, 22, 13, 20)}


def test_assert_identical_names_wheel_and_member(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    stamp = (2024, 1, 1, 0, 0, 0)
    a = _wheel(tmp_path / "a/demo.whl", [("demo/x.py", b"1", stamp), ("demo/y.py", b"2", stamp)])
    b = _wheel(tmp_path / "b/demo.whl", [("demo/x.py", b"1", stamp), ("demo/y.py", b"3", stamp)])
    with pytest.raises(BuildError, match=r"not reproducible: demo\.whl: first difference in demo/y\.py"):
        _wheelzip.assert_identical({"3.12": a}, {"3.12": b})
    _wheelzip.assert_identical({"3.12": a}, {"3.12": a})


def test_build_env_keyed_by_interpreter_and_requirements(tmp_path, monkeypatch):
    from kestrel_release.stages.build import env as _buildenv

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert _buildenv.build_system(tmp_path) == {"requires": ["setuptools>=40.8.0"], "backend-path": [],
                                                "build-backend": "setuptools.build_meta:__legacy__"}
    system = _buildenv.build_system(KERNELS)
    assert system["requires"] == ["scikit-build-core>=0.10"] and system["build-backend"] == "scikit_build_core.build"
    py = Path(sys.executable)
    one = _buildenv.env_dir(py, ["scikit-build-core>=0.10"])
    assert one.parent == tmp_path / "cache" / "build-envs"
    assert _buildenv.env_dir(py, ["scikit-build-core>=0.10"]) == one
    assert _buildenv.env_dir(py, ["scikit-build-core>=0.11"]) != one


def test_build_env_failure_falls_back_with_one_warning(tmp_path, monkeypatch, capsys):
    from kestrel_release.stages.build import env as _buildenv

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    offline_uv = _fake_python(tmp_path / "bin/uv", "error: Failed to fetch: network unreachable")
    offline_uv.write_text(offline_uv.read_text() + "exit 2\n")
    envs = _buildenv.Envs(offline_uv, {"3.12": Path(sys.executable), "3.13": Path(sys.executable)}, KERNELS,
                          tmp_path / "logs", {})
    try:
        assert envs.get("3.12") is None and envs.get("3.13") is None
    finally:
        envs.close()
    err = capsys.readouterr().err
    assert err.count("no reusable build env") == 1 and "building with uv's isolated envs instead" in err
    assert "network unreachable" in (tmp_path / "logs/env-3.12.log").read_text()
    assert not [p for p in (tmp_path / "cache/build-envs").iterdir() if not p.name.endswith(".lock")]


def test_repairer_reports_each_wheel_with_its_log(tmp_path):
    from kestrel_release.stages.build import repair as _repair

    bad = [tmp_path / f"kestrel_kernels-0.1.0-cp31{i}-cp31{i}-linux_x86_64.whl" for i in (2, 3)]
    for wheel in bad:
        wheel.write_bytes(b"not a zip")
    pids = set()
    with _repair.Repairer(1700000000) as repairer:
        for i, wheel in enumerate(bad):
            log = tmp_path / f"repair-{i}.log"
            with pytest.raises(BuildError, match=rf"auditwheel repair for Python 3\.1{i + 2} failed with exit code "
                                                 rf"\d+ \(log: {log}\)"):
                repairer.repair(wheel, tmp_path / "out", "manylinux_2_34_x86_64", (), log=log,
                                what=f"auditwheel repair for Python 3.1{i + 2}")
            text = log.read_text()
            assert text.startswith("+ auditwheel repair --plat manylinux_2_34_x86_64") and wheel.name in text
            pids.add(repairer._child.pid)
    assert len(pids) == 1  # one child served both wheels, and outlived the first failure
    assert not Path(f"/proc/{pids.pop()}").exists()  # closed and reaped
