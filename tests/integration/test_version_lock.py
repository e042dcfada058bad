"""Writing the version: tomlkit round-trip, version_files, all-or-nothing, dry run, lock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kestrel_release import config
from kestrel_release.errors import UsageError
from kestrel_release.stages import version

# Comments everywhere, odd spacing, literal quotes, CRLF-free but a trailing comment
# on the version line: everything but the version must survive byte for byte.
PYPROJECT = """\
# kestrel-kernels: prebuilt CUDA kernels   (top comment, two spaces inside)

[build-system]
requires = ["scikit-build-core>=0.10",   # the backend
            "nanobind"]                   # bindings
build-backend = "scikit_build_core.build"

[project]   # the package
name    = "demo-kernels"
# the version below is owned by kestrel-release
version =    '0.1.0'      # single quotes, kept
description = 'Kernels'   # literal string
dependencies = [
  "torch>=2.4",  # runtime
]

  [tool.kestrel-release]          # indented table header
  python = ["3.12",   "3.13"]
  version_files = [
    { path = "pkg/__init__.py", pattern = '__version__ = "{version}"' },  # module
    { path = "pkg/_meta.py",    pattern = "VERSION = '{version}'" },
  ]
# trailing comment without newline at end"""


def make_project(root: Path, pyproject: str = PYPROJECT) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(pyproject)
    (root / "pkg" / "__init__.py").write_text('"""demo."""\n__version__ = "0.1.0"\n')
    (root / "pkg" / "_meta.py").write_text("VERSION = '0.1.0'\nOTHER = '9.9.9'\n")
    return root


@pytest.fixture
def cfg(tmp_path: Path):
    return config.load(make_project(tmp_path), env={})


def snapshot(root: Path) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in ("pyproject.toml", "pkg/__init__.py", "pkg/_meta.py")}


def test_second_run_refused_while_locked(cfg) -> None:
    before = snapshot(cfg.project_dir)
    holder = subprocess.Popen(  # another process holds the project lock
        [sys.executable, "-c", "import sys; from kestrel_release import fsutil\n"
         "with fsutil.project_lock(sys.argv[1], 'release'):\n print('held', flush=True); sys.stdin.read()",
         str(cfg.project_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(UsageError, match="another kestrel-release release is running on .* \\(pid [0-9]+\\)"):
            version.change(cfg, "bump", "patch")
    finally:
        holder.communicate("")
    assert snapshot(cfg.project_dir) == before
