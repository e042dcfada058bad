"""`kestrel-release init` as a user runs it: files on disk, exit codes, the one error line, JSON."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kestrel_release._compat import tomllib
from tests.helpers import KERNELS, ROOT, assert_one_line_error, run_in_process
from tests.schemas import fits

EXAMPLES = ROOT / "examples"
PYS = "3.10,3.11,3.12,3.13"
# Lock and logs live in the tool's state dir; a killed run's staging dir and version journal do not.
WORKING_FILES = ["/dist-all/", "/dist-all.rehearsal/", "/.kestrel-staging-*/", "/.kestrel-version.json"]
SETUPTOOLS_OUTPUTS = ["/build/", "*.egg-info/"]  # setuptools builds in-tree: init ignores its outputs
MARK = b"\n[tool.kestrel-release]\n"


def example_before_init(name: str, dest: Path) -> tuple[Path, bytes]:
    """A copy of an example as it was before init: its pyproject.toml without the table."""
    shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    committed = (EXAMPLES / name / "pyproject.toml").read_bytes()
    assert MARK in committed, "the example's committed pyproject.toml carries the table init wrote"
    (dest / "pyproject.toml").write_bytes(committed[: committed.index(MARK)])
    return dest, committed


def table(project: Path) -> dict:
    return tomllib.loads((project / "pyproject.toml").read_text())["tool"]["kestrel-release"]


def ignore_lines(project: Path) -> list[str]:
    return (project / ".gitignore").read_text().splitlines()


@pytest.mark.parametrize("name", ["torch-cuda-ext", "c-ext-stub"])
def test_init_on_an_example_writes_the_committed_table(tmp_path, name):
    project, committed = example_before_init(name, tmp_path / name)
    before = (project / "pyproject.toml").read_bytes()
    result = run_in_process(["init", "--project", str(project), "--yes", "--python", PYS])
    assert result.code == 0, result.output
    after = (project / "pyproject.toml").read_bytes()
    assert after.startswith(before)  # nothing before the table changed, byte for byte
    assert after == committed  # the examples' tables are what init writes
    assert ignore_lines(project) == ["# kestrel-release working files", *WORKING_FILES, *SETUPTOOLS_OUTPUTS]
    assert f"wrote pyproject.toml, .gitignore in {project}" in result.stderr
    # no github.com origin here: the printed rehearsal leaves the GitHub target out, so it runs as printed
    assert f"next: kestrel-release release --rehearse --project {project} --targets testpypi,pypi" in result.stderr


def test_torch_example_choices(tmp_path):
    project, _ = example_before_init("torch-cuda-ext", tmp_path / "t")
    assert run_in_process(["init", "--project", str(project), "--yes", "--python", PYS]).code == 0
    t = table(project)
    assert t["abi"] == "abi3" and t["cuda_arch"] == "90a" and t["python"] == PYS.split(",")
    assert t["version_files"] == [{"path": "torch_cuda_ext/version.py", "pattern": '__version__ = "{version}"'}]
    assert t["build"] == {"env": {"TORCH_CUDA_ARCH_LIST": "9.0a"}}
    assert t["verify"]["required_sass"] == ["sm_90a"] and "/tests/**" in t["verify"]["forbid"]
    assert "exclude" not in t.get("build", {})  # the defaults already cover libtorch*, libc10*, libcudart*


def test_c_ext_stub_ships_its_tests_on_purpose(tmp_path):
    project, _ = example_before_init("c-ext-stub", tmp_path / "c")
    result = run_in_process(["init", "--project", str(project), "--yes", "--python", PYS])
    assert result.code == 0, result.output
    verify = table(project)["verify"]
    assert "/tests/**" not in verify["forbid"] and "tests/**" not in verify["forbid"] and "*.c" in verify["forbid"]
    assert verify["allow"] == ["c_ext_stub/**", "c_ext_stub.libs/*"] and verify["required_sass"] == []
    assert "c_ext_stub/tests ships on purpose" in result.stderr
    assert "targets" not in table(project)  # not a git checkout: no repository to name
    assert "no github.com remote 'origin'" in result.stderr


def test_second_run_changes_nothing_and_says_so(tmp_path):
    project, _ = example_before_init("c-ext-stub", tmp_path / "c")
    assert run_in_process(["init", "--project", str(project), "--yes", "--python", PYS]).code == 0
    files = {p: (project / p).read_bytes() for p in ("pyproject.toml", ".gitignore")}
    mtimes = {p: (project / p).stat().st_mtime_ns for p in files}
    time.sleep(0.01)
    again = run_in_process(["init", "--project", str(project)], input="")  # no --yes, no TTY: nothing to ask
    assert again.code == 0, again.output
    assert "nothing to change" in again.stderr
    assert {p: (project / p).read_bytes() for p in files} == files
    assert {p: (project / p).stat().st_mtime_ns for p in files} == mtimes


def test_bundled_kernels_are_already_set_up():
    # No --yes and no terminal: were init to want any change, it would refuse (exit 2) instead.
    files = {name: (KERNELS / name).read_bytes() for name in ("pyproject.toml", ".gitignore")}
    result = run_in_process(["init", "--project", str(KERNELS)], input="")
    assert result.code == 0, result.output
    assert "nothing to change" in result.stderr
    # git already ignores the working files (kernels/.gitignore and the repository's own).
    assert {name: (KERNELS / name).read_bytes() for name in files} == files


def test_configured_project_outside_git_only_gets_ignore_lines(tmp_path):
    project = tmp_path / "kernels"
    project.mkdir()
    shutil.copy(KERNELS / "pyproject.toml", project / "pyproject.toml")
    (project / ".gitignore").write_text("dist-all/\n*.so")  # no final newline; one line present unanchored
    before = (project / "pyproject.toml").read_bytes()
    result = run_in_process(["init", "--project", str(project), "--yes"])
    assert result.code == 0, result.output
    assert (project / "pyproject.toml").read_bytes() == before
    assert ignore_lines(project) == ["dist-all/", "*.so", "# kestrel-release working files", *WORKING_FILES[1:]]


HATCH = """\
# A pure package, configured by hand before kestrel-release.
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "pure-pkg"
version = "0.4.0"   # bumped by hand so far
requires-python = ">=3.11"

[tool.ruff]
line-length = 100"""  # no final newline


def test_hatchling_pure_project(tmp_path):
    project = tmp_path / "pure"
    (project / "src" / "pure_pkg").mkdir(parents=True)
    (project / "src" / "pure_pkg" / "__init__.py").write_text('__version__ = "0.4.0"\n')
    (project / "pyproject.toml").write_text(HATCH)
    result = run_in_process(["init", "--project", str(project), "--yes", "--json"])
    assert result.code == 0, result.output
    doc = fits("init", result.stdout)  # one JSON document on stdout
    text = (project / "pyproject.toml").read_text()
    assert text.startswith(HATCH + "\n\n[tool.kestrel-release]\n")
    t = table(project)
    assert doc["ok"] and doc["changed"] and doc["table"] == t and doc["detected"]["backend"] == "hatchling"
    assert t["abi"] == "py3" and t["verify"]["allow"] == ["pure_pkg/**"] and "cuda_arch" not in t
    assert t["version_files"] == [{"path": "src/pure_pkg/__init__.py", "pattern": '__version__ = "{version}"'}]
    # Pythons found on this machine, never below requires-python.
    assert t["python"] and all(v >= "3.11" for v in t["python"]) and "3.10" not in t["python"]
    # The table drives the other commands: `version` reads it and the version file agrees.
    shown = run_in_process(["version", "--project", str(project), "--json"])
    assert shown.code == 0, shown.output
    assert fits("version", shown.stdout)["new"] == "0.4.0"
    bump = run_in_process(["version", "bump", "patch", "--project", str(project)])
    assert bump.code == 0, bump.output
    assert (project / "src" / "pure_pkg" / "__init__.py").read_text() == '__version__ = "0.4.1"\n'


SKB = """\
[build-system]\r
requires = ["scikit-build-core>=0.10"]\r
build-backend = "scikit_build_core.build"\r
\r
[project]\r
name = "skb-kernels"\r
version = "1.0.0"\r
\r
[tool.scikit-build]\r
wheel.py-api = "cp311"\r
"""


def test_scikit_build_core_cuda_project_keeps_crlf(tmp_path):
    project = tmp_path / "skb"
    (project / "python" / "skb_kernels").mkdir(parents=True)
    (project / "python" / "skb_kernels" / "__init__.py").write_text("")
    (project / "csrc").mkdir()
    (project / "csrc" / "k.cu").write_text("__global__ void k() {}\n")
    (project / "CMakeLists.txt").write_text("project(skb LANGUAGES C CUDA)\n")
    (project / "pyproject.toml").write_bytes(SKB.encode())
    result = run_in_process(["init", "--project", str(project), "--yes", "--python", "3.11,3.12"])
    assert result.code == 0, result.output
    data = (project / "pyproject.toml").read_bytes()
    assert data.startswith(SKB.encode()) and b"\n" not in data.replace(b"\r\n", b"")
    t = table(project)
    assert t["abi"] == "abi3" and t["build"]["env"] == {"CUDAARCHS": "90a"} and t["python"] == ["3.11", "3.12"]
    assert "csrc/**" in t["verify"]["forbid"] and "*.cu" in t["verify"]["forbid"]
    assert "version_files" not in t  # the version lives in [project] only


def test_git_ignored_files_are_not_added_again(tmp_path):
    project = tmp_path / "repo"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(HATCH + "\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(
        ["git", "-C", str(project), "remote", "add", "origin", "git@github.com:acme/pure-pkg.git"], check=True
    )
    (project / ".gitignore").write_text("dist-all*\n")  # covers the output and the rehearsal dir
    result = run_in_process(["init", "--project", str(project), "--yes", "--python", "3.12"])
    assert result.code == 0, result.output
    # git already ignores both output dirs: only what it does not ignore yet is appended.
    assert ignore_lines(project) == ["dist-all*", "# kestrel-release working files", *WORKING_FILES[2:]]
    # A leftover staging dir and journal (a killed run's) are now ignored by git; a second run adds nothing.
    (project / ".kestrel-staging-4242-abc").mkdir()
    (project / ".kestrel-staging-4242-abc" / "pure_pkg-0.4.0-py3-none-any.whl").write_bytes(b"PK")
    (project / ".kestrel-version.json").write_text("{}\n")
    status = subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".kestrel" not in status and "pyproject.toml" in status
    before = (project / ".gitignore").read_bytes()
    assert run_in_process(["init", "--project", str(project), "--yes"]).code == 0
    assert (project / ".gitignore").read_bytes() == before
    assert table(project)["targets"] == {"github": {"repo": "acme/pure-pkg"}}  # releases go to the user's repo
    assert "no github.com remote" not in result.stderr


def test_refuses_without_a_terminal_and_changes_nothing(tmp_path):
    project, _ = example_before_init("torch-cuda-ext", tmp_path / "t")
    before = (project / "pyproject.toml").read_bytes()
    result = run_in_process(["init", "--project", str(project), "--python", PYS], input="")
    assert_one_line_error(result, 2, "stdin is not a terminal", "--yes")
    assert "[tool.kestrel-release]" in result.stderr  # the table it would write is shown
    assert (project / "pyproject.toml").read_bytes() == before and not (project / ".gitignore").exists()
    as_json = run_in_process(["init", "--project", str(project), "--python", PYS, "--json"], input="")
    assert as_json.code == 2
    error = fits("failure", as_json.stdout)["error"]
    assert json.loads(as_json.stdout)["ok"] is False and error["exit_code"] == 2 and error["kind"] == "usage"
    assert as_json.stderr.split("error: ", 1)[1].strip() == f"{error['message']} — {error['hint']}"


def run_on_tty(args: list[str], answer: str) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin, typing `answer` at the prompt."""
    primary, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "dumb"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", *args],
        cwd=ROOT,
        env=env,
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(secondary)
    os.write(primary, answer.encode() + b"\n")
    _out, err = proc.communicate(timeout=120)
    os.close(primary)
    return proc.returncode, err.decode()


@pytest.mark.parametrize(("answer", "code"), [("n", 2), ("y", 0)])
def test_asks_on_a_terminal(tmp_path, answer, code):
    project, committed = example_before_init("torch-cuda-ext", tmp_path / "t")
    before = (project / "pyproject.toml").read_bytes()
    rc, err = run_on_tty(["init", "--project", str(project), "--python", PYS], answer)
    assert rc == code, err
    assert "Write these changes to pyproject.toml, .gitignore?" in err
    if answer == "n":
        assert "error: init cancelled" in err and (project / "pyproject.toml").read_bytes() == before
    else:
        assert (project / "pyproject.toml").read_bytes() == committed


@pytest.mark.parametrize(
    ("setup", "needle"),
    [
        (lambda p: None, "no pyproject.toml or setup.py in"),
        (lambda p: (p / "pyproject.toml").write_text("[project\nname = 1\n"), "not valid TOML"),
    ],
)
def test_bad_project_is_one_error_line(tmp_path, setup, needle):
    setup(tmp_path)
    result = run_in_process(["init", "--project", str(tmp_path), "--yes"])
    assert_one_line_error(result, 2, needle)


def test_setup_py_only_project_gets_a_pyproject_with_just_the_table(tmp_path):
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='legacy', version='2.1')\n")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "__init__.py").write_text("")
    result = run_in_process(["init", "--project", str(tmp_path), "--yes", "--python", "3.12"])
    assert result.code == 0, result.output
    data = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert list(data) == ["tool"] and list(data["tool"]) == ["kestrel-release"]
    assert data["tool"]["kestrel-release"]["version_files"] == [{"path": "setup.py", "pattern": "version='{version}'"}]


def test_bad_python_flag_is_one_error_line(tmp_path):
    project, _ = example_before_init("c-ext-stub", tmp_path / "c")
    result = run_in_process(["init", "--project", str(project), "--yes", "--python", "3.12,python3.13"])
    assert_one_line_error(result, 2, "--python: python3.13 is not a CPython version")
    assert not (project / ".gitignore").exists()


# PyWavelets 1.9.0's shape (meson-python): the version in [project], meson.build and util/version_utils.py,
# whose MAJOR/MINOR/MICRO upstream left at 1.8.0 (pywt.__version__ is generated from it at build time).
PYWAVELETS = {
    "pyproject.toml": '[build-system]\nbuild-backend = "mesonpy"\nrequires = ["meson-python>=0.18.0", "Cython>=3.0.4"]\n'
    '[project]\nname = "PyWavelets"\nversion = "1.9.0"\nrequires-python = ">=3.11"\n',
    "meson.build": "project(\n  'PyWavelets',\n  'c', 'cython',\n  version: '1.9.0',\n  license: 'MIT',\n)\n"
    "subdir('pywt')\n",
    "util/version_utils.py": "MAJOR = 1\nMINOR = 8\nMICRO = 0\nISRELEASED = True\n",
    "pywt/__init__.py": "from pywt.version import version as __version__\n",
    "pywt/meson.build": "subdir('_extensions')\n",
    "pywt/_extensions/meson.build": "py.extension_module('_pywt', '_pywt.pyx', install: true)\n",
    "pywt/_extensions/_pywt.pyx": "# cython\n",
}


def test_init_on_a_meson_python_package_finds_its_extension_and_every_version_place(tmp_path):
    for rel, text in PYWAVELETS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = run_in_process(["init", "--project", str(tmp_path), "--yes", "--python", "3.11,3.12"])
    assert result.code == 0, result.output
    assert table(tmp_path)["version_files"] == [
        {"path": "meson.build", "pattern": "version: '{version}'"},
        {"path": "util/version_utils.py", "pattern": "MAJOR = {major}\nMINOR = {minor}\nMICRO = {micro}"},
    ]
    assert "util/version_utils.py states 1.8.0, not 1.9.0" in result.stderr
    # the extension is declared in pywt/_extensions/meson.build: one wheel per Python, not one py3 wheel
    assert "abi" not in table(tmp_path)
    assert (
        "native code: pywt/_extensions/meson.build builds extension modules"
        in (tmp_path / "pyproject.toml").read_text()
    )

    shown = run_in_process(["version", "--project", str(tmp_path)])
    assert shown.code == 0 and shown.stdout == "1.9.0\n"
    warnings = [line for line in shown.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: versions disagree: util/version_utils.py has 1.8.0, pyproject.toml has 1.9.0"]

    refused = run_in_process(["version", "bump", "patch", "--project", str(tmp_path)])
    assert_one_line_error(refused, 2, "util/version_utils.py has 1.8.0")
    assert run_in_process(["version", "set", "1.9.0", "--force", "--project", str(tmp_path)]).code == 0  # as init said
    bumped = run_in_process(["version", "bump", "patch", "--project", str(tmp_path)])
    assert bumped.code == 0, bumped.output
    assert "1.9.0 -> 1.9.1 in pyproject.toml, meson.build, util/version_utils.py" in bumped.stderr
    assert (tmp_path / "util/version_utils.py").read_text() == "MAJOR = 1\nMINOR = 9\nMICRO = 1\nISRELEASED = True\n"
    assert "  version: '1.9.1',\n" in (tmp_path / "meson.build").read_text()
    assert run_in_process(["version", "--project", str(tmp_path)]).stderr.count("warning:") == 0


def test_init_on_an_in_tree_backend_over_setuptools(tmp_path):
    """PyYAML 6.0.3: build-backend _pyyaml_pep517 (backend-path packaging/) hands the build to setuptools,
    package_dir={'': 'lib'}; the version is in setup.py and lib/yaml/__init__.py."""
    files = {
        "pyproject.toml": '[build-system]\nrequires = ["setuptools", "Cython"]\nbackend-path = ["packaging"]\n'
        'build-backend = "_pyyaml_pep517"\n',
        "packaging/_pyyaml_pep517.py": "import setuptools.build_meta as _bm\n",
        "setup.py": "VERSION = '6.0.3'\nfrom setuptools import setup, Extension\n"
        "setup(name='PyYAML', version=VERSION, package_dir={'': 'lib'}, packages=['yaml'],\n"
        "      ext_modules=[Extension('yaml._yaml', ['yaml/_yaml.pyx'])])\n",
        "lib/yaml/__init__.py": "__version__ = '6.0.3'\n",
        "yaml/_yaml.pyx": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = run_in_process(["init", "--project", str(tmp_path), "--yes", "--python", "3.12"])
    assert result.code == 0, result.output
    assert table(tmp_path)["version_files"] == [
        {"path": "setup.py", "pattern": "VERSION = '{version}'"},
        {"path": "lib/yaml/__init__.py", "pattern": "__version__ = '{version}'"},
    ]
    assert table(tmp_path)["verify"]["allow"] == ["yaml/**", "pyyaml.libs/*"]
    assert ignore_lines(tmp_path) == ["# kestrel-release working files", *WORKING_FILES, *SETUPTOOLS_OUTPUTS]
