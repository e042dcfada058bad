"""README: "Every key can be overridden by the environment". Checked for every field of the model, by the
documented naming (KESTREL_RELEASE_<KEY>, KESTREL_RELEASE_<SECTION>_<KEY>, KESTREL_RELEASE_GITHUB_<KEY>,
KESTREL_RELEASE_TARGETS_<NAME>_<KEY>), so a key added later without an override fails here."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kestrel_release.config.model import CIConfig, Config, GithubTarget, IndexTarget, VersionFile
from kestrel_release.config_loader import load as config
from kestrel_release.config_loader import parse as config_parse
from kestrel_release.errors import ConfigError

SECTIONS = {"build", "verify", "publish", "smoke_test", "ci"}
# Not settings: the project's identity, from [project] or the backend (the parser's own list of them).
IDENTITY = config_parse._TOP_SKIP - SECTIONS - {"targets"}


def _project(tmp_path: Path, table: str = "") -> Path:
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


def _sample(name: str, default: Any) -> tuple[str, Any]:
    """A value other than the default, as a variable spells it, and as the config then holds it."""
    if isinstance(default, bool):
        return ("false" if default else "true"), not default
    if isinstance(default, int):
        return "7", 7
    if isinstance(default, float):
        return "7.5", 7.5
    if isinstance(default, dict):
        return '{"TORCH_CUDA_ARCH_LIST": "9.0a"}', {"TORCH_CUDA_ARCH_LIST": "9.0a"}
    if isinstance(default, tuple) and name == "version_files":
        text = json.dumps([{"path": "src/v.py", "pattern": '__version__ = "{version}"'}])
        return text, (VersionFile("src/v.py", '__version__ = "{version}"'),)
    if isinstance(default, tuple):
        pair = {
            "python": ("3.12", "3.13"),
            "platforms": ("manylinux_2_28_x86_64", "win_amd64"),
            "cuda_arch": ("80", "90a"),
            "cuda": ("12.9", "13.0"),
            "cuda_ptx": ("90a", "sm_90a"),
        }.get(name, ("x-one", "x-two"))
        return ",".join(pair), pair
    samples = {
        "abi": "abi3",
        "frontend": "build",
        "plat": "manylinux_2_28_x86_64",
        "min_glibc": "2.28",
        "repo": "acme/kernels",
        "nightly": "dated",
        "api_url": "https://ghe.example/api/v3",
        "cuda_compress": "size",
        "compile_cache": "none",
        "container_engine": "podman",
        "precompile_in": "container",
        "container": "quay.io/pypa/manylinux_2_28_x86_64",
    }
    value = samples.get(name, "x-" + name)
    return value, value


def _leaves() -> list[tuple[str, str, Any]]:
    """(variable, dotted key, default) for every field of the model a user can set."""
    out = []
    for f in dataclasses.fields(Config):
        if f.name in IDENTITY or f.name == "targets":
            continue
        if f.name in SECTIONS:
            for sub in dataclasses.fields(f.default_factory()):  # type: ignore[misc]
                default = getattr(f.default_factory(), sub.name)  # type: ignore[misc]
                out.append((f"KESTREL_RELEASE_{f.name.upper()}_{sub.name.upper()}", f"{f.name}.{sub.name}", default))
            continue
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]
        out.append((f"KESTREL_RELEASE_{f.name.upper()}", f.name, default))
    for sub in dataclasses.fields(GithubTarget):
        out.append(
            (
                f"KESTREL_RELEASE_GITHUB_{sub.name.upper()}",
                f"targets.github.{sub.name}",
                getattr(GithubTarget(), sub.name),
            )
        )
    for name in ("testpypi", "pypi"):
        for sub in dataclasses.fields(IndexTarget):
            out.append(
                (f"KESTREL_RELEASE_TARGETS_{name.upper()}_{sub.name.upper()}", f"targets.{name}.{sub.name}", "unused")
            )
    return out


def _get(cfg: Config, dotted: str) -> Any:
    value: Any = cfg
    for part in dotted.split("."):
        value = value[part] if isinstance(value, dict) else getattr(value, part)
    return value


@pytest.mark.parametrize(("variable", "key", "default"), _leaves(), ids=[leaf[0] for leaf in _leaves()])
def test_every_key_is_overridden_by_its_variable(tmp_path, variable, key, default):
    leaf = key.rsplit(".", 1)[-1]
    if key.startswith("targets.") and key.split(".")[1] != "github":
        text = expected = f"http://127.0.0.1:9/{leaf}/"
    else:
        text, expected = _sample(leaf, default)
    cfg = config.load(_project(tmp_path), env={variable: text})
    assert _get(cfg, key) == expected


def test_a_version_files_variable_takes_a_toml_array_too(tmp_path):
    text = "[{path = 'VERSION', pattern = '{version}'}]"
    cfg = config.load(_project(tmp_path), env={"KESTREL_RELEASE_VERSION_FILES": text})
    assert cfg.version_files == (VersionFile("VERSION", "{version}"),)


def test_a_configured_index_target_is_overridden_and_a_new_one_added(tmp_path):
    project = _project(
        tmp_path,
        """\
        [tool.kestrel-release.targets.corp-index]
        repository_url = "https://corp.example/upload/"
        simple_url = "https://corp.example/simple/"
        """,
    )
    cfg = config.load(
        project,
        env={
            "KESTREL_RELEASE_TARGETS_CORP_INDEX_REPOSITORY_URL": "http://127.0.0.1:1/",
            "KESTREL_RELEASE_TARGETS_STAGING_REPOSITORY_URL": "http://127.0.0.1:2/",
        },
    )
    assert cfg.targets["corp-index"] == IndexTarget("http://127.0.0.1:1/", "https://corp.example/simple/")
    assert cfg.targets["staging"] == IndexTarget("http://127.0.0.1:2/", "")


def test_bad_structured_values_are_config_errors_naming_the_variable(tmp_path):
    with pytest.raises(ConfigError) as info:
        config.load(
            _project(tmp_path),
            env={
                "KESTREL_RELEASE_VERSION_FILES": "VERSION",
                "KESTREL_RELEASE_BUILD_ENV": "[1, 2]",
                "KESTREL_RELEASE_TARGETS_NEW_SIMPLE_URL": "http://127.0.0.1/s/",
            },
        )
    text = str(info.value)
    assert "3 configuration problem(s) in environment variables" in text
    assert "KESTREL_RELEASE_VERSION_FILES: expected a list of {path, pattern}" in text
    assert "KESTREL_RELEASE_BUILD_ENV: expected a table of strings" in text
    assert "target 'new' has no repository_url" in text


def test_a_misspelt_target_variable_is_still_unknown(tmp_path):
    with pytest.raises(ConfigError, match="KESTREL_RELEASE_TARGETS_PYPI_REPOSITORY: unknown variable"):
        config.load(_project(tmp_path), env={"KESTREL_RELEASE_TARGETS_PYPI_REPOSITORY": "x"})


def test_the_torch_mirror_variables_the_adapters_read_are_not_unknown(tmp_path):
    # Before: `KESTREL_RELEASE_TORCH_PYPI=<mirror> kestrel-release build` stopped at "unknown variable".
    from kestrel_release.adapters import pytorch_index
    from kestrel_release.adapters.pypi import torch_cuda

    names = {torch_cuda.ROOT_ENV: "http://127.0.0.1:1", pytorch_index.ROOT_ENV: "http://127.0.0.1:1"}
    assert config.load(_project(tmp_path), env=names).name


def test_ci_keys_come_from_the_model():
    # The table above walks the model: a CI key added to CIConfig is covered without editing this file.
    assert {leaf[1] for leaf in _leaves()} >= {f"ci.{f.name}" for f in dataclasses.fields(CIConfig)}


def test_an_unknown_container_engine_is_one_config_error_naming_the_variable(tmp_path):
    from kestrel_release.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        config.load(_project(tmp_path), env={"KESTREL_RELEASE_BUILD_CONTAINER_ENGINE": "podmn"})
    assert "KESTREL_RELEASE_BUILD_CONTAINER_ENGINE: 'podmn' is not one of docker, podman, chroot" in str(err.value)
    assert "did you mean 'podman'" in str(err.value)
