"""The CLI shell: fast --help, --version, and the documented exit codes."""

from __future__ import annotations

import subprocess
import sys

from kestrel_release import __version__
from tests.helpers import HEAVY_MODULES, ROOT, assert_one_line_error, run_cli


def test_help_imports_no_heavy_module():
    code = (
        "import sys\n"
        "from kestrel_release.cli import app\n"
        "for args in (['--help'], ['build', '--help'], ['doctor', '--help']):\n"
        "    try:\n"
        "        app(args, standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in sys.modules if m in {HEAVY_MODULES!r} or m.split('.')[0] in {HEAVY_MODULES!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_version_flag():
    result = run_cli(["--version"])
    assert result.code == 0
    assert result.stdout.strip() == f"kestrel-release {__version__}"


def test_unknown_command_is_usage_error():
    result = run_cli(["bulid"])
    assert_one_line_error(result, 2, "No such command 'bulid'")


def test_unknown_option_is_usage_error():
    result = run_cli(["build", "--pyhton", "3.12"])
    assert_one_line_error(result, 2, "--pyhton")


def test_bare_command_shows_help():
    result = run_cli([])
    assert result.code == 0
    assert "Commands:" in result.stdout and "release" in result.stdout
