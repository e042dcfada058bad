"""Helpers shared by the tests: run the real CLI as a user would; build or find what a test needs.

A test that needs something the machine may lack (a CPython version, a C compiler) asks for it here:
it gets it, or is skipped with a reason that says what to install (MissingPrerequisite). Under
`CI=true` such a skip is a failure (tests/conftest.py): CI must run every test.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels"
# `ci init` installs the tool from one exact commit; tests whose checkout has no public origin name one.
CI_TOOL_SOURCE = "git+https://github.com/acme/kestrel-release@" + "1" * 40
CI_TOOL_ENV = {"KESTREL_RELEASE_CI_TOOL_SOURCE": CI_TOOL_SOURCE}
# Modules `--help` must not import (a test checks sys.modules); the package imports them inside functions.
HEAVY_MODULES = {"github", "twine", "auditwheel", "build", "requests", "jinja2", "pynvml", "rich.live"}


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 900,
    input: str | None = None,
) -> CliResult:
    """Run `python -m kestrel_release ARGS` in a subprocess; never raises on exit code."""
    full_env = dict(os.environ)
    full_env["COLUMNS"] = "200"  # one width everywhere (pytest-xdist sets 80 in its workers); `env` may change it
    full_env.pop("KESTREL_RELEASE_DEBUG", None)
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)  # cache .pyc: each CLI run would recompile otherwise
    full_env["TWINE_NON_INTERACTIVE"] = "1"
    full_env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    # The suite may itself run in a GitHub Actions job: the CLI under test speaks Actions only where a test asks.
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        full_env.pop(name, None)
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "kestrel_release", *args],
        cwd=cwd or ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_in_process(args: list[str], *, env: dict[str, str] | None = None, input: str | None = None) -> CliResult:
    """Run the CLI with ARGS in this process (entry.invoke, in its own run context) with run_cli's environment;
    stdout and stderr captured, never raises on exit code.

    For the commands that need no process isolation: no signal, no other cwd, no interrupt, nothing that
    imports differently in a fresh interpreter (`--help` speed, the help cache and the early verify fork are
    __main__'s, tested through run_cli). `env` is set for the call and restored after it."""
    from kestrel_release import entry

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "200")  # as run_cli: one width, whatever the worker inherited
        patch.delenv("KESTREL_RELEASE_DEBUG", raising=False)
        patch.setenv("TWINE_NON_INTERACTIVE", "1")
        patch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        patch.chdir(ROOT)  # run_cli's default cwd (a project found from the cwd)
        patch.setattr(sys, "stdin", io.StringIO(input or ""))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry.invoke(args, prog_name="python -m kestrel_release")
            except SystemExit as exc:  # as the interpreter would report it
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_one_line_error(result: CliResult, code: int, *needles: str) -> None:
    """The failure is one clear `error:` line with the documented exit code, no traceback."""
    assert result.code == code, (result.code, result.output)
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])


# --- what a test needs from the machine ---------------------------------------------------------------------------


class MissingPrerequisite(pytest.skip.Exception):
    """A skip because the machine lacks something a test needs; a failure under CI=true (conftest.py)."""


def need(what: str, install: str) -> NoReturn:
    raise MissingPrerequisite(f"needs {what}: {install}", allow_module_level=True)


def python_version() -> str:
    """X.Y of the interpreter running the tests: a Python every machine running them has."""
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def need_pythons(*versions: str) -> dict[str, Path]:
    """The interpreters kestrel-release would find for `versions` (as its own search does: PATH, pyenv,
    uv, conda), or a skip naming the missing ones and how to install them."""
    from kestrel_release.adapters import pythons
    from kestrel_release.errors import PreflightError

    found, missing = {}, []
    for version in versions:
        try:
            found[version] = pythons.find_interpreter(version)
        except PreflightError:
            missing.append(version)
    if missing:
        need(
            f"CPython {', '.join(missing)}",
            " and ".join(f"`uv python install {v}`" for v in missing) + " (or pyenv install)",
        )
    return found


def kernels_pythons() -> list[str]:
    """The Pythons the bundled kernels/ package is configured for (a build of it needs them all)."""
    from kestrel_release._compat import tomllib

    return list(tomllib.loads((KERNELS / "pyproject.toml").read_text())["tool"]["kestrel-release"]["python"])


def c_compiler() -> str:
    """The system C compiler ($CC, cc, gcc or clang), or a skip saying to install one."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        found = shutil.which(name) if name else None
        if found:
            return found
    need("a C compiler", "install gcc (Debian/Ubuntu: apt-get install build-essential) or set CC")


def compile_shared(directory: Path, name: str, source: str) -> bytes:
    """A real ELF shared object of this machine, compiled from C `source` with the system compiler."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.c").write_text(source)
    out = directory / f"{name}.so"
    subprocess.run(
        [c_compiler(), "-shared", "-fPIC", "-O2", "-o", str(out), str(directory / f"{name}.c")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out.read_bytes()


def uv_bin() -> str:
    """The uv the tool's environment ships (the uv wheel)."""
    from uv import find_uv_bin

    return find_uv_bin()


def torch_venvs(root: Path, minors: tuple[str, ...]) -> dict[str, Path]:
    """A Python 3.12 venv per torch minor under `root`, installed offline from uv's cache (a skip naming
    .ci/torch-cache otherwise): {minor: its python}."""
    python = need_pythons("3.12")["3.12"]
    envs = {}
    for minor in minors:
        venv = root / minor
        subprocess.run([uv_bin(), "venv", "-q", "--python", str(python), str(venv)], check=True, timeout=120)
        got = subprocess.run(
            [uv_bin(), "pip", "install", "-q", "--offline", "--python", str(venv / "bin" / "python"), f"torch=={minor}.*"],
            capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if got.returncode != 0:
            need(f"torch {minor} from PyPI in uv's cache", "run .ci/torch-cache once (about 3 GB per torch minor)")
        envs[minor] = venv / "bin" / "python"
    return envs
