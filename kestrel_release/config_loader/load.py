"""Configuration: defaults -> [tool.kestrel-release] -> KESTREL_RELEASE_* env -> flags.

Every problem is collected and reported at once (exit 2), unknown keys get a
"did you mean" suggestion. The result is a frozen dataclass tree that stages read.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from kestrel_release._compat import tomllib
from kestrel_release.config.model import (
    ABI_MODES,
    DEFAULT_EXCLUDES,
    DEFAULT_FORBID,
    DEFAULT_PYTHONS,
    MIB,
    RESERVED_ENV,
    BuildConfig,
    CIConfig,
    Config,
    GithubTarget,
    IndexTarget,
    PublishConfig,
    SmokeTestConfig,
    VerifyConfig,
    VersionFile,
)
from kestrel_release.errors import ConfigError

# The shape lives in config_model (config_parse imports it too); its names stay public here.
__all__ = [
    "ABI_MODES",
    "DEFAULT_EXCLUDES",
    "DEFAULT_FORBID",
    "DEFAULT_PYTHONS",
    "MIB",
    "RESERVED_ENV",
    "BuildConfig",
    "CIConfig",
    "Config",
    "GithubTarget",
    "IndexTarget",
    "PublishConfig",
    "SmokeTestConfig",
    "VerifyConfig",
    "VersionFile",
    "discover_project",
    "find_project",
    "load",
]


def _upward(start: Path) -> list[Path]:
    """`start` and its parents up to the enclosing git root (a project never spans repositories)."""
    out = []
    for directory in (start, *start.parents):
        out.append(directory)
        if (directory / ".git").exists():
            break
    return out


def discover_project(start: Path | None = None) -> Path | None:
    """The kernel project: the nearest directory from `start` (the cwd) upward, stopping at the git
    root or the filesystem root, whose pyproject.toml has [tool.kestrel-release], else ./kernels if
    configured; None when there is none."""
    start = (start or Path.cwd()).resolve()
    for directory in (*_upward(start), start / "kernels"):
        pyproject = directory / "pyproject.toml"
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
            if directory == start:
                return directory  # let load() report this file's problem
            continue
        tool = data.get("tool")
        if isinstance(tool, dict) and "kestrel-release" in tool:
            return directory
    return None


def find_project(project: Path | None) -> Path:
    """--project DIR, else the nearest configured directory upward from the cwd, else ./kernels."""
    if project is not None:
        return Path(project).expanduser().resolve()
    found = discover_project()
    if found is None:
        raise ConfigError(
            f"no pyproject.toml with a [tool.kestrel-release] table in {Path.cwd()} or its parent "
            "directories (up to the git root)",
            "run `kestrel-release init` in your package's directory, or pass --project DIR",
        )
    return found


def load(
    project: Path | None = None,
    overrides: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    """Load and validate the configuration; raise ConfigError listing every problem.

    Only reads: pyproject.toml, the environment, the flags. A project without [project] (a setup.py
    project) is left without a name and version (metadata_source "backend"); the stages that need
    them ask project_meta.resolve, which may run the build backend.
    """
    from kestrel_release.config_loader import parse as config_parse

    project_dir = find_project(project)
    env = dict(os.environ if env is None else env)
    pyproject = project_dir / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(
            f"no pyproject.toml in {project_dir}",
            "pass --project DIR pointing at the kernel package (set one up with `kestrel-release init`)",
        )
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:  # deep nesting recurses
        raise ConfigError(f"{pyproject}: not valid TOML: {exc}", "fix the syntax error") from None
    errors: list[str] = []
    name, version, source = config_parse.static_metadata(data, errors)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        errors.append("[tool]: expected a table")
        tool = {}
    table = tool.get("kestrel-release", {})
    cfg = config_parse.build(project_dir, name, version, table, env, errors)
    cfg = dataclasses.replace(cfg, metadata_source=source, version_dynamic=version is None)
    for key in env:
        if key.startswith("KESTREL_RELEASE_") and key not in RESERVED_ENV and not config_parse.is_config_env(key):
            errors.append(f"{key}: unknown variable{config_parse.suggest(key, config_parse.env_names())}")
    if overrides:
        cfg = config_parse.apply_overrides(cfg, overrides, errors)
    config_parse.validate(cfg, errors, config_parse.origins(env, overrides or {}))
    if errors:
        raise ConfigError(
            f"{len(errors)} configuration problem(s) " + config_parse.by_origin(errors, pyproject),
            "fix them and run again",
        )
    return cfg
