"""Reading [tool.kestrel-release] into config.py's dataclasses: types, sizes, env overrides, validation.

config.load drives it; every problem goes into one `errors` list so the user sees them all at once
(exit 2), each with its origin (pyproject.toml, KESTREL_RELEASE_* or a flag) and a "did you mean".
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from pathlib import Path
from typing import Any

from kestrel_release import config_variants, platforms, static_target, version_pattern
from kestrel_release.config_model import (
    ABI_MODES,
    CUDA_COMPRESS_MODES,
    DEFAULT_TARGETS,
    MIB,
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

_SECTIONS = {
    "build": BuildConfig,
    "verify": VerifyConfig,
    "publish": PublishConfig,
    "smoke_test": SmokeTestConfig,
    "ci": CIConfig,
}
_TOP_SKIP = {
    "project_dir",
    "name",
    "version",
    "metadata_source",
    "version_dynamic",
    "build",
    "verify",
    "publish",
    "smoke_test",
    "targets",
    "ci",
    "variants",
}
PREFIX = "KESTREL_RELEASE_"
# Keys whose value may be one string listing several ("80,90a"), as the env form: the old single-arch form stays valid.
_LIST_OR_STRING = (".cuda_arch", ".cuda", ".cuda_ptx")
_ENV_LISTS = ("_CUDA_ARCH", "_CUDA", "_CUDA_PTX")
# An index target's keys: KESTREL_RELEASE_TARGETS_<NAME>_<KEY>, NAME as env_word(name).
_INDEX_KEYS = tuple(f.name for f in dataclasses.fields(IndexTarget))


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def suggest(key: str, known) -> str:
    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _coerce(where: str, value: Any, default: Any, errors: list[str], from_env: bool = False) -> Any:
    """Check `value` against the type of `default`; env strings are parsed."""
    if from_env and isinstance(default, dict) and isinstance(value, str):
        value = parse_structured(value)
    if isinstance(default, bool):
        if from_env and isinstance(value, str):
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
        if isinstance(value, bool):
            return value
        errors.append(f"{where}: expected true or false, got {value!r}")
        return default
    if isinstance(default, (int, float)):
        if from_env and isinstance(value, str):
            try:
                value = type(default)(value)
            except ValueError:
                pass
        if isinstance(default, int) and isinstance(value, str):  # "6KiB": the same forms in env and pyproject
            value = _parse_size(value, where, errors)
        # `value >= 0` is False for nan; inf is refused too (int(inf) raises, and no limit is infinite).
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf"):
            return type(default)(value)
        errors.append(f"{where}: expected a non-negative number, got {value!r}")
        return default
    if isinstance(default, tuple):
        if from_env and isinstance(value, str) and value.lstrip().startswith("["):  # JSON/TOML, as tables
            value = parse_structured(value)
        if isinstance(value, str) and (from_env or where.endswith(_LIST_OR_STRING)):
            sep = r"[,;\s]+" if where.endswith(_LIST_OR_STRING) or where.endswith(_ENV_LISTS) else ","
            value = [v.strip() for v in re.split(sep, value) if v.strip()]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        errors.append(f"{where}: expected a list of strings, got {value!r}")
        return default
    if isinstance(default, dict):
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            return dict(value)
        errors.append(f"{where}: expected a table of strings, got {value!r}")
        return default
    if isinstance(value, str):
        return value
    errors.append(f"{where}: expected a string, got {value!r}")
    return default


def parse_structured(text: str) -> Any:
    """A table or list given in an environment variable: JSON, or a TOML inline value; else the text."""
    import json

    from kestrel_release._compat import tomllib

    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def env_word(name: str) -> str:
    """A key or target name as it appears in a variable name: upper case, `-` and `.` as `_`."""
    return name.upper().replace("-", "_").replace(".", "_")


def env_table() -> dict[str, str]:
    """Every variable that overrides a fixed key -> the key's dotted path, derived from the model.

    Index targets are open-ended (any name): `target_env` parses those names.
    """
    out = {f"{PREFIX}{env_word(k)}": k for k in _fields(Config) if k not in _TOP_SKIP}
    for section, cls in _SECTIONS.items():
        out.update({f"{PREFIX}{env_word(section)}_{env_word(k)}": f"{section}.{k}" for k in _fields(cls)})
    out.update({f"{PREFIX}GITHUB_{env_word(k)}": f"targets.github.{k}" for k in _fields(GithubTarget)})
    out.update(config_variants.env_names())
    return out


def target_env(name: str) -> tuple[str, str] | None:
    """KESTREL_RELEASE_TARGETS_<NAME>_<KEY> -> (NAME as written, key); None for any other name."""
    head = f"{PREFIX}TARGETS_"
    if not name.startswith(head):
        return None
    for key in _INDEX_KEYS:
        tail = "_" + env_word(key)
        if name.endswith(tail) and len(name) > len(head) + len(tail):
            return name[len(head) : -len(tail)], key
    return None


def _parse_size(text: str, where: str, errors: list[str]) -> Any:
    units = {"kib": 1024, "mib": MIB, "gib": 1024 * MIB, "kb": 1000, "mb": 10**6, "gb": 10**9, "b": 1}
    low = text.strip().lower().replace(" ", "")
    for unit, factor in units.items():
        if low.endswith(unit):
            try:
                return int(float(low[: -len(unit)]) * factor)
            except (ValueError, OverflowError):  # "nanMiB", "infMiB", "1e400MiB"
                break
    return text  # left for the caller's type error


def _section(cls, table: Any, where: str, errors: list[str], env: dict[str, str], env_prefix: str):
    known = _fields(cls)
    values: dict[str, Any] = {}
    if not isinstance(table, dict):
        errors.append(f"{where}: expected a table")
        table = {}
    for key, value in table.items():
        if key not in known:
            errors.append(f"{where}.{key}: unknown key{suggest(key, known)}")
            continue
        values[key] = _coerce(f"{where}.{key}", value, _default(known[key]), errors)
    for key in known:
        env_name = f"{env_prefix}{env_word(key)}"
        if env_name in env:
            values[key] = _coerce(env_name, env[env_name], _default(known[key]), errors, True)
    return cls(**values)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"{f.name} has no default")  # every config field has one; a new one without is a bug


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


def build(project_dir, name, version, table, env, errors) -> Config:
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
    values["targets"] = _targets(table.get("targets", {}), errors, env)
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
        bad = version_pattern.problem(str(item["pattern"]))
        if bad:
            errors.append(f"{where}[{i}]: the pattern {str(item['pattern'])!r} {bad}")
            continue
        out.append(VersionFile(str(item["path"]), str(item["pattern"])))
    return tuple(out)


def _targets(table: Any, errors: list[str], env: dict[str, str]) -> dict[str, Any]:
    targets: dict[str, Any] = dict(DEFAULT_TARGETS)
    if not isinstance(table, dict):
        errors.append("[tool.kestrel-release].targets: expected a table")
        return targets
    for name, body in table.items():
        where = f"[tool.kestrel-release.targets.{name}]"
        if name == "github":
            targets[name] = _section(GithubTarget, body, where, errors, env, "KESTREL_RELEASE_GITHUB_")
        elif static_target.is_static_index(body):
            targets[name] = static_target.parse(body, where, errors)
        elif isinstance(body, dict) and set(body) <= {"repository_url", "simple_url"} and "repository_url" in body:
            targets[name] = IndexTarget(str(body["repository_url"]), str(body.get("simple_url", "")))
        else:
            bad = set(body) - {"repository_url", "simple_url"} if isinstance(body, dict) else {"?"}
            hint = suggest(next(iter(bad)), {"repository_url", "simple_url"}) if bad else ""
            errors.append(
                f"{where}: an index target takes only repository_url and simple_url{hint} "
                f'(a static index: kind = "{static_target.KIND}", dir = "...")'
            )
    if "github" not in targets:
        targets["github"] = _section(GithubTarget, {}, "github", errors, env, "KESTREL_RELEASE_GITHUB_")
    _index_targets_from_env(targets, errors, env)
    return targets


def _index_targets_from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str]) -> None:
    """KESTREL_RELEASE_TARGETS_<NAME>_REPOSITORY_URL / _SIMPLE_URL: override a target, or add one."""
    by_word = {env_word(name): name for name in targets if name != "github"}
    given: dict[str, dict[str, str]] = {}
    for var in sorted(env):
        parsed = target_env(var)
        if parsed is None:
            continue
        word, key = parsed
        if word == "GITHUB":
            errors.append(f"{var}: the GitHub target's variables are KESTREL_RELEASE_GITHUB_<KEY>")
            continue
        given.setdefault(word, {})[key] = env[var]
    for word, fields in given.items():
        name = by_word.get(word, word.lower())
        current = targets.get(name)
        if isinstance(current, static_target.StaticIndexTarget):
            errors.append(f"{PREFIX}TARGETS_{word}_*: target '{name}' is a static index; set it in pyproject.toml")
            continue
        merged = {**(dataclasses.asdict(current) if isinstance(current, IndexTarget) else {}), **fields}
        if not merged.get("repository_url"):
            errors.append(
                f"{PREFIX}TARGETS_{word}_SIMPLE_URL: target '{name}' has no repository_url (set "
                f"{PREFIX}TARGETS_{word}_REPOSITORY_URL too)"
            )
            continue
        targets[name] = IndexTarget(str(merged["repository_url"]), str(merged.get("simple_url", "")))


def env_names() -> set[str]:
    """Every fixed variable name (index targets' open-ended ones: `is_config_env`)."""
    return set(env_table())


def is_config_env(name: str) -> bool:
    return name in env_table() or target_env(name) is not None


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
    from packaging.version import InvalidVersion, Version

    origins = origins or {}

    def at(key: str) -> str:
        return origins.get(key, key)

    for py in cfg.python:
        parts = py.split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts) or parts[0] != "3":
            errors.append(f"{at('python')}: '{py}' is not a CPython version like 3.12")
    if not cfg.python:
        errors.append(f"{at('python')}: the list of Python versions is empty")
    if cfg.abi not in ABI_MODES:
        errors.append(f"{at('abi')}: '{cfg.abi}' is not one of {', '.join(ABI_MODES)}{suggest(cfg.abi, ABI_MODES)}")
    errors += [f"{at('platforms')}{p[len('platforms') :]}" for p in platforms.problems(cfg.platforms)]
    if cfg.build.min_glibc and not _is_glibc(cfg.build.min_glibc):
        errors.append(f"{at('build.min_glibc')}: '{cfg.build.min_glibc}' is not a glibc version like 2.28")
    if not cfg.publish.timeout > 0:  # 0 would mean "no deadline" to some clients and "fail at once" to others
        errors.append(f"{at('publish.timeout')}: expected a positive number of seconds, got {cfg.publish.timeout!r}")
    if cfg.build.frontend not in ("uv", "build"):
        errors.append(
            f"{at('build.frontend')}: '{cfg.build.frontend}' is not 'uv' or 'build'"
            f"{suggest(cfg.build.frontend, ['uv', 'build'])}"
        )
    engines = ("docker", "podman", "chroot")
    if cfg.build.container_engine and cfg.build.container_engine not in engines:
        errors.append(
            f"{at('build.container_engine')}: '{cfg.build.container_engine}' is not one of {', '.join(engines)}"
            f"{suggest(cfg.build.container_engine, engines)}"
        )
    if cfg.build.container_engine == "chroot" and cfg.build.container and not Path(cfg.build.container).is_absolute():
        errors.append(
            f"{at('build.container')}: the chroot engine needs an absolute root directory, got '{cfg.build.container}'"
        )
    if cfg.build.precompile_in not in ("host", "container"):
        errors.append(
            f"{at('build.precompile_in')}: '{cfg.build.precompile_in}' is not 'host' or 'container'"
            f"{suggest(cfg.build.precompile_in, ['host', 'container'])}"
        )
    elif cfg.build.precompile_in == "container" and cfg.precompile and not cfg.build.container:
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
    gh = cfg.github()
    if gh.repo and gh.repo.count("/") != 1:
        errors.append(f"{at('targets.github.repo')}: '{gh.repo}' is not OWNER/NAME")
    if gh.nightly not in ("rolling", "dated"):
        errors.append(
            f"{at('targets.github.nightly')}: '{gh.nightly}' is not 'rolling' or 'dated'"
            f"{suggest(gh.nightly, ['rolling', 'dated'])}"
        )
    mode = cfg.build.cuda_compress
    if mode and mode not in CUDA_COMPRESS_MODES:
        errors.append(
            f"{at('build.cuda_compress')}: '{mode}' is not one of {', '.join(CUDA_COMPRESS_MODES)}"
            f"{suggest(mode, CUDA_COMPRESS_MODES)}"
        )
    for name in cfg.smoke_test.reuse:
        if not _DIST_NAME.fullmatch(name):
            errors.append(f"{at('smoke_test.reuse')}: '{name}' is not a distribution name like torch")
    if gh.keep < 1:
        errors.append(f"{at('targets.github.keep')}: {gh.keep} keeps no nightly; use 1 or more")


def _validate_cuda(cfg: Config, errors: list[str], at) -> None:
    """Every arch parses and every (toolkit, arch) pair can be built (cuda_rules.pairs)."""
    from kestrel_release import cuda_rules

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
