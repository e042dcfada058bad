"""A failed build, as the user sees it: the summary quotes the first real compiler error, and no process of
the build outlives it (on a failure or SIGTERM)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.factories import make_c_ext_project
from tests.helpers import ROOT, assert_one_line_error, need_pythons, run_cli

pytestmark = pytest.mark.slow

# The error comes first; hundreds of warning lines follow it (as a torch build's other jobs print theirs),
# so the log's tail holds only warnings and the frontend's summary.
_BROKEN = (
    "#include <Python.h>\n"
    "static int broken(void) { return undeclared_thing; }\n"
    + "".join(f"static int unused_{i}(void) {{ int v{i}; return 0; }}\n" for i in range(300))
    + 'static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};\n'
    "PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&mod); }\n"
)


def test_the_summary_quotes_the_first_compiler_error(tmp_path: Path) -> None:
    project = make_c_ext_project(tmp_path / "p")
    (project / "src" / "c.c").write_text(_BROKEN)
    setup = (project / "setup.py").read_text()
    (project / "setup.py").write_text(setup.replace('["src/c.c"]', '["src/c.c"], extra_compile_args=["-Wall"]'))
    result = run_cli(
        ["build", "--project", str(project), "--no-gpu-check"],
        env={"KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert_one_line_error(result, 4, "first error: ", "src/c.c:2:34: error: ", "undeclared_thing")


# --- every process of the build ends with it ----------------------------------------------------------------------

_BACKEND = """
import os, subprocess, sys, time
from pathlib import Path

MARK, DIR = os.environ["KR_TEST_MARK"], Path(os.environ["KR_TEST_DIR"])
SLEEP = "import time; time.sleep(600)"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    me = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if me == os.environ["KR_TEST_FAILS"]:
        for _ in range(600):  # fail once the other Python's helpers run
            if (DIR / "ready").exists():
                raise RuntimeError("failing on purpose")
            time.sleep(0.1)
        raise RuntimeError("the other build never got ready")
    # a compiler in its own session (as setsid would), and a daemon whose parent has exited (init adopts it)
    subprocess.Popen([sys.executable, "-c", SLEEP, MARK, "own-session"], start_new_session=True)
    daemonize = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {SLEEP!r}, {MARK!r}, 'daemon'], start_new_session=True)"
    subprocess.run([sys.executable, "-c", daemonize], check=True)
    (DIR / "ready").write_text("")
    time.sleep(600)
"""


def _marked(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def _gone(mark: str) -> list[int]:
    deadline = time.monotonic() + 5
    while (left := _marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture
def spawning(tmp_path: Path):
    """A project whose backend leaves helpers behind (in their own session, one adopted by init) and
    waits, or fails once the other Python's helpers run; the env that drives it; the helpers' marker."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc (Linux)")
    project = tmp_path / "p"
    project.mkdir()
    (project / "backend.py").write_text(_BACKEND)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
        '[project]\nname = "spawner"\nversion = "0.1.0"\n\n'
        '[tool.kestrel-release]\npython = ["3.11", "3.12"]\n'
    )
    mark = f"kr-build-helper-{uuid.uuid4().hex}"
    env = {
        "KESTREL_RELEASE_CACHE_DIR": str(tmp_path / "cache"),
        "KR_TEST_MARK": mark,
        "KR_TEST_DIR": str(tmp_path),
        "KR_TEST_FAILS": "3.12",
        # Both Pythons' backends must run at once; with the compile cache the lead Python builds alone first.
        "KESTREL_RELEASE_BUILD_COMPILE_CACHE": "none",
    }
    yield project, env, mark
    for pid in _marked(mark):  # never leave sleepers on a shared machine, whatever the test said
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_one_pythons_failure_ends_the_other_pythons_helpers(spawning) -> None:
    need_pythons("3.11", "3.12")
    project, env, mark = spawning
    result = run_cli(["build", "--project", str(project), "--no-gpu-check"], env=env, timeout=300)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.code == 4 and len(errors) == 1, result.output  # (the backend's traceback is the log's, shown)
    assert "build for Python 3.12 failed" in errors[0] and "RuntimeError: failing on purpose" in errors[0]
    assert _gone(mark) == []


def test_sigterm_ends_every_helper(spawning, tmp_path: Path) -> None:
    need_pythons("3.11", "3.12")
    project, env, mark = spawning
    env["KR_TEST_FAILS"] = "none"
    child = subprocess.Popen(
        [sys.executable, "-m", "kestrel_release", "build", "--project", str(project), "--no-gpu-check"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_marked(mark)) >= 2, child.stderr
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert _gone(mark) == []
