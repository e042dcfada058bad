"""Configuration: defaults -> [tool.kestrel-release] -> KESTREL_RELEASE_* env -> flags.

Every problem is collected and reported at once (exit 2), unknown keys get a
"did you mean" suggestion. The result is a frozen dataclass tree that stages read.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

DEFAULT_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# What auditwheel must never graft: torch and the CUDA runtime come from the user's install at run
# time (real-packages.md section 3). Patterns are fnmatch on the soname; "lib*" covers both
# "libcudart.so" and "libcudart.so.13".
DEFAULT_EXCLUDES = (
    "libtorch*", "libc10*", "libcuda.so*", "libcudart*", "libcublas*", "libcublasLt*", "libnvrtc*",
    "libcudnn*", "libnccl*", "libcufft*", "libcurand*", "libcusparse*", "libcusolver*", "libnvJitLink*",
    "libcuda_dialect_runtime*", "libtvm_ffi*",
)
ABI_MODES = ("auto", "abi3", "py3", "per-python")
# What must never ship from a kernel package: C/C++/CUDA sources and headers, Cython sources
# (.pyx/.pxi; a .pxd is the cimport interface dependents need, so it may ship), kernel templates,
# source and script directories at any depth, and tests at the top of the wheel only: a top-level
# `tests` package lands in site-packages and clashes with every other, while `<pkg>/tests/` is
# shipped on purpose by many packages. A leading "/" anchors a pattern at the wheel's root.
DEFAULT_FORBID = (
    "*.c", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.cu", "*.cuh", "*.h", "*.hh", "*.hpp", "*.hxx",
    "*.pyx", "*.pxi", "**/kernel.py", "**/cute_moe_*.py", "**/flash_*.py", "csrc/**", "scripts/**",
    "/tests/**", "/test/**",
)
MIB = 1024 * 1024
# Variables under the prefix that are not configuration keys.
RESERVED_ENV = {"KESTREL_RELEASE_DEBUG", "KESTREL_RELEASE_CACHE_DIR", "KESTREL_RELEASE_FAIL_AT",
                "KESTREL_RELEASE_BUILDER"}  # BUILDER: the CI leg's label, recorded in the build manifest


@dataclass(frozen=True)
class VersionFile:
    path: str
    pattern: str


@dataclass(frozen=True)
class BuildConfig:
    frontend: str = "uv"
    plat: str = "auto"  # auto = the most compatible manylinux tag the wheel can carry
    min_glibc: str = ""  # e.g. "2.28": the wheel must install on glibc >= this; "" = no floor required
    exclude: tuple[str, ...] = DEFAULT_EXCLUDES
    env: dict[str, str] = field(default_factory=dict)
    jobs: int = 0  # 0 = number of cores
    isolation: bool = True


@dataclass(frozen=True)
class VerifyConfig:
    required_sass: tuple[str, ...] = ("sm_90a",)
    allow_ptx: bool = False
    allow_debug: bool = False
    forbid: tuple[str, ...] = DEFAULT_FORBID
    allow: tuple[str, ...] = ()  # empty = no allow-list
    max_file_size: int = 100 * MIB  # PyPI's default per-file limit; raise if PyPI granted more
    project_size_budget: int = 10 * 1024 * MIB


@dataclass(frozen=True)
class PublishConfig:
    retries: int = 5
    backoff: float = 1.0  # seconds, doubled each retry, with jitter
    max_backoff: float = 30.0
    parallel: int = 8  # concurrent uploads, at most one per file (tuned: benchmarks/bench_upload_shaped.py)
    timeout: float = 60.0
    rate_limit_wait_cap: float = 120.0


@dataclass(frozen=True)
class IndexTarget:
    repository_url: str
    simple_url: str = ""  # "" = derived from repository_url (publish_index.simple_url_for)


@dataclass(frozen=True)
class GithubTarget:
    repo: str = ""
    tag: str = ""
    title: str = ""
    notes_template: str = "release-notes.md.j2"
    api_url: str = "https://api.github.com"
    prune: bool = True
    nightly: str = "rolling"  # "rolling": one release, replaced; "dated": one immutable-safe release per night
    keep: int = 7  # dated nightlies kept (older ones deleted, their tags stay)


@dataclass(frozen=True)
class CIConfig:
    runner_labels: tuple[str, ...] = ("self-hosted", "gpu", "h100")
    environment: str = "release"


@dataclass(frozen=True)
class Config:
    project_dir: Path
    name: str
    version: str | None  # None when [project] declares the version dynamic
    # Where name/version come from: "pyproject" ([project] table) or "backend" (PEP 517 metadata,
    # for setup.py projects and dynamic fields; adapters/backend_meta.py).
    metadata_source: str = "pyproject"
    abi: str = "auto"  # auto | abi3 | py3 | per-python: how many wheels one platform needs
    python: tuple[str, ...] = DEFAULT_PYTHONS
    # Wheel platforms a release covers (manylinux_2_34_x86_64, win_amd64...): `ci init` writes one
    # build job each; () = the platform of the machine running the tool.
    platforms: tuple[str, ...] = ()
    cuda_arch: str = "90a"
    requires_gpu: bool = False
    precompile: tuple[str, ...] = ()
    precompile_inputs: tuple[str, ...] = ()
    precompile_outputs: str = ""
    out_dir: str = "dist-all"
    version_files: tuple[VersionFile, ...] = ()
    build: BuildConfig = field(default_factory=BuildConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    publish: PublishConfig = field(default_factory=PublishConfig)
    targets: dict[str, Any] = field(default_factory=dict)
    ci: CIConfig = field(default_factory=CIConfig)

    @property
    def out_path(self) -> Path:
        return (self.project_dir / self.out_dir).resolve()

    @property
    def dist_name(self) -> str:
        """The wheel filename prefix: the normalized name with underscores."""
        return self.name.replace("-", "_").replace(".", "_").lower()

    def github(self) -> GithubTarget:
        return self.targets.get("github", GithubTarget())

    def index_url(self, target: str) -> str | None:
        t = self.targets.get(target)
        return t.repository_url if isinstance(t, IndexTarget) else None


DEFAULT_TARGETS = {
    "pypi": IndexTarget("https://upload.pypi.org/legacy/", "https://pypi.org/simple/"),
    "testpypi": IndexTarget("https://test.pypi.org/legacy/", "https://test.pypi.org/simple/"),
}

_SECTIONS = {"build": BuildConfig, "verify": VerifyConfig, "publish": PublishConfig, "ci": CIConfig}
_TOP_SKIP = {"project_dir", "name", "version", "metadata_source", "build", "verify", "publish", "targets", "ci"}


def _fields(cls) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def _suggest(key: str, known) -> str:
    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _coerce(where: str, value: Any, default: Any, errors: list[str], from_env: bool = False) -> Any:
    """Check `value` against the type of `default`; env strings are parsed."""
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
        if from_env and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
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
            errors.append(f"{where}.{key}: unknown key{_suggest(key, known)}")
            continue
        values[key] = _coerce(f"{where}.{key}", value, _default(known[key]), errors)
    for key in known:
        env_name = f"{env_prefix}{key.upper()}"
        if env_name in env:
            values[key] = _coerce(env_name, env[env_name], _default(known[key]), errors, True)
    return cls(**values)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory()  # type: ignore[misc]


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
        raise ConfigError(f"no pyproject.toml with a [tool.kestrel-release] table in {Path.cwd()} or its parent "
                          "directories (up to the git root)",
                          "run `kestrel-release init` in your package's directory, or pass --project DIR")
    return found


def load(project: Path | None = None, overrides: dict[str, Any] | None = None,
         env: dict[str, str] | None = None, outputs: Sequence[Path] | None = None,
         defer_backend: bool = False) -> Config:
    """Load and validate the configuration; raise ConfigError listing every problem.

    A project without [project] gets its name and version from `outputs`' release manifest when
    given (an empty list: the configured out dir), else from the build backend; `defer_backend`
    leaves them unset (doctor asks the backend as one of its checks).
    """
    project_dir = find_project(project)
    env = dict(os.environ if env is None else env)
    pyproject = project_dir / "pyproject.toml"
    if not pyproject.is_file():
        raise ConfigError(f"no pyproject.toml in {project_dir}",
                          "pass --project DIR pointing at the kernel package (set one up with `kestrel-release init`)")
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:  # deep nesting recurses
        raise ConfigError(f"{pyproject}: not valid TOML: {exc}", "fix the syntax error") from None
    errors: list[str] = []
    name, version, source = _static_metadata(data, errors)
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        errors.append("[tool]: expected a table")
        tool = {}
    table = tool.get("kestrel-release", {})
    cfg = _build(project_dir, name, version, table, env, errors)
    cfg = dataclasses.replace(cfg, metadata_source=source)
    for key in env:
        if key.startswith("KESTREL_RELEASE_") and key not in RESERVED_ENV and key not in _env_names():
            errors.append(f"{key}: unknown variable{_suggest(key, _env_names())}")
    if overrides:
        cfg = _apply_overrides(cfg, overrides, errors)
    _validate(cfg, errors, _origins(env, overrides or {}))
    if errors:
        raise ConfigError(f"{len(errors)} configuration problem(s) " + _by_origin(errors, pyproject),
                          "fix them and run again")
    if source == "backend" and not defer_backend:
        cfg = _from_backend(cfg, outputs)
    return cfg


def _static_metadata(data: dict, errors: list[str]) -> tuple[str, str | None, str]:
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


def _from_backend(cfg: Config, outputs: Sequence[Path] | None = None) -> Config:
    """Fill name and version from a build output's manifest, else the backend's metadata (cached by its inputs)."""
    from kestrel_release.stages import output_identity, project_meta

    found = output_identity.from_outputs(outputs, cfg.out_path) if outputs is not None else None
    if found is not None:
        return dataclasses.replace(cfg, name=found[0], version=found[1])
    meta = project_meta.for_config(cfg)
    return dataclasses.replace(cfg, name=meta.name, version=meta.version)


def _build(project_dir, name, version, table, env, errors) -> Config:
    where = "[tool.kestrel-release]"
    if not isinstance(table, dict):
        errors.append(f"{where}: expected a table")
        table = {}
    known = _fields(Config)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in _SECTIONS or key == "targets":
            continue
        if key not in known or key in _TOP_SKIP:
            errors.append(f"{where}.{key}: unknown key{_suggest(key, set(known) - _TOP_SKIP | set(_SECTIONS) | {'targets'})}")
            continue
        if key == "version_files":
            values[key] = _version_files(value, errors)
            continue
        values[key] = _coerce(f"{where}.{key}", value, _default(known[key]), errors)
    for key in set(known) - _TOP_SKIP - {"version_files"}:
        env_name = f"KESTREL_RELEASE_{key.upper()}"
        if env_name in env:
            values[key] = _coerce(env_name, env[env_name], _default(known[key]), errors, True)
    for section, cls in _SECTIONS.items():
        values[section] = _section(cls, table.get(section, {}), f"{where}.{section}", errors,
                                   env, f"KESTREL_RELEASE_{section.upper()}_")
    values["targets"] = _targets(table.get("targets", {}), errors, env)
    return Config(project_dir=project_dir, name=name, version=version, **values)


def _version_files(value: Any, errors: list[str]) -> tuple[VersionFile, ...]:
    out = []
    if not isinstance(value, list):
        errors.append("[tool.kestrel-release].version_files: expected a list of {path, pattern}")
        return ()
    for i, item in enumerate(value):
        if (not isinstance(item, dict) or set(item) != {"path", "pattern"}
                or "{version}" not in str(item.get("pattern"))):
            errors.append(f"version_files[{i}]: expected {{path = ..., pattern = '...{{version}}...'}}")
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
        elif isinstance(body, dict) and set(body) <= {"repository_url", "simple_url"} and "repository_url" in body:
            targets[name] = IndexTarget(str(body["repository_url"]), str(body.get("simple_url", "")))
        else:
            bad = set(body) - {"repository_url", "simple_url"} if isinstance(body, dict) else {"?"}
            hint = _suggest(next(iter(bad)), {"repository_url", "simple_url"}) if bad else ""
            errors.append(f"{where}: an index target takes only repository_url and simple_url{hint}")
    if "github" not in targets:
        targets["github"] = _section(GithubTarget, {}, "github", errors, env, "KESTREL_RELEASE_GITHUB_")
    return targets


def _env_names() -> set[str]:
    names = {f"KESTREL_RELEASE_{k.upper()}" for k in _fields(Config) if k not in _TOP_SKIP | {"version_files"}}
    for section, cls in _SECTIONS.items():
        names |= {f"KESTREL_RELEASE_{section.upper()}_{k.upper()}" for k in _fields(cls)}
    names |= {f"KESTREL_RELEASE_GITHUB_{k.upper()}" for k in _fields(GithubTarget)}
    return names


def _apply_overrides(cfg: Config, overrides: dict[str, Any], errors: list[str]) -> Config:
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
FLAG_NAMES = {"python": "--python", "out_dir": "--out", "build.jobs": "--jobs", "build.frontend": "--frontend",
              "build.isolation": "--no-isolation"}


def _origins(env: dict[str, str], overrides: dict[str, Any]) -> dict[str, str]:
    """Key -> where its value came from when not pyproject.toml: the flag, else the variable."""
    out: dict[str, str] = {}
    for key in [k for k in _fields(Config) if k not in _TOP_SKIP]:
        out[key] = f"KESTREL_RELEASE_{key.upper()}"
    for section, cls in _SECTIONS.items():
        out.update({f"{section}.{k}": f"KESTREL_RELEASE_{section.upper()}_{k.upper()}" for k in _fields(cls)})
    out.update({f"targets.github.{k}": f"KESTREL_RELEASE_GITHUB_{k.upper()}" for k in _fields(GithubTarget)})
    out = {k: v for k, v in out.items() if v in env}
    out.update({k: FLAG_NAMES.get(k, k) for k, v in overrides.items() if v is not None})
    return out


def _by_origin(errors: list[str], pyproject: Path) -> str:
    """Group the problems by where they are: the file, the environment, the flags."""
    groups: dict[str, list[str]] = {}
    for error in errors:
        where = ("in environment variables" if error.startswith("KESTREL_RELEASE_")
                 else "in flags" if error.startswith("--") else f"in {pyproject}")
        groups.setdefault(where, []).append(error)
    return "; ".join(f"{where}: " + "; ".join(items) for where, items in groups.items())


def _validate(cfg: Config, errors: list[str], origins: dict[str, str] | None = None) -> None:
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
        errors.append(f"{at('abi')}: '{cfg.abi}' is not one of {', '.join(ABI_MODES)}{_suggest(cfg.abi, ABI_MODES)}")
    from kestrel_release.stages.build_platforms import problems as platform_problems

    errors += [f"{at('platforms')}{p[len('platforms'):]}" for p in platform_problems(cfg.platforms)]
    if cfg.build.min_glibc and not _is_glibc(cfg.build.min_glibc):
        errors.append(f"{at('build.min_glibc')}: '{cfg.build.min_glibc}' is not a glibc version like 2.28")
    if not cfg.publish.timeout > 0:  # 0 would mean "no deadline" to some clients and "fail at once" to others
        errors.append(f"{at('publish.timeout')}: expected a positive number of seconds, got {cfg.publish.timeout!r}")
    if cfg.build.frontend not in ("uv", "build"):
        errors.append(f"{at('build.frontend')}: '{cfg.build.frontend}' is not 'uv' or 'build'"
                      f"{_suggest(cfg.build.frontend, ['uv', 'build'])}")
    if cfg.version is not None:
        try:
            Version(cfg.version)
        except InvalidVersion:
            errors.append(f"[project].version: '{cfg.version}' is not a valid PEP 440 version")
    gh = cfg.github()
    if gh.repo and gh.repo.count("/") != 1:
        errors.append(f"{at('targets.github.repo')}: '{gh.repo}' is not OWNER/NAME")
    if gh.nightly not in ("rolling", "dated"):
        errors.append(f"{at('targets.github.nightly')}: '{gh.nightly}' is not 'rolling' or 'dated'"
                      f"{_suggest(gh.nightly, ['rolling', 'dated'])}")
    if gh.keep < 1:
        errors.append(f"{at('targets.github.keep')}: {gh.keep} keeps no nightly; use 1 or more")


def _is_glibc(text: str) -> bool:
    parts = text.split(".")
    return len(parts) == 2 and parts[0] == "2" and parts[1].isdigit()
