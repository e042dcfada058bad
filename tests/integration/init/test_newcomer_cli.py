"""What a newcomer sees (issue 16): pipeable `version`, upward project search, one JSON document on
every failure, `-v` after the command, problems named where they are, the lock's real holder, wide
tables in logs, the default forbid list, and `sandbox pypi` lines that publish to the sandbox as printed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import factories
from tests.factories import NAME, make_dist, make_project
from tests.helpers import assert_one_line_error, python_version, run_cli


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


# --- 12: version ------------------------------------------------------------------------------


def test_version_prints_only_the_version_on_stdout_and_help_lists_the_kinds(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", version="1.2.3")
    shown = run_cli(["version", "--project", str(project)])
    assert shown.code == 0 and shown.stdout == "1.2.3\n"
    helped = run_cli(["version", "--help"])
    assert helped.code == 0
    for kind in ("major", "minor", "patch", "pre", "rc", "post", "dev", "nightly"):
        assert kind in helped.stdout, kind


# --- 8: upward search -------------------------------------------------------------------------


def test_commands_find_the_project_from_any_subdirectory(tmp_path: Path) -> None:
    project = make_project(tmp_path / "repo" / "kernels", version="0.7.0")
    git(tmp_path / "repo", "init", "-q")
    deep = project / "python" / "pkg" / "sub"
    deep.mkdir(parents=True)
    result = run_cli(["version"], cwd=deep)
    assert result.code == 0 and result.stdout == "0.7.0\n", result.output


def test_search_stops_at_the_git_root_and_suggests_init(tmp_path: Path) -> None:
    make_project(tmp_path / "outer", version="9.9.9")  # configured, but outside the repository
    repo = tmp_path / "outer" / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q")
    result = run_cli(["version"], cwd=repo / "src")
    assert_one_line_error(
        result, 2, "no pyproject.toml with a [tool.kestrel-release] table", str(repo / "src"), "kestrel-release init"
    )
    assert "9.9.9" not in result.output


# --- 9: one JSON document on failure ----------------------------------------------------------


@pytest.mark.parametrize(
    "args, code, kind",
    [
        (["build", "--python", "4.1"], 2, "config"),  # configuration loading
        (["build", "--no-gpu-check"], 3, "preflight"),  # build: the configured Python 3.99 does not exist
        (["publish", "--repository-url", "http://127.0.0.1:9/", "--dry-run"], 2, "usage"),  # nothing built
        (["release", "--yes"], 3, "preflight"),  # release stops at its preflight
        (["release", "--yes", "--from", "nowhere"], 2, "usage"),
        (["biuld"], 2, "usage"),  # a mistyped command
    ],
    ids=["config", "build", "publish", "release-preflight", "release-from", "usage"],
)
def test_json_failures_are_one_document(tmp_path: Path, args: list[str], code: int, kind: str) -> None:
    project = make_project(tmp_path / "p", pythons=("3.99",))
    result = run_cli([*args, "--json"], cwd=project)
    assert result.code == code and "Traceback" not in result.output, result.output
    doc = json.loads(result.stdout)  # exactly one document: json.loads refuses trailing data
    assert doc["ok"] is False and set(doc["error"]) == {"message", "hint", "exit_code", "kind"}
    assert (doc["error"]["exit_code"], doc["error"]["kind"]) == (code, kind), doc
    error_line = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_line) == 1 and doc["error"]["message"] in error_line[0]


def test_a_failed_verify_still_prints_only_its_report(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", pythons=("3.12",))
    wheel = factories.write_wheel(tmp_path / "w", NAME, files={"kestrel_kernels/k.c": b"int x;\n"})
    result = run_cli(["verify", str(wheel), "--project", str(project), "--json"])
    assert result.code == 5
    doc = json.loads(result.stdout)  # the report, with no failure document appended
    assert doc["ok"] is False and "wheels" in doc


# --- 15: -v after the command, "did you mean" once, where a problem is ------------------------


def test_verbose_after_the_command_is_accepted(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", version="0.3.0")
    for args in (["version", "-v"], ["version", "--verbose", "--project", str(project)]):
        result = run_cli([*args] + ([] if "--project" in args else ["--project", str(project)]))
        assert result.code == 0 and result.stdout == "0.3.0\n", result.output


def test_a_mistyped_command_suggests_once() -> None:
    result = run_cli(["biuld"])
    assert_one_line_error(result, 2, "No such command 'biuld'")
    assert result.stderr.count("Did you mean") == 1, result.stderr


def test_flag_and_environment_problems_are_named_as_such(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    pyproject = str(project / "pyproject.toml")
    flag = run_cli(["build", "--python", "4.1", "--project", str(project)])
    assert_one_line_error(flag, 2, "in flags: --python: '4.1' is not a CPython version")
    assert pyproject not in flag.stderr
    env = run_cli(["version", "--project", str(project)], env={"KESTREL_RELEASE_PYTHON": "3.x"})
    assert_one_line_error(env, 2, "in environment variables: KESTREL_RELEASE_PYTHON: '3.x' is not a CPython version")
    assert pyproject not in env.stderr
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text() + "\n[tool.kestrel-release.ci]\nbogus = 1\n"
    )
    both = run_cli(["version", "--project", str(project)], env={"KESTREL_RELEASE_PYTHON": "3.x"})
    assert_one_line_error(
        both,
        2,
        "2 configuration problem(s)",
        f"in {pyproject}: [tool.kestrel-release].ci.bogus",
        "in environment variables: KESTREL_RELEASE_PYTHON",
    )


def test_the_lock_message_names_the_operation_holding_it(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    env = {**os.environ, "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    code = (
        "import sys; from kestrel_release.files import fsutil\n"
        "with fsutil.project_lock(sys.argv[1], 'publish'):\n print('held', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(project)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline() == "held\n"
        result = run_cli(
            ["version", "bump", "patch", "--project", str(project)],
            env={"KESTREL_RELEASE_CACHE_DIR": env["KESTREL_RELEASE_CACHE_DIR"]},
        )
        assert_one_line_error(
            result, 2, "another kestrel-release publish is running", f"(pid {holder.pid})", "then run version again"
        )
    finally:
        holder.communicate("")
    assert 'version = "0.1.0"' in (project / "pyproject.toml").read_text()  # nothing changed
    assert not list(project.glob(".kestrel*"))  # the lock lives in the tool's state dir


def test_tables_do_not_wrap_at_80_columns_in_logs(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", pythons=("3.12",))
    wheel = factories.write_wheel(
        tmp_path / "w",
        NAME,
        files={
            "kestrel_kernels/__init__.py": b"",
            "kestrel_kernels/a_rather_long_directory_name/and_a_long_source_file_name.c": b"int x;\n",
        },
    )
    result = run_cli(["verify", str(wheel), "--project", str(project)], env={"COLUMNS": ""})  # not a terminal
    assert result.code == 5
    row = [line for line in result.stderr.splitlines() if "and_a_long_source_file_name.c" in line]
    assert row and "matches the forbidden pattern '*.c': exclude it from the wheel" in row[0], result.stderr


# --- 4: the default forbid list ---------------------------------------------------------------


def test_default_forbid_catches_c_sources_and_top_level_tests_only(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", pythons=("3.12",))
    shipped = {
        "kestrel_kernels/__init__.py": b"",
        "kestrel_kernels/_impl.c": b"int f(void);\n",
        "kestrel_kernels/ops.cxx": b"int g();\n",
        "kestrel_kernels/attn.cu": b"__global__ void k(){}\n",
        "kestrel_kernels/fast.pyx": b"def f(): pass\n",
        "kestrel_kernels/inc.pxi": b"\n",
        "kestrel_kernels/fast.pxd": b"cdef int f()\n",  # the cimport interface: may ship
        "kestrel_kernels/tests/__init__.py": b"",
        "kestrel_kernels/tests/test_ops.py": b"def test(): pass\n",
        "tests/test_top.py": b"def test(): pass\n",  # a top-level `tests` package clashes in site-packages
    }
    wheel = factories.write_wheel(tmp_path / "w", NAME, files=shipped)
    result = run_cli(["verify", str(wheel), "--project", str(project), "--json"])
    assert result.code == 5
    leaks = {
        f["member"] for w in json.loads(result.stdout)["wheels"] for f in w["findings"] if f["rule"] == "source-leak"
    }
    assert leaks == {
        "kestrel_kernels/_impl.c",
        "kestrel_kernels/ops.cxx",
        "kestrel_kernels/attn.cu",
        "kestrel_kernels/fast.pyx",
        "kestrel_kernels/inc.pxi",
        "tests/test_top.py",
    }


# --- 7: sandbox pypi prints lines that publish to it ------------------------------------------


def _lines_until(proc: subprocess.Popen, marker: str) -> list[str]:
    lines, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        lines.append(line.rstrip("\n"))
        if marker in line:
            return lines
    proc.kill()
    pytest.fail("not printed:\n" + "\n".join(lines))


def test_sandbox_pypi_lines_publish_to_the_sandbox_as_printed(tmp_path: Path) -> None:
    project = make_project(tmp_path / "kernels")
    make_dist(project / "dist-all")
    bindir = str(Path(sys.executable).parent)  # where `kestrel-release` is installed
    env = {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "COLUMNS": "80",
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
        "TWINE_NON_INTERACTIVE": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    for name in ("TWINE_USERNAME", "TWINE_PASSWORD", "TWINE_REPOSITORY", "TWINE_REPOSITORY_URL"):
        env.pop(name, None)
    server = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "sandbox", "pypi"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _lines_until(server, "kestrel-release publish")
        script = "\n".join(lines[-3:])
        assert lines[-3].startswith("export TWINE_USERNAME=") and 'TWINE_PASSWORD="$(cat ' in lines[-2], lines
        url = re.search(r"--repository-url (\S+)", lines[-1]).group(1)
        password_file = Path(re.search(r"cat (\S+)\)", lines[-2]).group(1))
        assert password_file.is_relative_to(tmp_path / "cache") and password_file.stat().st_mode & 0o077 == 0
        run = subprocess.run(
            ["bash", "-e", "-c", script], check=False, cwd=project, env=env, capture_output=True, text=True, timeout=300
        )
        out = run.stdout + run.stderr
        assert run.returncode == 0, out
        assert url in out and "custom-index" in out and "testpypi" not in out
        assert "2 uploaded" in out, out
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
    assert server.returncode == 0
    assert not password_file.exists() and list((tmp_path / "cache" / "sessions").iterdir()) == []


def test_sandbox_github_token_file_is_removed_on_exit(tmp_path: Path) -> None:
    env = {**os.environ, "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    server = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "sandbox", "github", "--repo", "o/r"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _lines_until(server, "kestrel-release publish")
        token_file = Path(re.search(r"cat (\S+)\)", next(line for line in lines if "GH_TOKEN" in line)).group(1))
        assert token_file.is_file() and token_file.is_relative_to(tmp_path / "cache")
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)
    assert server.returncode == 0 and not token_file.exists()


# --- 5: nothing untracked in the user's repository --------------------------------------------


@pytest.mark.slow
def test_build_leaves_git_status_clean(tmp_path: Path) -> None:
    from tests import factories

    project = factories.make_c_ext_project(tmp_path / "repo")
    # What any setuptools project ignores: the backend's own in-tree build dirs, nothing of this tool.
    (project / ".gitignore").write_text("build/\n*.egg-info/\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")
    env = {"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the second build replaces the first, .gitignore included, without a clash
        result = run_cli(["build", "--no-gpu-check", "--json"], cwd=project / "src", env=env)
        assert result.code == 0, result.output
        assert git(project, "status", "--porcelain", "--untracked-files=all") == ""
    logs = Path(json.loads(result.stdout)["logs"])
    assert logs.is_relative_to(tmp_path / "cache") and list(logs.glob(f"build-{python_version()}.log"))
    assert (project / "dist-all" / ".gitignore").read_text().splitlines()[-1] == "*"
    rehearsed = run_cli(["release", "--rehearse", "--yes", "--targets", "testpypi,pypi"], cwd=project, env=env)
    assert rehearsed.code == 0, rehearsed.output
    assert (project / "dist-all.rehearsal" / "pypi").is_dir()
    assert git(project, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.slow
def test_a_users_own_gitignore_in_the_output_is_kept(tmp_path: Path) -> None:
    from tests import factories

    project = factories.make_c_ext_project(tmp_path / "p")
    out = tmp_path / "wheelhouse"
    out.mkdir()
    (out / ".gitignore").write_text("*.tmp\n")
    result = run_cli(
        ["build", "--no-gpu-check", "--out", str(out)],
        cwd=project,
        env={"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.code == 0, result.output
    assert (out / ".gitignore").read_text() == "*.tmp\n"
