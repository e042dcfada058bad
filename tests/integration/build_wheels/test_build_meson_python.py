"""meson-python with a dynamic version (PyWavelets, contourpy): the version comes from the built wheel's
METADATA, never from a second full build_wheel, and asking the backend (`release`) runs it with the build
env's `bin` on PATH, where `meson` is (issue 21: `meson executable "meson" not found` after the wheel built)."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile

import pytest

from tests.factories import C_EXT_SOURCE
from tests.helpers import run_cli

PYPROJECT = """[build-system]
requires = ["meson-python>=0.15"]
build-backend = "mesonpy"

[project]
name = "mini-meson"
dynamic = ["version"]

[tool.kestrel-release]
python = ["3.12"]

[tool.kestrel-release.verify]
required_sass = []
"""
MESON_BUILD = """project('mini-meson', 'c', version: '0.2.0')
py = import('python').find_installation(pure: false)
py.extension_module('_c', 'c.c', install: true, subdir: 'mini_meson')
py.install_sources('mini_meson/__init__.py', subdir: 'mini_meson')
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("meson") is not None, reason="a meson on PATH would hide the missing env bin dir")
def test_a_meson_python_dynamic_version_builds_once_and_releases(tmp_path):
    project = tmp_path / "mini"
    (project / "mini_meson").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "meson.build").write_text(MESON_BUILD)
    (project / "c.c").write_text(C_EXT_SOURCE)
    (project / "mini_meson" / "__init__.py").write_text("")
    cache = tmp_path / "cache"
    env = {"KESTREL_RELEASE_CACHE_DIR": str(cache)}

    build = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=env, timeout=900)
    assert build.code == 0, build.output
    (wheel,) = (project / "dist-all").glob("*.whl")
    assert wheel.name.startswith("mini_meson-0.2.0-cp312-cp312-"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        assert any(n.startswith("mini_meson/_c.cpython-312") for n in zf.namelist())
    # The version came from the wheel: the backend was never asked for metadata (no second build).
    assert not list((cache / "metadata").glob("*.json"))

    # release asks the backend for the dynamic version before it builds: in the build env, meson on PATH.
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A", "pyproject.toml", "meson.build", "c.c", "mini_meson"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=project, check=True)
    release = run_cli(
        ["release", "--rehearse", "--targets", "testpypi", "--project", str(project), "--json"], env=env, timeout=900
    )
    assert release.code == 0, release.output
    assert json.loads(release.stdout)["version"] == "0.2.0"
