"""Reading [tool.kestrel-release] into config.py's dataclasses: types, sizes, env overrides, validation.

config.load drives it; every problem goes into one `errors` list so the user sees them all at once
(exit 2), each with its origin (pyproject.toml, KESTREL_RELEASE_* or a flag) and a "did you mean".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kestrel_release import platforms, targets
from kestrel_release.config import settings as config_settings
from kestrel_release.config import values as config_values
from kestrel_release.config.model import Config, VersionFile
from kestrel_release.config.values import PREFIX, env_word, parse_structured, suggest
from kestrel_release.config_loader import variants as config_variants
from kestrel_release.facts import pyversions
from kestrel_release.project import version_pattern

# config_values' functions under the names this module's code (and code being written against it) uses.
_coerce, _section = config_values.coerce, config_values.section
_default, _fields = config_values.field_default, config_values.fields
__all__ = ["PREFIX", "env_word", "parse_structured", "suggest"]

# Derived from config_model's declarations (config_settings); the names stay for this module's code.
_SECTIONS = config_settings.SECTIONS
_TOP_SKIP = config_settings.TOP_SKIP


def env_table() -> dict[str, str]:
    """Every variable that overrides a fixed key -> the key's dotted path, derived from the model.

    Index targets are open-ended (any name): `targets.is_env` knows those names.
    """
    out = {f"{PREFIX}{env_word(k)}": k for k in _fields(Config) if k not in _TOP_SKIP}
    for section, cls in _SECTIONS.items():
        out.update({f"{PREFIX}{env_word(section)}_{env_word(k)}": f"{section}.{k}" for k in _fields(cls)})
    out.update(targets.env_names())
    out.update(config_variants.env_names())
    return out


def static_metadata(data: dict, errors: list[str]) -> tuple[str, str | None, str]:
    """(name, version, source) from [project]; source "backend" when there is no [project] table.

    A setup.py project has no [project] table (adding one breaks many of them): its name and
    version come from the build backend (PEP 517) instead of a refusal. A dynamic version of a
    [project] table stays None here; stages that need it ask the backend (backend_meta).
    """
    if "project" not in data:
        return "", None, "backend"
    meta = data["project"] if isinstance(data["project"], dict) else {}
    if not isinstance(data["project"], dict):
        errors.append("[project]: expected a table")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append("[project].name: missing")
        name = "unknown"
    version = meta.get("version")
    dynamic = meta.get("dynamic") or []
    if not isinstance(dynamic, list):
        errors.append(f"[project].dynamic: expected a list of strings, got {dynamic!r}")
        dynamic = []
    if "version" in dynamic:
        version = None
    elif not isinstance(version, str):
        errors.append("[project].version: missing (or list 'version' in [project].dynamic)")
        version = None
    return name, version, "pyproject"


def build(
    project_dir: Path, name: str, version: str | None, table: Any, env: dict[str, str], errors: list[str]
) -> Config:
    where = "[tool.kestrel-release]"
    if not isinstance(table, dict):
        errors.append(f"{where}: expected a table")
        table = {}
    known = _fields(Config)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in _SECTIONS or key in ("targets", "variants"):
            continue
        if key not in known or key in _TOP_SKIP:
            sections = set(_SECTIONS) | {"targets", "variants"}
            errors.append(f"{where}.{key}: unknown key{suggest(key, set(known) - _TOP_SKIP | sections)}")
            continue
        if key == "version_files":
            values[key] = _version_files(value, errors)
            continue
        values[key] = _coerce(f"{where}.{key}", value, _default(known[key]), errors)
    for env_name, key in env_table().items():
        if "." in key or env_name not in env:
            continue
        if key == "version_files":
            values[key] = _version_files(parse_structured(env[env_name]), errors, env_name)
        else:
            values[key] = _coerce(env_name, env[env_name], _default(known[key]), errors, True)
    for section, cls in _SECTIONS.items():
        values[section] = _section(
            cls, table.get(section, {}), f"{where}.{section}", errors, env, f"{PREFIX}{env_word(section)}_"
        )
    values["targets"] = targets.parse(table.get("targets", {}), errors, env)
    values["variants"] = config_variants.parse(table.get("variants"), env, errors, suggest, parse_structured)
    return Config(project_dir=project_dir, name=name, version=version, **values)


def _version_files(
    value: Any, errors: list[str], where: str = "[tool.kestrel-release].version_files"
) -> tuple[VersionFile, ...]:
    out = []
    if not isinstance(value, list):
        errors.append(f"{where}: expected a list of {{path, pattern}} (in a variable: JSON or a TOML array)")
        return ()
    for i, item in enumerate(value):
        if not isinstance(item, dict) or set(item) != {"path", "pattern"}:
            errors.append(f"{where}[{i}]: expected {{path = ..., pattern = '...{{version}}...'}}")
            continue
        pattern = str(item["pattern"])
        bad = version_pattern.problem(pattern)
        if bad and not version_pattern.split_only(pattern):  # parts of one file's version: judged together below
            errors.append(f"{where}[{i}]: the pattern {pattern!r} {bad}")
            continue
        out.append(VersionFile(str(item["path"]), pattern))
    for path in dict.fromkeys(vf.path for vf in out):
        parts = [vf.pattern for vf in out if vf.path == path and version_pattern.split_only(vf.pattern)]
        bad = version_pattern.group_problem(parts) if parts else None
        if bad:
            errors.append(
                f"{where}: the {{major}}/{{minor}}/{{micro}} entries of {path} {bad}: they are one version, "
                "read and rewritten together; list one entry per spot, e.g. "
                '{path = "include/v.h", pattern = "#define V_MAJOR {major}"} and the same for '
                "{minor} and {micro}, or one multi-line pattern "
                "'#define V_MAJOR {major}\\n#define V_MINOR {minor}\\n#define V_PATCH {micro}'"
            )
    return tuple(out)


def env_names() -> set[str]:
    """Every fixed variable name (index targets' open-ended ones: `is_config_env`)."""
    return set(env_table())


def is_config_env(name: str) -> bool:
    return name in env_table() or targets.is_env(name)


def apply_overrides(cfg: Config, overrides: dict[str, Any], errors: list[str]) -> Config:
    """Flags win over everything. Keys are 'python' or dotted 'build.jobs'."""
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        if value is None:
            continue
        if "." in key:
            section, sub = key.split(".", 1)
            nested.setdefault(section, {})[sub] = value
        else:
            top[key] = value
    for section, vals in nested.items():
        top[section] = dataclasses.replace(getattr(cfg, section), **vals)
    return dataclasses.replace(cfg, **top)


# Flags that override configuration keys (cli passes them as `overrides`), for error messages.
FLAG_NAMES = {
    "python": "--python",
    "out_dir": "--out",
    "build.jobs": "--jobs",
    "build.frontend": "--frontend",
    "build.isolation": "--no-isolation",
    "build.container": "--container",
}


def origins(env: dict[str, str], overrides: dict[str, Any]) -> dict[str, str]:
    """Key -> where its value came from when not pyproject.toml: the flag, else the variable."""
    out = {key: name for name, key in env_table().items() if name in env}
    out.update({k: FLAG_NAMES.get(k, k) for k, v in overrides.items() if v is not None})
    return out


def by_origin(errors: list[str], pyproject: Path) -> str:
    """Group the problems by where they are: the file, the environment, the flags."""
    groups: dict[str, list[str]] = {}
    for error in errors:
        where = (
            "in environment variables"
            if error.startswith("KESTREL_RELEASE_")
            else "in flags"
            if error.startswith("--")
            else f"in {pyproject}"
        )
        groups.setdefault(where, []).append(error)
    return "; ".join(f"{where}: " + "; ".join(items) for where, items in groups.items())


def validate(cfg: Config, errors: list[str], origins: dict[str, str] | None = None) -> None:
    """The checks a value's type cannot make: each key's allowed values (declared in config_model), then
    the rules of one key's syntax and those across keys."""
    from packaging.version import InvalidVersion, Version

    origins = origins or {}

    def at(key: str) -> str:
        return origins.get(key, key)

    for py in cfg.python:
        if (why := pyversions.problem(py)) is not None:
            errors.append(f"{at('python')}: {why}")
    if not cfg.python:
        errors.append(f"{at('python')}: the list of Python versions is empty")
    errors += config_settings.choice_problems(cfg, "", at)
    for section in _SECTIONS:
        errors += config_settings.choice_problems(getattr(cfg, section), section, at)
    errors += [f"{at('platforms')}{p[len('platforms') :]}" for p in platforms.problems(cfg.platforms)]
    if cfg.build.min_glibc and not _is_glibc(cfg.build.min_glibc):
        errors.append(f"{at('build.min_glibc')}: '{cfg.build.min_glibc}' is not a glibc version like 2.28")
    if not cfg.publish.timeout > 0:  # 0 would mean "no deadline" to some clients and "fail at once" to others
        errors.append(f"{at('publish.timeout')}: expected a positive number of seconds, got {cfg.publish.timeout!r}")
    if cfg.build.container_engine == "chroot" and cfg.build.container and not Path(cfg.build.container).is_absolute():
        errors.append(
            f"{at('build.container')}: the chroot engine needs an absolute root directory, got '{cfg.build.container}'"
        )
    if cfg.build.precompile_in == "container" and cfg.precompile and not cfg.build.container:
        errors.append(
            f"{at('build.precompile_in')}: 'container' needs an image to run in — set build.container "
            "(or --container), or precompile_in = 'host'"
        )
    if cfg.version is not None:
        try:
            Version(cfg.version)
        except InvalidVersion:
            errors.append(f"[project].version: '{cfg.version}' is not a valid PEP 440 version")
    _validate_cuda(cfg, errors, at)
    config_variants.validate(cfg, errors, at)
    targets.validate(cfg, errors, at)
    _validate_build_requires(cfg, errors, at)
    for name in cfg.smoke_test.reuse:
        if not _DIST_NAME.fullmatch(name):
            errors.append(f"{at('smoke_test.reuse')}: '{name}' is not a distribution name like torch")
    _validate_nul(cfg, errors, at)


def _validate_build_requires(cfg: Config, errors: list[str], at: Callable[[str], str]) -> None:
    """build.requires goes into the tool's own build envs: a frontend or mode without them would ignore it."""
    from packaging.requirements import InvalidRequirement, Requirement

    for text in cfg.build.requires:
        try:
            Requirement(text)
        except InvalidRequirement:
            errors.append(f"{at('build.requires')}: '{text}' is not a PEP 508 requirement like torch==2.11.*")
    if cfg.build.requires and not cfg.build.isolation:
        errors.append(
            f"{at('build.requires')}: needs build.isolation = true (without isolation the build uses each "
            "Python's own packages): remove build.isolation = false, or install the requirements into each Python"
        )
    elif cfg.build.requires and cfg.build.frontend != "uv":
        errors.append(f"{at('build.requires')}: needs build.frontend = 'uv' (pypa/build installs only the project's)")


def _validate_nul(cfg: Config, errors: list[str], at: Callable[[str], str]) -> None:
    """No value holds a NUL byte: the OS refuses it in every path, argument and variable (a ValueError deep
    inside a later step otherwise), and it is always a typing or quoting accident."""
    sections = [("", cfg)] + [(f.name + ".", getattr(cfg, f.name)) for f in dataclasses.fields(cfg)]
    for prefix, obj in sections:
        if not dataclasses.is_dataclass(obj) or (prefix and obj is cfg):
            continue
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            values = value if isinstance(value, (tuple, list)) else (value,)
            if any(isinstance(v, (str, Path)) and "\x00" in str(v) for v in values):
                errors.append(f"{at(prefix + f.name)}: holds a NUL byte (\\x00): remove it")


def _validate_cuda(cfg: Config, errors: list[str], at: Callable[[str], str]) -> None:
    """Every arch parses and every (toolkit, arch) pair can be built (cuda_rules.pairs)."""
    from kestrel_release.facts import cuda_rules

    if not cfg.cuda_arch:
        errors.append(f"{at('cuda_arch')}: the list of CUDA architectures is empty")
    bad_toolkit = False
    for toolkit in cfg.cuda:
        try:
            cuda_rules.parse_toolkit(toolkit)
        except cuda_rules.ArchError as exc:
            errors.append(f"{at('cuda')}: {exc}")
            bad_toolkit = True
    if cfg.cuda and not bad_toolkit:
        errors += [f"{at('cuda_arch')}: {p}" for p in cuda_rules.pairs(cfg.cuda, cfg.cuda_arch)[1]]
    else:
        for text in cfg.cuda_arch:
            try:
                cuda_rules.parse_target(text)
            except cuda_rules.ArchError as exc:
                errors.append(f"{at('cuda_arch')}: {exc}")
    built = set()
    for text in cfg.cuda_arch:
        try:
            built.add(cuda_rules.parse_target(text).arch)
        except cuda_rules.ArchError:
            pass
    for text in cfg.cuda_ptx:
        try:
            arch = cuda_rules.Arch.parse(text)
        except cuda_rules.ArchError as exc:
            errors.append(f"{at('cuda_ptx')}: {exc}")
            continue
        if arch not in built:
            errors.append(f"{at('cuda_ptx')}: {arch.sm} is not in cuda_arch (PTX is embedded next to an arch's SASS)")


_DIST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")


def _is_glibc(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 2 and parts[0] == "2" and parts[1].isdigit()
