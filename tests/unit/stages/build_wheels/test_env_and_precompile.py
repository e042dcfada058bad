"""build's pieces that need no wheel build: interpreters, preflight, cache keys, zip normalisation."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from kestrel_release.adapters import pythons
from kestrel_release.config_loader import load as config
from kestrel_release.errors import BuildError
from kestrel_release.stages.build_wheels import precompile
from kestrel_release.stages.build_wheels import wheelzip as _wheelzip
from tests.conftest import copy_kernels
from tests.helpers import KERNELS


@pytest.fixture(autouse=True)
def _fresh_interpreter_cache():
    pythons.find_interpreter.cache_clear()
    yield
    pythons.find_interpreter.cache_clear()


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
    from kestrel_release.project import build_env as _buildenv

    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert _buildenv.build_system(tmp_path) == {
        "requires": ["setuptools>=40.8.0"],
        "backend-path": [],
        "build-backend": "setuptools.build_meta:__legacy__",
    }
    system = _buildenv.build_system(KERNELS)
    assert system["requires"] == ["scikit-build-core>=0.10"] and system["build-backend"] == "scikit_build_core.build"
    py = Path(sys.executable)
    one = _buildenv.env_dir(py, ["scikit-build-core>=0.10"])
    assert one.parent == tmp_path / "cache" / "build-envs"
    assert _buildenv.env_dir(py, ["scikit-build-core>=0.10"]) == one
    assert _buildenv.env_dir(py, ["scikit-build-core>=0.11"]) != one


def test_build_requires_joins_the_projects_own_in_the_env_and_the_wheel_cache_key(tmp_path):
    """build.requires (a setup.py importing an undeclared torch): the build env holds it, another env than
    the project's list alone, and its installed version is among the facts the wheel cache keys on."""
    from kestrel_release.project import build_env as _buildenv
    from kestrel_release.stages.build_wheels import cachekey

    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    assert _buildenv.build_system(tmp_path, ("torch",))["requires"] == ["setuptools", "torch"]
    assert cachekey.requirement_names(tmp_path, ("torch==2.11.*",)) == ["setuptools", "torch"]
    py = Path(sys.executable)
    assert _buildenv.env_dir(py, ["setuptools", "torch"]) != _buildenv.env_dir(py, ["setuptools"])
