"""doctor's "C++ standard for torch" row: the package's -std against the build env's torch headers."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.adapters import pythons, torch_probe
from kestrel_release.config_loader import load as config
from kestrel_release.flows import doctor_cxx_std
from tests.unit.project.test_cxx_std import ALL_H_2_15, CHAMFERDIST, headers, project

PYPROJECT = '[project]\nname = "chamferdist"\nversion = "1.0.3"\n[tool.kestrel-release]\npython = ["3.12"]\n'


def test_without_isolation_the_interpreters_torch_is_compared(tmp_path, monkeypatch):
    root = project(
        tmp_path / "pkg",
        {"setup.py": CHAMFERDIST, "pyproject.toml": PYPROJECT + "[tool.kestrel-release.build]\nisolation = false\n"},
    )
    include = headers(tmp_path, ALL_H_2_15)
    monkeypatch.setattr(pythons, "find_interpreter", lambda version: Path("/usr/bin/python3.12"))
    seen = []
    monkeypatch.setattr(torch_probe, "headers", lambda python: seen.append(python) or ("2.15.0", include))
    status, detail, fix = doctor_cxx_std.row(config.load(root)) or ("", "", "")
    assert (status, fix) == (
        "fail",
        'raise the flag at setup.py:9 to C++20, or pin a torch whose headers accept C++17 with build.requires = ["torch==X.Y.*"]',
    )
    assert detail.startswith("setup.py:9 passes -std=c++17, but the build env's torch 2.15.0 requires C++20")
    assert seen == [Path("/usr/bin/python3.12")]


def test_an_isolated_env_not_made_yet_installs_nothing(tmp_path, monkeypatch):
    root = project(tmp_path / "pkg", {"setup.py": CHAMFERDIST, "pyproject.toml": PYPROJECT})
    python = tmp_path / "python3.12"
    python.write_text("")
    monkeypatch.setattr(pythons, "find_interpreter", lambda version: python)
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    assert doctor_cxx_std.row(config.load(root)) == (
        "ok",
        "setup.py:9 passes -std=c++17; no build env with torch yet: build compares them before compiling",
        "",
    )


def test_a_package_that_pins_no_standard_has_no_row(tmp_path):
    root = project(
        tmp_path, {"setup.py": "from torch.utils.cpp_extension import CUDAExtension\n", "pyproject.toml": PYPROJECT}
    )
    assert doctor_cxx_std.row(config.load(root)) is None
