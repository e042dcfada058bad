"""Configuration: every problem in one message, did-you-mean, env and flag overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers import assert_one_line_error, run_in_process


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [project]
        name = "demo-kernels"
        version = "1.2.3"

        [tool.kestrel-release]
        """)
        + textwrap.dedent(table)
    )
    return tmp_path


def test_cli_config_error_is_one_line_exit_2(tmp_path):
    project = _project(tmp_path, 'pyhton = ["3.12"]\n[tool.kestrel-release.build]\nfrontend = "buidl"\n')
    result = run_in_process(["build", "--project", str(project)])
    assert_one_line_error(result, 2, "2 configuration problem(s)", "did you mean 'python'?", "did you mean 'build'?")
    assert not (project / "dist-all").exists()


def test_cli_bad_flag_value_is_config_error(tmp_path):
    result = run_in_process(["build", "--project", str(_project(tmp_path, "")), "--frontend", "buidl"])
    assert_one_line_error(result, 2, "in flags: --frontend: 'buidl'", "did you mean 'build'?")


def test_cli_broken_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = 1\n")
    result = run_in_process(["doctor", "--project", str(tmp_path)])
    assert_one_line_error(result, 2, "not valid TOML")


def test_cli_env_size_budget_is_applied_and_a_bad_one_is_one_line(tmp_path):
    from tests.factories import make_verify_project, make_wheel

    project = make_verify_project(tmp_path / "proj")
    wheel = make_wheel(tmp_path)  # a few hundred bytes: over a 0.1KiB budget, under 6KiB
    var = "KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET"
    over = run_in_process(["verify", "--project", str(project), "--json", str(wheel)], env={var: "0.1KiB"})
    assert over.code == 5, over.output
    assert '"rule": "file-size"' in over.stdout and "over the project budget" in over.stdout
    under = run_in_process(["verify", "--project", str(project), "--json", str(wheel)], env={var: "6KiB"})
    assert under.code == 0, under.output
    bad = run_in_process(["verify", "--project", str(project), str(wheel)], env={var: "6 KiBs"})
    assert_one_line_error(bad, 2, f"{var}: expected a non-negative number, got '6 KiBs'")
