"""Real package shapes through the CLI: a setuptools abi3 C extension with no [project] table
(examples/c-ext-stub, linked against libtorch/libc10/libcudart stand-ins), version_files,
VCS versions, and a glibc floor the wheel cannot meet.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT, assert_one_line_error, need_pythons, run_cli

EXAMPLE = ROOT / "examples" / "c-ext-stub"
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
_SKIP = shutil.ignore_patterns("build", "dist", "dist-all", "*.egg-info", "__pycache__", ".kestrel-*")


@pytest.fixture
def stub_project(tmp_path: Path) -> Path:
    if not EXAMPLE.is_dir():
        pytest.skip("examples/c-ext-stub is missing")
    return Path(shutil.copytree(EXAMPLE, tmp_path / "c-ext-stub", ignore=_SKIP))


def _without_abi_key(project: Path) -> None:
    """Leave `abi` at its default (auto): abi3 must then be recognised from the project itself."""
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(re.sub(r"(?m)^abi = .*\n", "", text))


def _local_index(root: Path, wheel: Path) -> str:
    """A PEP 503 index on disk holding one wheel (the smoke test installs from it alone)."""
    pkg = root / "c-ext-stub"
    pkg.mkdir(parents=True)
    shutil.copy2(wheel, pkg / wheel.name)
    (pkg / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    (root / "index.html").write_text('<a href="c-ext-stub/">c-ext-stub</a>\n')
    return root.as_uri() + "/"


@pytest.mark.slow
def test_setuptools_abi3_project_builds_once_verifies_and_installs_on_every_python(
    stub_project: Path, tmp_path: Path
) -> None:
    need_pythons(*PYTHONS)  # one build and an install on each
    _without_abi_key(stub_project)
    built = run_cli(["build", "--project", str(stub_project), "--no-gpu-check"], timeout=1200)
    assert built.code == 0, built.output
    wheels = sorted((stub_project / "dist-all").glob("*.whl"))
    assert [w.name.split("-")[:4] for w in wheels] == [["c_ext_stub", "0.1.0", "cp310", "abi3"]], wheels
    assert re.search(r"manylinux_2_\d+_x86_64\.whl$", wheels[0].name)
    assert "installs on" in built.output
    members = zipfile.ZipFile(wheels[0]).namelist()
    assert not [m for m in members if re.match(r"lib(torch|c10|cudart)", m.rsplit("/", 1)[-1])], members
    manifest = json.loads((stub_project / "dist-all" / "release-manifest.json").read_text())
    assert manifest["package"] == "c-ext-stub" and manifest["version"] == "0.1.0"
    assert len(manifest["wheels"]) == 1 and manifest["wheels"][0]["glibc_floor"]

    verified = run_cli(["verify", "--project", str(stub_project), "--json"])
    assert verified.code == 0, verified.output
    report = json.loads(verified.stdout)
    assert report["ok"] and not report["findings"]
    needed = report["wheels"][0]["native"]["needed"]
    assert needed == {"c_ext_stub/_native.abi3.so": ["libtorch.so", "libc10.so", "libcudart.so.13"]}

    # The one wheel installs and imports on every configured Python.
    from kestrel_release.config_loader import load as config
    from kestrel_release.targets.pypi import publish as publish_index

    cfg = config.load(stub_project)
    rows = publish_index.smoke_test(cfg, _local_index(tmp_path / "index", wheels[0]), "0.1.0", PYTHONS)
    assert [(r["python"], r["ok"]) for r in rows] == [(py, True) for py in PYTHONS], rows


def test_version_reads_and_bumps_through_version_files(stub_project: Path, tmp_path: Path) -> None:
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}  # a first run: nothing cached
    pyproject = (stub_project / "pyproject.toml").read_bytes()
    setup_py = (stub_project / "setup.py").read_bytes()
    shown = run_cli(["version", "--project", str(stub_project), "--json"], env=env)
    assert shown.code == 0, shown.output
    assert json.loads(shown.stdout)["new"] == "0.1.0"
    bumped = run_cli(["version", "--project", str(stub_project), "bump", "minor", "--json"], env=env)
    assert bumped.code == 0, bumped.output
    assert json.loads(bumped.stdout)["files"] == ["c_ext_stub/__init__.py"]
    assert '__version__ = "0.2.0"' in (stub_project / "c_ext_stub" / "__init__.py").read_text()
    assert (stub_project / "pyproject.toml").read_bytes() == pyproject
    assert (stub_project / "setup.py").read_bytes() == setup_py
    again = run_cli(["version", "--project", str(stub_project), "--json"], env=env)
    assert again.code == 0 and json.loads(again.stdout)["new"] == "0.2.0", again.output
    assert not list(stub_project.glob("*.egg-info")), "the metadata query left files in the project"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True, capture_output=True
    )


def test_a_setuptools_scm_version_is_refused_with_the_tag_command(tmp_path: Path) -> None:
    project = tmp_path / "scm"
    project.mkdir()
    text = (
        '[build-system]\nrequires = ["setuptools>=64", "setuptools-scm>=8"]\n'
        'build-backend = "setuptools.build_meta"\n\n[project]\nname = "demo"\ndynamic = ["version"]\n\n'
        '[tool.setuptools_scm]\n\n[tool.kestrel-release]\npython = ["3.11"]\n'
    )
    (project / "pyproject.toml").write_text(text)
    _git(project, "init", "-q")
    _git(project, "add", "pyproject.toml")
    _git(project, "commit", "-qm", "init")
    _git(project, "tag", "-a", "v0.3.1", "-m", "demo 0.3.1")
    result = run_cli(["version", "--project", str(project), "bump", "minor"])
    assert_one_line_error(result, 2, "setuptools-scm", 'git tag -a v0.4.0 -m "demo 0.4.0" && git push origin v0.4.0')
    release = run_cli(["release", "--project", str(project), "--bump", "patch", "--yes"])
    assert_one_line_error(release, 2, 'git tag -a v0.3.2 -m "demo 0.3.2" && git push origin v0.3.2')
    assert (project / "pyproject.toml").read_text() == text


DL_SETUP = """from setuptools import Extension, setup

setup(name="dl-user", version="0.1.0", packages=["dl_user"],
      ext_modules=[Extension("dl_user._dl", ["dl_user/_dl.c"])])
"""
# Without -ldl, glibc >= 2.34 binds dlopen to GLIBC_2.34 (it moved into libc.so.6).
DL_SOURCE = "#include <dlfcn.h>\nvoid *open_it(const char *path) { return dlopen(path, RTLD_NOW); }\n"


@pytest.mark.slow
def test_a_min_glibc_the_wheel_cannot_meet_is_exit_4_naming_the_symbols(tmp_path: Path) -> None:
    from kestrel_release.adapters import toolchain

    have = toolchain.glibc_version()
    if not have or tuple(int(p) for p in have.split(".")) < (2, 34):
        pytest.skip("needs a glibc >= 2.34 host (dlopen@GLIBC_2.34)")
    project = tmp_path / "dl-user"
    (project / "dl_user").mkdir(parents=True)
    (project / "dl_user" / "__init__.py").write_text("")
    (project / "dl_user" / "_dl.c").write_text(DL_SOURCE)
    (project / "setup.py").write_text(DL_SETUP)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[tool.kestrel-release]\npython = ["3.11"]\n\n[tool.kestrel-release.build]\nmin_glibc = "2.28"\n\n'
        "[tool.kestrel-release.verify]\nrequired_sass = []\n"
    )
    failed = run_cli(["build", "--project", str(project), "--no-gpu-check"], timeout=1200)
    assert_one_line_error(failed, 4, "dlopen@GLIBC_2.34", "min_glibc = 2.28", "manylinux")
    assert not (project / "dist-all").exists()
    # An explicit plat below the wheel's floor: auditwheel refuses, the tool says why.
    plat = run_cli(
        ["build", "--project", str(project), "--no-gpu-check"],
        timeout=1200,
        env={"KESTREL_RELEASE_BUILD_MIN_GLIBC": "", "KESTREL_RELEASE_BUILD_PLAT": "manylinux_2_28_x86_64"},
    )
    assert_one_line_error(plat, 4, "dlopen@GLIBC_2.34", "build.plat = manylinux_2_28_x86_64")
    assert not (project / "dist-all").exists()
    # The floor the wheel can have is reported, with who can install it.
    ok = run_cli(
        ["build", "--project", str(project), "--no-gpu-check"],
        timeout=1200,
        env={"KESTREL_RELEASE_BUILD_MIN_GLIBC": "2.34"},
    )
    assert ok.code == 0, ok.output
    assert "glibc >= 2.34: installs on RHEL 9" in ok.output and "not on RHEL/Rocky 8" in ok.output
    assert [w.name for w in (project / "dist-all").glob("*.whl")] == [
        "dl_user-0.1.0-cp311-cp311-manylinux_2_34_x86_64.whl"
    ]


def test_a_backend_that_fails_is_one_line_exit_4_with_its_last_words(tmp_path: Path) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[tool.kestrel-release]\npython = ["3.11"]\n'
    )
    (project / "setup.py").write_text('raise RuntimeError("CUDA_HOME is not set")\n')
    for args in (["version"], ["build", "--no-gpu-check"]):
        result = run_cli([*args, "--project", str(project)])
        assert_one_line_error(result, 4, "could not report broken's metadata", "RuntimeError: CUDA_HOME is not set")
    as_json = run_cli(["version", "--project", str(project), "--json"])
    assert as_json.code == 4 and json.loads(as_json.stdout)["error"]["exit_code"] == 4


def test_the_backend_never_sees_publish_credentials(tmp_path: Path) -> None:
    project = tmp_path / "spy"
    project.mkdir()
    seen = tmp_path / "seen-env.txt"
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[tool.kestrel-release]\npython = ["3.11"]\n'
    )
    # setup.py is third-party code: it records the environment it was given.
    (project / "setup.py").write_text(
        "import os, pathlib\n"
        f"pathlib.Path({str(seen)!r}).write_text('\\n'.join(f'{{k}}={{v}}' for k, v in os.environ.items()))\n"
        "from setuptools import setup\nsetup(name='spy', version='1.0')\n"
    )
    token = "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACKlszLCJ4In0AAAYg" + "A" * 40
    result = run_cli(
        ["version", "--project", str(project), "--json"], env={"TWINE_PASSWORD": token, "GH_TOKEN": "ghp_" + "a" * 36}
    )
    assert result.code == 0, result.output
    assert json.loads(result.stdout)["new"] == "1.0"
    env_text = seen.read_text()
    assert "PATH=" in env_text  # the spy ran
    assert token not in env_text and "ghp_" not in env_text and "TWINE_PASSWORD" not in env_text


@pytest.mark.slow
def test_abi3_is_recognised_from_the_first_wheels_tag(stub_project: Path, tmp_path: Path) -> None:
    need_pythons(*PYTHONS)  # one build and an install on each
    """No static hint (the limited-API tag is computed in setup.py): the wheel's tag decides."""
    _without_abi_key(stub_project)
    cfg = stub_project / "setup.cfg"
    cfg.write_text(re.sub(r"(?ms)^\[bdist_wheel\].*?(?=^\[|\Z)", "", cfg.read_text()))
    setup = stub_project / "setup.py"
    text = setup.read_text().replace(
        "setup(\n", 'LIMITED = "cp" + "310"\n\nsetup(\n    options={"bdist_wheel": {"py_limited_api": LIMITED}},\n', 1
    )
    setup.write_text(text)
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    first = run_cli(["build", "--project", str(stub_project), "--no-gpu-check", "--json"], env=env, timeout=1200)
    assert first.code == 0, first.output
    data = json.loads(first.stdout)
    assert [w["filename"].split("-")[2:4] for w in data["wheels"]] == [["cp310", "abi3"]]
    assert [s["name"] for s in data["steps"] if s["name"].startswith("python")] == [f"python {p}" for p in PYTHONS]
    again = run_cli(["build", "--project", str(stub_project), "--no-gpu-check", "--json"], env=env, timeout=1200)
    assert again.code == 0, again.output
    steps = [s["name"] for s in json.loads(again.stdout)["steps"] if s["name"].startswith("python")]
    assert steps == ["python 3.10"]  # built once, with the oldest configured Python
    verified = run_cli(["verify", "--project", str(stub_project)], env=env)
    assert verified.code == 0, verified.output
