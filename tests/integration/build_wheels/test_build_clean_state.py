"""Every build compiles from a clean state (issue 21): each Python builds from its own clean copy of the
sources, never from the user's tree with its leftover setuptools `build/` or egg-info, and the tree is
left as it was (git status unchanged, the user's own `build/` untouched).

The stale-build test is the bitarray report: the version lives in a C header, so setuptools' in-tree
`build/lib.*` (newer than the unchanged .c file) served the old compiled module under the new version's
wheel name, and a module moved out of the package kept shipping from `build/lib.*`.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests import factories
from tests.helpers import need_pythons, python_version, run_cli

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
HEADER_SOURCE = """#include <Python.h>
#include "version.h"
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__c(void) {
    PyObject *m = PyModule_Create(&mod);
    if (m) PyModule_AddStringConstant(m, "version", "mini-ext-version-" MINI_VERSION);
    return m;
}
"""


def _git(project: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=project, check=True, capture_output=True, text=True).stdout


def _status(project: Path) -> str:
    return _git(project, "status", "--porcelain", "--untracked-files=all")


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _set_version(project: Path, version: str) -> None:
    (project / "src" / "version.h").write_text(f'#define MINI_VERSION "{version}"\n')
    (project / "src" / "mini_ext" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    text = (project / "pyproject.toml").read_text()
    old = text.split('version = "', 1)[1].split('"', 1)[0]
    (project / "pyproject.toml").write_text(text.replace(f'version = "{old}"', f'version = "{version}"', 1))


def _header_project(root: Path, pythons: tuple[str, ...], git: bool) -> Path:
    """mini-ext whose compiled module reports the version from src/version.h (the .c file never changes)."""
    need_pythons(*pythons)  # the tests check each Python's compiled module by name
    project = factories.make_c_ext_project(root, pythons=pythons)
    (project / "src" / "c.c").write_text(HEADER_SOURCE)
    (project / "src" / "mini_ext" / "old.py").write_text("OLD = True\n")
    _set_version(project, "0.1.0")
    if git:
        # Only the tool's own output is ignored: the user's build/ and egg-info show in git status.
        (project / ".gitignore").write_text("/dist-all/\n")
        _git(project, "init", "-q")
        _git(project, "add", "-A")
        _git(project, "commit", "-qm", "mini-ext 0.1.0")
    return project


def _build(project: Path, version: str = "0.1.0", cache: Path | None = None) -> list[Path]:
    # A cache of this test's own: a wheel cached by an earlier run (of other code) must not answer.
    env = {"KESTREL_RELEASE_CACHE_DIR": str(cache or project.parent / "cache")}
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=env, timeout=900)
    assert result.code == 0, result.output
    return sorted((project / "dist-all").glob(f"*-{version}-*.whl"))


@pytest.mark.slow
@pytest.mark.parametrize("vcs", ["git", "no-git"])
def test_a_stale_in_tree_build_never_reaches_the_wheel(tmp_path, vcs):
    project = _header_project(tmp_path / "p", ("3.12",), git=vcs == "git")
    (first,) = _build(project)
    # The user's in-tree state as setuptools leaves it (`python setup.py build`, `pip install -e .`, or
    # an older kestrel-release): build/lib.* holds the 0.1.0 package, the compiled module included.
    lib = project / "build" / f"lib.{sysconfig.get_platform()}-cpython-312"
    with zipfile.ZipFile(first) as zf:
        zf.extractall(lib, [n for n in zf.namelist() if n.startswith("mini_ext/")])
    assert (lib / "mini_ext" / "old.py").is_file()

    _set_version(project, "0.1.1")  # the header changes; c.c does not
    (project / "src" / "mini_ext" / "old.py").rename(project / "src" / "old.py")  # moved out of the package
    if vcs == "git":
        _git(project, "add", "-A", "src", "pyproject.toml")  # the user's build/ stays untracked
        _git(project, "commit", "-qm", "0.1.1; old.py leaves the package")
        (project / "src" / "mini_ext" / "fresh.py").write_text("FRESH = True\n")  # untracked, not ignored
    before_status = _status(project) if vcs == "git" else ""
    before_build_dir = _tree(project / "build")

    (wheel,) = _build(project, "0.1.1")
    assert wheel.name.startswith("mini_ext-0.1.1-cp312-"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (so,) = [n for n in names if n.startswith("mini_ext/_c.")]
        compiled = zf.read(so)
    assert b"mini-ext-version-0.1.1" in compiled and b"mini-ext-version-0.1.0" not in compiled, (
        "the compiled module came from the stale in-tree build/"
    )
    assert "mini_ext/old.py" not in names, "a module moved out of the package shipped from build/lib.*"
    if vcs == "git":
        assert "mini_ext/fresh.py" in names  # what the user's tree holds, like `uv build` would see it
        assert _status(project) == before_status  # nothing generated in the tree, tracked files as they were
    assert _tree(project / "build") == before_build_dir  # the user's own build/ is never touched
    assert not list(project.rglob("*.egg-info"))


@pytest.mark.slow
def test_two_pythons_build_in_parallel_each_from_a_clean_copy(tmp_path):
    project = _header_project(tmp_path / "p", ("3.11", "3.12"), git=True)
    before = _status(project)
    assert before == ""

    wheels = _build(project)
    assert [w.name.split("-")[2] for w in wheels] == ["cp311", "cp312"], wheels
    for wheel, tag in zip(wheels, ("311", "312"), strict=True):
        with zipfile.ZipFile(wheel) as zf:
            modules = sorted(n for n in zf.namelist() if n.startswith("mini_ext/_c."))
        assert modules == [f"mini_ext/_c.cpython-{tag}-x86_64-linux-gnu.so"], modules
    assert _status(project) == before, "the build left files in the work tree"
    assert not (project / "build").exists() and not list(project.rglob("*.egg-info"))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="a precompile step needs nvcc (install the CUDA toolkit)")
def test_the_precompile_steps_ignored_outputs_are_in_the_copy(tmp_path):
    """A guard for the copy: what precompile writes is git-ignored, yet it is a source of the wheel."""
    project = _header_project(tmp_path / "p", ("3.12",), git=True)
    (project / "gen.py").write_text(
        "from pathlib import Path\n"
        "out = Path('src/mini_ext/gen')\nout.mkdir(exist_ok=True)\n(out / 'table.txt').write_text('generated')\n"
    )
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(
        setup.replace('package_dir={"": "src"},', 'package_dir={"": "src"}, package_data={"mini_ext": ["gen/*.txt"]},')
    )
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace(
            'out_dir = "dist-all"',
            'out_dir = "dist-all"\nprecompile = ["{python}", "gen.py"]\nprecompile_outputs = "src/mini_ext/gen"',
        )
    )
    (project / ".gitignore").write_text("/dist-all/\n/src/mini_ext/gen/\n")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "precompile")

    (wheel,) = _build(project)
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("mini_ext/gen/table.txt") == b"generated"


SCM_PYPROJECT = """[build-system]
requires = ["setuptools>=68", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "scm-demo"
dynamic = ["version"]

[tool.setuptools]
packages = ["scm_demo"]

[tool.setuptools_scm]
root = ".."

[tool.kestrel-release]
python = ["3.12"]

[tool.kestrel-release.verify]
required_sass = []
"""
SCM_PYPROJECT = SCM_PYPROJECT.replace('python = ["3.12"]', f'python = ["{python_version()}"]')  # a py3 wheel: any


@pytest.mark.slow
def test_a_version_from_git_tags_is_the_same_in_the_copy(tmp_path):
    """A guard for the copy's private repository: setuptools-scm in a project one level below the
    repository root (root = "..") sees the tag, and the user's changes, exactly as in the user's tree."""
    repo = tmp_path / "repo"
    project = repo / "pkg"
    (project / "scm_demo").mkdir(parents=True)
    (project / "pyproject.toml").write_text(SCM_PYPROJECT)
    (project / "scm_demo" / "__init__.py").write_text("")
    (repo / "other").mkdir()
    (repo / "other" / "notes.txt").write_text("outside the project: not copied, not a deletion either\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "scm-demo")
    _git(repo, "tag", "-a", "v1.2.3", "-m", "1.2.3")

    cache = tmp_path / "cache"
    assert [w.name for w in _build(project, "1.2.3", cache)] == ["scm_demo-1.2.3-py3-none-any.whl"]
    (project / "scm_demo" / "__init__.py").write_text("CHANGED = True\n")  # uncommitted: a dirty version
    (dirty,) = _build(project, "1.2.4.dev0+*", cache)
    assert dirty.name.startswith("scm_demo-1.2.4.dev0+g"), dirty.name
    assert _status(repo) == " M pkg/scm_demo/__init__.py\n"


@pytest.mark.slow
@pytest.mark.parametrize("ignored", ["src/version.h", "src/"])
def test_a_build_failing_on_a_git_ignored_file_names_it(tmp_path, ignored):
    """An sdist committed as is: its `.gitignore` (ujson's names `lib/`, a generated header) hides files
    the build needs, so the clean copy (a fresh clone) lacks them. "No such file" about a file the user
    sees in the tree is a dead end; the error names the file and the way out, which then works."""
    project = _header_project(tmp_path / "p", ("3.12",), git=False)
    (project / ".gitignore").write_text(f"/dist-all/\n{ignored}\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "as unpacked")
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}

    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=env, timeout=900)
    assert result.code == 4, result.output
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    missing = "src/version.h" if ignored == "src/version.h" else "src/"
    assert f"git add -f {missing}" in line and "git ignores it" in line, line

    _git(project, "add", "-f", "src")  # the advice, followed literally
    _git(project, "commit", "-qm", "track the sources")
    assert _build(project, cache=tmp_path / "cache")


@pytest.mark.slow
def test_a_new_tag_on_an_unchanged_tree_is_never_served_the_old_versions_wheel(tmp_path):
    """ujson (setuptools-scm): `git tag -a v5.11.1` on the commit already tagged v5.11.0 changes the
    version but no file, so the wheel cache (keyed on the files) served the 5.11.0 wheel and the
    release stopped on 'the version must not change during a build'. The version is a key input."""
    project = tmp_path / "scm-demo"
    (project / "scm_demo").mkdir(parents=True)
    (project / "pyproject.toml").write_text(SCM_PYPROJECT.replace('root = ".."', ""))  # the repository's root
    (project / "scm_demo" / "__init__.py").write_text("")
    (project / ".gitignore").write_text("/dist-all/\n")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "scm-demo")
    _git(project, "tag", "-a", "v1.2.3", "-m", "1.2.3")
    cache = tmp_path / "cache"
    assert [w.name for w in _build(project, "1.2.3", cache)] == ["scm_demo-1.2.3-py3-none-any.whl"]

    _git(project, "tag", "-a", "v1.2.4", "-m", "1.2.4")  # same commit, same files
    assert [w.name for w in _build(project, "1.2.4", cache)] == ["scm_demo-1.2.4-py3-none-any.whl"]
    _git(project, "commit", "-q", "--allow-empty", "-m", "nothing changed but the commit")
    (dev,) = _build(project, "1.2.5.dev1+*", cache)
    assert dev.name.startswith("scm_demo-1.2.5.dev1+g"), dev.name
