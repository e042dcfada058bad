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
