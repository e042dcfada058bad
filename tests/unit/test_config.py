"""Configuration: every problem in one message, did-you-mean, env and flag overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release import config
from kestrel_release.errors import ConfigError
from tests.helpers import assert_one_line_error, run_cli


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "demo-kernels"
        version = "1.2.3"

        [tool.kestrel-release]
        """) + textwrap.dedent(table))
    return tmp_path


def test_defaults(tmp_path):
    cfg = config.load(_project(tmp_path, ""), env={})
    assert cfg.python == ("3.10", "3.11", "3.12", "3.13")
    assert cfg.build.plat == "auto" and cfg.build.min_glibc == "" and cfg.abi == "auto"
    assert cfg.out_path == (tmp_path / "dist-all").resolve()


def test_every_problem_in_one_message(tmp_path):
    project = _project(tmp_path, """\
        pyhton = ["3.12"]
        requires_gpu = "yes"
        [tool.kestrel-release.build]
        frontend = "buidl"
        jobs = -1
        """)
    with pytest.raises(ConfigError) as info:
        config.load(project, env={})
    text = str(info.value)
    assert "4 configuration problem(s)" in text
    assert "pyhton: unknown key (did you mean 'python'?)" in text
    assert "requires_gpu: expected true or false" in text
    assert "build.jobs: expected a non-negative number" in text
    assert "'buidl' is not 'uv' or 'build' (did you mean 'build'?)" in text


def test_env_overrides_file(tmp_path):
    project = _project(tmp_path, 'python = ["3.12"]\n[tool.kestrel-release.build]\njobs = 1\n')
    cfg = config.load(project, env={"KESTREL_RELEASE_PYTHON": "3.11,3.13", "KESTREL_RELEASE_BUILD_JOBS": "3",
                                    "KESTREL_RELEASE_REQUIRES_GPU": "true"})
    assert cfg.python == ("3.11", "3.13")
    assert cfg.build.jobs == 3
    assert cfg.requires_gpu is True


def test_unknown_env_variable_suggests(tmp_path):
    with pytest.raises(ConfigError, match=r"KESTREL_RELEASE_BUILD_JOB: unknown variable \(did you mean 'KESTREL_RELEASE_BUILD_JOBS'\?\)"):
        config.load(_project(tmp_path, ""), env={"KESTREL_RELEASE_BUILD_JOB": "2"})


def test_flags_override_env(tmp_path):
    project = _project(tmp_path, "")
    cfg = config.load(project, env={"KESTREL_RELEASE_BUILD_JOBS": "3"},
                      overrides={"python": ("3.12",), "build.jobs": 5, "build.frontend": None})
    assert cfg.python == ("3.12",)
    assert cfg.build.jobs == 5
    assert cfg.build.frontend == "uv"  # None means "flag not given"


def test_bad_python_version_listed(tmp_path):
    with pytest.raises(ConfigError, match=r"python: '3\.x' is not a CPython version"):
        config.load(_project(tmp_path, 'python = ["3.12", "3.x"]\n'), env={})


def test_cli_config_error_is_one_line_exit_2(tmp_path):
    project = _project(tmp_path, 'pyhton = ["3.12"]\n[tool.kestrel-release.build]\nfrontend = "buidl"\n')
    result = run_cli(["build", "--project", str(project)])
    assert_one_line_error(result, 2, "2 configuration problem(s)", "did you mean 'python'?", "did you mean 'build'?")
    assert not (project / "dist-all").exists()


def test_cli_bad_flag_value_is_config_error(tmp_path):
    result = run_cli(["build", "--project", str(_project(tmp_path, "")), "--frontend", "buidl"])
    assert_one_line_error(result, 2, "in flags: --frontend: 'buidl'", "did you mean 'build'?")


def test_cli_broken_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\nname = 1\n")
    result = run_cli(["doctor", "--project", str(tmp_path)])
    assert_one_line_error(result, 2, "not valid TOML")


@pytest.mark.parametrize("size, expected", [("6KiB", 6 * 1024), ("6 KiB", 6 * 1024), ("1.5MiB", 3 * 2**19),
                                            ("2GB", 2 * 10**9), ("512B", 512)])
def test_env_size_override_takes_the_forms_pyproject_takes(tmp_path, size, expected):
    from_file = config.load(_project(tmp_path, f'[tool.kestrel-release.verify]\nproject_size_budget = "{size}"\n'),
                            env={})
    from_env = config.load(_project(tmp_path, ""), env={"KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET": size,
                                                        "KESTREL_RELEASE_VERIFY_MAX_FILE_SIZE": size})
    assert from_file.verify.project_size_budget == from_env.verify.project_size_budget == expected
    assert from_env.verify.max_file_size == expected


def test_cli_env_size_budget_is_applied_and_a_bad_one_is_one_line(tmp_path):
    from tests.data.cuda.builders import make_project, make_wheel

    project = make_project(tmp_path / "proj")
    wheel = make_wheel(tmp_path)  # a few hundred bytes: over a 0.1KiB budget, under 6KiB
    var = "KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET"
    over = run_cli(["verify", "--project", str(project), "--json", str(wheel)], env={var: "0.1KiB"})
    assert over.code == 5, over.output
    assert '"rule": "file-size"' in over.stdout and "over the project budget" in over.stdout
    under = run_cli(["verify", "--project", str(project), "--json", str(wheel)], env={var: "6KiB"})
    assert under.code == 0, under.output
    bad = run_cli(["verify", "--project", str(project), str(wheel)], env={var: "6 KiBs"})
    assert_one_line_error(bad, 2, f"{var}: expected a non-negative number, got '6 KiBs'")
