"""The suite on a machine that lacks what a test needs: a skip that says what to install, and under CI=true a
failure (CI must run every test). Run as pytest runs the suite, with tests/conftest.py's hook loaded.

Before: tests needing CPython 3.10/3.12/3.13 failed without pyenv (exit 3 from the tool, or a build fixture
error), and tests/integration/verify/test_verify_dedupe_cli.py failed on Debian's python3, whose `array` and `select`
are built in (no file to borrow an ELF from).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT, c_compiler, compile_shared, need_pythons

SAMPLE = """
import pytest
from tests.helpers import need_pythons

def test_needs_a_python_nobody_has():
    need_pythons("3.99")

def test_skips_for_another_reason():
    pytest.skip("not about this machine")
"""


def _pytest(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "-rfs",
            "-q",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_sample.py"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_missing_python_is_a_skip_naming_what_to_install(tmp_path: Path) -> None:
    result = _pytest(tmp_path, ci=None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 skipped" in result.stdout
    assert "needs CPython 3.99: `uv python install 3.99` (or pyenv install)" in result.stdout


def test_under_ci_true_that_skip_is_a_failure_and_other_skips_stay_skips(tmp_path: Path) -> None:
    result = _pytest(tmp_path, ci="true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed, 1 skipped" in result.stdout
    assert "FAILED" in result.stdout and "test_needs_a_python_nobody_has" in result.stdout
    assert "CI=true: this machine must run every test, but it needs CPython 3.99" in result.stdout


def test_need_pythons_finds_the_one_running_the_tests() -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert need_pythons(version)[version].is_file()


def test_compiled_objects_are_real_elf_shared_objects_of_this_machine(tmp_path: Path) -> None:
    c_compiler()
    one, other = (compile_shared(tmp_path, name, f"int {name}(void) {{ return 1; }}\n") for name in ("a", "b"))
    assert one[:4] == b"\x7fELF" and other[:4] == b"\x7fELF" and one != other
