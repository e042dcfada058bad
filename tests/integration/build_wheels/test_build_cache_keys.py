"""The wheel cache serves a wheel only when every input of the build is unchanged, toolchain included.

Before: the key covered the sources, the interpreter and build settings only. A rebuild with
`CXX=/usr/bin/g++` (the fix verify's cxx-runtime error advises) returned the cached wheel in 5 s
with the same defect; `CXXFLAGS=-O0` built a wheel that the next plain build served; with isolation
off, an upgraded build requirement was served the old wheel; `--check-reproducible`'s first pass read
the cache, and there was no way to rebuild from scratch (`--no-cache`) or to see why an entry was used.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import run_cli

pytestmark = pytest.mark.slow
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
# The compiled module carries MINI_TAG, so the wheel's bytes say which compiler and flags built it.
TAGGED_SOURCE = factories.C_EXT_SOURCE + (
    '#ifndef MINI_TAG\n#define MINI_TAG "plain"\n#endif\n'
    '__attribute__((used)) static const char mini_tag[] = "mini-tag:" MINI_TAG ";";\n'
)


def _project(tmp_path: Path) -> Path:
    project = factories.make_c_ext_project(tmp_path / "p", pythons=(PY,))
    (project / "src" / "c.c").write_text(TAGGED_SOURCE)
    # setuptools recompiles every time (its in-tree build/ would otherwise hide what the cache does).
    (project / "setup.cfg").write_text("[build_ext]\nforce = 1\n")
    return project


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1700000000", **extra}


def _build(project: Path, env: dict[str, str], *flags: str):
    result = run_cli(
        ["build", "--project", str(project), "--no-gpu-check", "--json", "-v", *flags], env=env, timeout=600
    )
    assert result.code == 0, result.output
    return json.loads(result.stdout), result.stderr


def _tag(project: Path) -> str:
    (wheel,) = (project / "dist-all").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        data = b"".join(zf.read(n) for n in zf.namelist() if n.endswith(".so"))
    return data.split(b"mini-tag:", 1)[1].split(b";", 1)[0].decode()


def _cached(data: dict) -> bool:
    return any("cached" in (s.get("detail") or "") for s in data["steps"] if s["name"].startswith("python"))


def _why(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(f"wheel cache, Python {PY}:")]
    assert len(lines) == 1, stderr
    return lines[0]


def _wrapper(tmp_path: Path, tag: str) -> Path:
    """A CC that is the system compiler with one more define: another toolchain, another output."""
    path = tmp_path / "bin" / f"cc-{tag}"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec cc -DMINI_TAG=\'"{tag}"\' "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_compiler_or_flag_change_is_never_served_from_the_cache(tmp_path: Path) -> None:
    project = _project(tmp_path)
    data, _ = _build(project, _env(tmp_path))
    assert _tag(project) == "plain" and not _cached(data)

    data, why = _build(project, _env(tmp_path, CC=str(_wrapper(tmp_path, "wrapped"))))
    assert _tag(project) == "wrapped" and not _cached(data)
    assert "changed since the last build" in _why(why) and "env CC: unset ->" in _why(why), why
    assert "compiler CC:" in _why(why)

    data, why = _build(project, _env(tmp_path, CFLAGS='-DMINI_TAG=\\"flags\\"'))
    assert _tag(project) == "flags" and not _cached(data)
    assert "env CFLAGS: unset -> " in _why(why) and "env CC: " in _why(why)

    data, why = _build(project, _env(tmp_path))  # back to the plain toolchain: its own entry, not the last one
    assert _tag(project) == "plain" and _cached(data)
    assert "used entry" in _why(why) and "env CFLAGS" in _why(why)


def test_no_cache_rebuilds_everything_and_refreshes_the_entry(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _build(project, _env(tmp_path))
    data, why = _build(project, _env(tmp_path), "--no-cache")
    assert not _cached(data)
    assert "not read (--no-cache)" in _why(why)
    data, why = _build(project, _env(tmp_path))
    assert _cached(data) and "used entry" in _why(why)


def test_check_reproducible_never_reads_the_cache(tmp_path: Path) -> None:
    project = _project(tmp_path)
    _build(project, _env(tmp_path))
    # A bad entry (whatever made it): if the first pass read it, the two passes would differ.
    (entry,) = (tmp_path / "cache" / "wheels").glob("*/*.whl")
    with zipfile.ZipFile(entry, "a") as zf:
        zf.writestr("mini_ext/poison.txt", "from the cache")
    data, why = _build(project, _env(tmp_path), "--check-reproducible")
    assert data["reproducible"] is True and not _cached(data)
    assert "not read (--check-reproducible)" in why
    (wheel,) = (project / "dist-all").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert "mini_ext/poison.txt" not in zf.namelist()


@pytest.fixture(scope="module")
def build_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with setuptools (70.1 builds wheels without `wheel`; from uv's cache, offline): the interpreter of a --no-isolation build."""
    uv = Path(sys.executable).parent / "uv"
    venv = tmp_path_factory.mktemp("build-python") / "venv"
    offline = {**os.environ, "UV_OFFLINE": "1"}
    made = subprocess.run([str(uv), "venv", "-q", "-p", sys.executable, str(venv)], capture_output=True)
    ok = (
        made.returncode == 0
        and subprocess.run(
            [str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "setuptools>=70.1"],
            capture_output=True,
            env=offline,
        ).returncode
        == 0
    )
    if not ok:
        pytest.skip("setuptools>=70.1 is not in uv's cache (this test never reaches an index)")
    return venv


def _helper_dist(venv: Path, version: str) -> None:
    """`mini-build-helper` (a build requirement of the project) installed at `version` in the venv."""
    (site,) = venv.glob("lib/python*/site-packages")
    for old in site.glob("mini_build_helper-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = site / f"mini_build_helper-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mini-build-helper\nVersion: {version}\n")


def test_without_isolation_an_upgraded_build_requirement_is_rebuilt(tmp_path: Path, build_python: Path) -> None:
    project = _project(tmp_path)
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            'requires = ["setuptools>=68"]', 'requires = ["setuptools>=68", "mini-build-helper"]'
        )
    )
    env = _env(tmp_path, PATH=f"{build_python / 'bin'}{os.pathsep}{os.environ['PATH']}", UV_OFFLINE="1")
    _helper_dist(build_python, "1.0")
    data, _ = _build(project, env, "--no-isolation")
    data, why = _build(project, env, "--no-isolation")
    assert _cached(data)
    _helper_dist(build_python, "2.0")  # `pip install -U mini-build-helper` in the build's environment
    data, why = _build(project, env, "--no-isolation")
    assert not _cached(data)
    assert "requirement mini-build-helper: 1.0 -> 2.0" in _why(why)
