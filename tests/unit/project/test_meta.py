"""config.load only reads; project_meta.resolve is where a project without [project] gets its name and version."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.project import meta as project_meta
from tests.factories import NAME, make_dist

SETUP_PY_PROJECT = (
    '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
    '[tool.kestrel-release]\npython = ["3.12"]\n'
)


@pytest.fixture
def setup_py_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KESTREL_RELEASE_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached to find
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(SETUP_PY_PROJECT, encoding="utf-8")
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='stub', version='1.0')\n")
    return root


def test_loading_a_project_without_a_project_table_asks_no_backend(setup_py_project: Path) -> None:
    # Unit tests refuse every child process: loading used to run the backend (or make a uv env) here.
    cfg = config.load(setup_py_project, env={})
    assert (cfg.metadata_source, cfg.name, cfg.version) == ("backend", "", None)


def test_resolve_names_the_project_from_its_build_outputs_manifest(setup_py_project: Path, tmp_path: Path) -> None:
    out = tmp_path / "wheels"
    make_dist(out, version="2.3.4")
    cfg = project_meta.resolve(config.load(setup_py_project, env={}), [out])
    assert (cfg.name, cfg.version) == (NAME, "2.3.4")


def test_resolve_keeps_a_stated_or_already_resolved_identity(setup_py_project: Path, tmp_path: Path) -> None:
    resolved = dataclasses.replace(config.load(setup_py_project, env={}), name="stub", version="1.0")
    assert project_meta.resolve(resolved) is resolved
    stated = tmp_path / "stated"
    stated.mkdir()
    (stated / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n\n[tool.kestrel-release]\n')
    cfg = config.load(stated, env={})
    assert project_meta.resolve(cfg) is cfg
