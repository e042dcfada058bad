"""Helpers shared by the tests: run the real CLI as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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
    full_env.setdefault("COLUMNS", "200")
    full_env.pop("KESTREL_RELEASE_DEBUG", None)
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)  # cache .pyc: each CLI run would recompile otherwise
    full_env["TWINE_NON_INTERACTIVE"] = "1"
    full_env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
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


def assert_one_line_error(result: CliResult, code: int, *needles: str) -> None:
    """The failure is one clear `error:` line with the documented exit code, no traceback."""
    assert result.code == code, (result.code, result.output)
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
