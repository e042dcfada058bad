"""The build env's facts (requirement versions, sysconfig compilers) are asked once per unchanged venv."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kestrel_release.adapters import pythons
from kestrel_release.stages.build_wheels import cachekey

FACTS = {"requirements": {"scikit-build-core": "1.1.2"}, "sysconfig": {"CC": "gcc"}}


@pytest.fixture
def asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each probe of an interpreter (the child process a warm build would start), recorded."""
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[Path] = []

    def probe(python: Path, requirements: list[str], env: dict[str, str] | None = None) -> dict | None:
        calls.append(python)
        return {**FACTS, "requirements": {n: "1.0" for n in requirements}}

    monkeypatch.setattr(pythons, "build_facts", probe)
    return calls


def _venv(root: Path, system_site: bool = False) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    python = root / "bin" / "python"
    python.write_text("#!/bin/sh\n")
    (root / "pyvenv.cfg").write_text(f"home = /usr/bin\ninclude-system-site-packages = {str(system_site).lower()}\n")
    return python


def _project(root: Path, requires: str = '"scikit-build-core"') -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f"[build-system]\nrequires = [{requires}]\n")
    return root


def test_an_unchanged_venv_is_asked_once(tmp_path: Path, asked: list[Path]) -> None:
    python, project = _venv(tmp_path / "env"), _project(tmp_path / "proj")
    first = cachekey.build_env_facts(python, project, {})
    again = cachekey.build_env_facts(python, project, {})
    assert again == first and first is not None and first["requirements"] == {"scikit-build-core": "1.0"}
    assert asked == [python]


def test_an_install_in_the_venv_asks_again(tmp_path: Path, asked: list[Path]) -> None:
    python, project = _venv(tmp_path / "env"), _project(tmp_path / "proj")
    cachekey.build_env_facts(python, project, {})
    cachekey.build_env_facts(python, project, {})
    site = tmp_path / "env" / "lib" / "python3.12" / "site-packages"
    (site / "torch-2.13.0.dist-info").mkdir()
    st = site.stat()  # a real install comes later than one clock tick: make the mtime say so here too
    os.utime(site, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    cachekey.build_env_facts(python, project, {})
    assert asked == [python, python]


def test_other_requirements_python_variables_or_interpreter_ask_again(tmp_path: Path, asked: list[Path]) -> None:
    python, project = _venv(tmp_path / "env"), _project(tmp_path / "proj")
    cachekey.build_env_facts(python, project, {})
    cachekey.build_env_facts(python, project, {"PATH": "/elsewhere"})  # not a Python variable: same answer
    assert len(asked) == 1
    cachekey.build_env_facts(python, project, {"PYTHONPATH": "/extra/site"})
    other = _project(tmp_path / "other", '"scikit-build-core", "torch"')
    assert cachekey.build_env_facts(python, other, {})["requirements"] == {"scikit-build-core": "1.0", "torch": "1.0"}
    python.write_text("#!/bin/sh\n# another interpreter build\n")
    cachekey.build_env_facts(python, project, {})
    assert len(asked) == 4


def test_a_failed_probe_is_not_remembered(tmp_path: Path, asked: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    python, project = _venv(tmp_path / "env"), _project(tmp_path / "proj")
    monkeypatch.setattr(pythons, "build_facts", lambda *a, **k: asked.append(python))
    assert cachekey.build_env_facts(python, project, {}) is None
    assert cachekey.build_env_facts(python, project, {}) is None
    assert len(asked) == 2


def test_an_interpreter_outside_a_venv_or_seeing_system_packages_is_always_asked(
    tmp_path: Path, asked: list[Path]
) -> None:
    project = _project(tmp_path / "proj")
    shared = _venv(tmp_path / "shared", system_site=True)
    plain = tmp_path / "usr" / "bin" / "python3"
    plain.parent.mkdir(parents=True)
    plain.write_text("#!/bin/sh\n")
    for python in (shared, shared, plain, plain):
        cachekey.build_env_facts(python, project, {})
    assert asked == [shared, shared, plain, plain]
