"""A tiny C-extension project with a [tool.kestrel-release] table: builds in seconds, no CUDA."""

from __future__ import annotations

from pathlib import Path

PYPROJECT = """[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "mini-ext"
version = "{version}"

[tool.kestrel-release]
python = {pythons}
out_dir = "dist-all"
version_files = [{{path = "src/mini_ext/__init__.py", pattern = "__version__ = \\"{{version}}\\""}}]

[tool.kestrel-release.verify]
required_sass = []
"""
SETUP = """from setuptools import Extension, setup

setup(packages=["mini_ext"], package_dir={"": "src"},
      ext_modules=[Extension("mini_ext._c", ["src/c.c"])])
"""
C_SOURCE = """#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }
"""


def make(root: Path, version: str = "0.1.0", pythons: tuple[str, ...] = ("3.12",)) -> Path:
    """Write the project at `root`; returns `root`."""
    (root / "src" / "mini_ext").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(version=version, pythons=list(pythons)).replace("'", '"'))
    (root / "setup.py").write_text(SETUP)
    (root / "src" / "c.c").write_text(C_SOURCE)
    (root / "src" / "mini_ext" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    return root
