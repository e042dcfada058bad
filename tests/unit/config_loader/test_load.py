"""Configuration: every problem in one message, did-you-mean, env and flag overrides."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.errors import ConfigError


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


def test_defaults(tmp_path):
    cfg = config.load(_project(tmp_path, ""), env={})
    assert cfg.python == ("3.10", "3.11", "3.12", "3.13")
    assert cfg.build.plat == "auto" and cfg.build.min_glibc == "" and cfg.abi == "auto"
    assert cfg.out_path == (tmp_path / "dist-all").resolve()


def test_every_problem_in_one_message(tmp_path):
    project = _project(
        tmp_path,
        """\
        pyhton = ["3.12"]
        requires_gpu = "yes"
        [tool.kestrel-release.build]
        frontend = "buidl"
        jobs = -1
        """,
    )
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
    cfg = config.load(
        project,
        env={
            "KESTREL_RELEASE_PYTHON": "3.11,3.13",
            "KESTREL_RELEASE_BUILD_JOBS": "3",
            "KESTREL_RELEASE_REQUIRES_GPU": "true",
        },
    )
    assert cfg.python == ("3.11", "3.13")
    assert cfg.build.jobs == 3
    assert cfg.requires_gpu is True


def test_unknown_env_variable_suggests(tmp_path):
    with pytest.raises(
        ConfigError,
        match=r"KESTREL_RELEASE_BUILD_JOB: unknown variable \(did you mean 'KESTREL_RELEASE_BUILD_JOBS'\?\)",
    ):
        config.load(_project(tmp_path, ""), env={"KESTREL_RELEASE_BUILD_JOB": "2"})


def test_flags_override_env(tmp_path):
    project = _project(tmp_path, "")
    cfg = config.load(
        project,
        env={"KESTREL_RELEASE_BUILD_JOBS": "3"},
        overrides={"python": ("3.12",), "build.jobs": 5, "build.frontend": None},
    )
    assert cfg.python == ("3.12",)
    assert cfg.build.jobs == 5
    assert cfg.build.frontend == "uv"  # None means "flag not given"


def test_bad_python_version_listed(tmp_path):
    with pytest.raises(ConfigError, match=r"python: '3\.x' is not a CPython version"):
        config.load(_project(tmp_path, 'python = ["3.12", "3.x"]\n'), env={})


def test_free_threaded_and_new_pythons_are_accepted(tmp_path):
    cfg = config.load(_project(tmp_path, 'python = ["3.14", "3.14t", "3.15"]\n'), env={})
    assert cfg.python == ("3.14", "3.14t", "3.15")


def test_a_free_threaded_python_before_3_13_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"python: '3\.12t': free-threaded builds exist from CPython 3\.13 on"):
        config.load(_project(tmp_path, 'python = ["3.12t", "3.13t"]\n'), env={})


@pytest.mark.parametrize(
    "size, expected",
    [("6KiB", 6 * 1024), ("6 KiB", 6 * 1024), ("1.5MiB", 3 * 2**19), ("2GB", 2 * 10**9), ("512B", 512)],
)
def test_env_size_override_takes_the_forms_pyproject_takes(tmp_path, size, expected):
    from_file = config.load(
        _project(tmp_path, f'[tool.kestrel-release.verify]\nproject_size_budget = "{size}"\n'), env={}
    )
    from_env = config.load(
        _project(tmp_path, ""),
        env={"KESTREL_RELEASE_VERIFY_PROJECT_SIZE_BUDGET": size, "KESTREL_RELEASE_VERIFY_MAX_FILE_SIZE": size},
    )
    assert from_file.verify.project_size_budget == from_env.verify.project_size_budget == expected
    assert from_env.verify.max_file_size == expected


def test_cuda_arch_takes_a_list_or_the_old_string(tmp_path):
    assert config.load(_project(tmp_path, 'cuda_arch = "90a"\n'), env={}).cuda_arch == ("90a",)
    cfg = config.load(
        _project(
            tmp_path,
            'cuda_arch = ["80", "90a", "100f", "110@13.0", "120f"]\ncuda = ["12.9", "13.0"]\ncuda_ptx = ["120f"]\n',
        ),
        env={},
    )
    assert cfg.cuda_arch == ("80", "90a", "100f", "110@13.0", "120f") and cfg.cuda == ("12.9", "13.0")
    assert cfg.cuda_ptx == ("120f",)
    env = {"KESTREL_RELEASE_CUDA_ARCH": "80, 120f", "KESTREL_RELEASE_CUDA": '["13.0"]'}
    cfg = config.load(_project(tmp_path, ""), env=env)
    assert cfg.cuda_arch == ("80", "120f") and cfg.cuda == ("13.0",)


def test_an_arch_a_configured_toolkit_cannot_build_is_a_config_error_naming_both(tmp_path):
    project = _project(tmp_path, 'cuda_arch = ["80", "110", "9x"]\ncuda = ["12.9", "13.0"]\ncuda_ptx = ["86"]\n')
    with pytest.raises(ConfigError) as info:
        config.load(project, env={})
    text = str(info.value)
    assert "sm_110 cannot be built by CUDA 12.9" in text and '"110@13.0"' in text
    assert "'9x' is not a CUDA architecture" in text
    assert "cuda_ptx: sm_86 is not in cuda_arch" in text
    with pytest.raises(ConfigError, match="'twelve' is not a CUDA toolkit version"):
        config.load(_project(tmp_path, ""), env={"KESTREL_RELEASE_CUDA": "twelve"})


def test_cuda_compress_takes_nvccs_modes_only(tmp_path):
    from kestrel_release.errors import ConfigError

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "k"\nversion = "1.0"\n[tool.kestrel-release.build]\ncuda_compress = "sise"\n'
    )
    with pytest.raises(
        ConfigError,
        match=r"build.cuda_compress: 'sise' is not one of none, default, size, speed, "
        r"balance \(did you mean 'size'\?\)",
    ):
        config.load(tmp_path, env={})
    assert config.load(tmp_path, env={"KESTREL_RELEASE_BUILD_CUDA_COMPRESS": "size"}).build.cuda_compress == "size"


def test_a_nul_byte_in_any_value_is_a_config_error(tmp_path):
    """Before: `out_dir = "dist\\u0000all"` was `internal error: ValueError: embedded null byte`."""
    project = _project(tmp_path, 'out_dir = "dist\\u0000all"\n[tool.kestrel-release.build]\nexclude = ["a\\u0000"]\n')
    with pytest.raises(ConfigError) as caught:
        config.load(project, env={})
    assert "out_dir: holds a NUL byte" in str(caught.value) and "build.exclude: holds a NUL byte" in str(caught.value)


def test_build_requires_needs_the_isolated_build_env_it_goes_into(tmp_path):
    project = _project(tmp_path, '[tool.kestrel-release.build]\nrequires = ["torch==2.11.*"]\n')
    assert config.load(project, env={}).build.requires == ("torch==2.11.*",)
    project = _project(tmp_path, '[tool.kestrel-release.build]\nrequires = ["torch=2.11"]\nisolation = false\n')
    with pytest.raises(ConfigError) as info:
        config.load(project, env={})
    assert "build.requires: 'torch=2.11' is not a PEP 508 requirement" in str(info.value)
    assert "build.requires: needs build.isolation = true" in str(info.value)
