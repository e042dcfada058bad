"""abi3/py3 builds: one build serves every regular Python; a free-threaded one keeps its own build."""

from __future__ import annotations

from pathlib import Path

from kestrel_release.config.model import Config
from kestrel_release.stages.build_wheels import native


def _cfg(tmp_path: Path, abi: str, pythons: tuple[str, ...]) -> Config:
    return Config(project_dir=tmp_path, name="k", version="1.0", abi=abi, python=pythons)


def test_abi3_builds_once_for_regular_pythons_and_once_per_free_threaded_one(tmp_path: Path) -> None:
    found = {py: Path(f"/py/{py}") for py in ("3.12", "3.14", "3.14t", "3.15", "3.15t")}
    chosen = native.pythons_to_build(_cfg(tmp_path, "abi3", tuple(found)), found)
    assert list(chosen) == ["3.12", "3.14t", "3.15t"]


def test_py3_builds_once_for_every_python_free_threaded_included(tmp_path: Path) -> None:
    found = {py: Path(f"/py/{py}") for py in ("3.14t", "3.13", "3.14")}
    assert list(native.pythons_to_build(_cfg(tmp_path, "py3", tuple(found)), found)) == ["3.13"]
