"""A setup.py project (no [project] table) on an offline host: its build requirements cannot be
installed, so the build backend can answer only without isolation. Commands that work on a build
output take the name and version from its manifest; doctor and verify name the installer's words
and the isolation hint when the backend must be asked and cannot answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import assert_one_line_error, run_cli

OFFLINE = {"UV_OFFLINE": "1", "PIP_NO_INDEX": "1"}  # nothing may touch the network
C_SOURCE = (
    '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};\n'
    "PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&m); }\n"
)


@pytest.fixture(scope="module")
def build_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CPython with setuptools and wheel installed (a --no-isolation build runs the backend in it)."""
    uv = Path(sys.executable).parent / "uv"
    venv = tmp_path_factory.mktemp("build-python") / "venv"
    vi = sys.version_info
    made = subprocess.run([str(uv), "venv", "-q", "-p", sys.executable, str(venv)], capture_output=True)
    ok = (
        made.returncode == 0
        and subprocess.run(
            [str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "setuptools>=70.1", "wheel"],
            capture_output=True,
            env={**os.environ, **OFFLINE},
        ).returncode
        == 0
    )
    if not ok:
        pytest.skip("setuptools/wheel are not in uv's cache (this test never reaches an index)")
    assert (venv / "bin" / f"python{vi.major}.{vi.minor}").exists()
    return venv / "bin"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "offline-demo"
    (root / "offline_demo").mkdir(parents=True)
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools", "nonexistent-pkg-kestrel==0"]\n'
        f'build-backend = "setuptools.build_meta"\n\n[tool.kestrel-release]\npython = ["{py}"]\n'
    )
    (root / "setup.py").write_text(
        "from setuptools import Extension, setup\n"
        "setup(name='offline-demo', version='1.2.3', packages=['offline_demo'],\n"
        "      ext_modules=[Extension('offline_demo._c', ['offline_demo/_c.c'])])\n"
    )
    (root / "offline_demo" / "__init__.py").write_text("")
    (root / "offline_demo" / "_c.c").write_text(C_SOURCE)
    return root


def _env(build_python: Path, cache: Path) -> dict[str, str]:
    return {
        **OFFLINE,
        "KESTREL_RELEASE_CACHE_DIR": str(cache),
        "PATH": f"{build_python}{os.pathsep}{os.environ['PATH']}",
    }


def _built(project: Path, build_python: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    result = run_cli(
        ["build", "--project", str(project), "--no-isolation", "--no-gpu-check", "--out", str(out)],
        env=_env(build_python, tmp_path / "build-cache"),
    )
    assert result.code == 0, result.output
    assert json.loads((out / "release-manifest.json").read_text())["version"] == "1.2.3"
    return out


@pytest.mark.slow
def test_verify_of_a_no_isolation_output_takes_the_manifest_and_never_asks_the_backend(
    project: Path, build_python: Path, tmp_path: Path
) -> None:
    out = _built(project, build_python, tmp_path)
    fresh = tmp_path / "fresh-cache"  # nothing cached: asking the backend (isolated) would fail offline
    for target in (out, *out.glob("*.whl")):
        result = run_cli(["verify", "--project", str(project), str(target)], env=_env(build_python, fresh))
        assert result.code == 0, result.output
        assert "pass verify" in result.output
    assert not (fresh / "metadata").exists()  # the backend was not asked


@pytest.mark.slow
def test_without_a_manifest_verify_reuses_the_no_isolation_answer_of_the_build(
    project: Path, build_python: Path, tmp_path: Path
) -> None:
    out = _built(project, build_python, tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    for wheel in out.glob("*.whl"):
        shutil.copy2(wheel, bare / wheel.name)
    result = run_cli(["verify", "--project", str(project), str(bare)], env=_env(build_python, tmp_path / "build-cache"))
    assert result.code == 0, result.output
    # Nothing cached: the isolation setting is honoured, and without isolation the backend answers offline.
    fresh = _env(build_python, tmp_path / "fresh-cache")
    refused = run_cli(["verify", "--project", str(project), str(bare)], env=fresh)
    assert_one_line_error(refused, 4, "nonexistent-pkg-kestrel")
    result = run_cli(
        ["verify", "--project", str(project), str(bare)], env={**fresh, "KESTREL_RELEASE_BUILD_ISOLATION": "false"}
    )
    assert result.code == 0, result.output


def test_without_a_manifest_verify_names_the_installers_words_and_the_isolation_hint(
    project: Path, build_python: Path, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    result = run_cli(["verify", "--project", str(project), str(bare)], env=_env(build_python, tmp_path / "cache"))
    assert_one_line_error(
        result,
        4,
        "could not report offline-demo's metadata",
        "nonexistent-pkg-kestrel",
        "build.isolation = false",
        "--no-isolation",
    )
    assert "no output" not in result.output and "fix the project" not in result.output


def test_doctor_reports_the_metadata_failure_as_one_check_in_its_table(
    project: Path, build_python: Path, tmp_path: Path
) -> None:
    env = _env(build_python, tmp_path / "cache")
    result = run_cli(["doctor", "--project", str(project)], env=env)
    assert result.code == 3, result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: doctor:"), result.stderr
    # Said before the wait for the backend's build requirements, which can take minutes (torch), not after.
    assert "project metadata: asking the build backend (installs setuptools, nonexistent-pkg-kestrel==0 the " in (
        result.stderr
    )
    assert result.stderr.index("project metadata") < result.stderr.index("error: doctor:")  # a row of the table
    assert "credentials: github" in result.stderr  # the rest of the report is there
    as_json = run_cli(["doctor", "--project", str(project), "--json"], env=env)
    assert as_json.code == 3
    check = next(c for c in json.loads(as_json.stdout)["checks"] if c["name"] == "project metadata")
    assert check["status"] == "fail" and "nonexistent-pkg-kestrel" in check["detail"], check
    assert "build.isolation = false" in check["fix"]
