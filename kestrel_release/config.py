"""Configuration: defaults -> [tool.kestrel-release] -> KESTREL_RELEASE_* env -> flags.

Every problem is collected and reported at once (exit 2), unknown keys get a
"did you mean" suggestion. The result is a frozen dataclass tree that stages read.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release._compat import tomllib
from kestrel_release.errors import ConfigError

DEFAULT_PYTHONS = ("3.10", "3.11", "3.12", "3.13")
# What auditwheel must never graft: torch and the CUDA runtime come from the user's install at run
# time (docs/real-packages.md section 3). Patterns are fnmatch on the soname; "lib*" covers both
# "libcudart.so" and "libcudart.so.13".
DEFAULT_EXCLUDES = (
    "libtorch*",
    "libc10*",
    "libcuda.so*",
    "libcudart*",
    "libcublas*",
    "libcublasLt*",
    "libnvrtc*",
    "libcudnn*",
    "libnccl*",
    "libcufft*",
    "libcurand*",
    "libcusparse*",
    "libcusolver*",
    "libnvJitLink*",
    "libcuda_dialect_runtime*",
    "libtvm_ffi*",
)
ABI_MODES = ("auto", "abi3", "py3", "per-python")
# What must never ship from a kernel package: C/C++/CUDA sources and headers, Cython sources
# (.pyx/.pxi; a .pxd is the cimport interface dependents need, so it may ship), kernel templates,
# source and script directories at any depth, and tests at the top of the wheel only: a top-level
# `tests` package lands in site-packages and clashes with every other, while `<pkg>/tests/` is
# shipped on purpose by many packages. A leading "/" anchors a pattern at the wheel's root.
DEFAULT_FORBID = (
    "*.c",
    "*.cc",
    "*.cpp",
    "*.cxx",
    "*.c++",
    "*.cu",
    "*.cuh",
    "*.h",
    "*.hh",
    "*.hpp",
    "*.hxx",
    "*.pyx",
    "*.pxi",
    "**/kernel.py",
    "**/cute_moe_*.py",
    "**/flash_*.py",
    "csrc/**",
    "scripts/**",
    "/tests/**",
    "/test/**",
)
MIB = 1024 * 1024
# Variables under the prefix that are not configuration keys.
RESERVED_ENV = {
    "KESTREL_RELEASE_DEBUG",
    "KESTREL_RELEASE_CACHE_DIR",
    "KESTREL_RELEASE_FAIL_AT",
    "KESTREL_RELEASE_BUILDER",
}  # BUILDER: the CI leg's label, recorded in the build manifest


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


DEFAULT_TARGETS = {
    "pypi": IndexTarget("https://upload.pypi.org/legacy/", "https://pypi.org/simple/"),
    "testpypi": IndexTarget("https://test.pypi.org/legacy/", "https://test.pypi.org/simple/"),
}


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
    outputs: Sequence[Path] | None = None,
    defer_backend: bool = False,
) -> Config:
    """Load and validate the configuration; raise ConfigError listing every problem.

    A project without [project] gets its name and version from `outputs`' release manifest when
    given (an empty list: the configured out dir), else from the build backend; `defer_backend`
    leaves them unset (doctor asks the backend as one of its checks).
    """
    from kestrel_release import config_parse  # imports this module: loaded here, not at the top

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
    cfg = dataclasses.replace(cfg, metadata_source=source)
    for key in env:
        if key.startswith("KESTREL_RELEASE_") and key not in RESERVED_ENV and key not in config_parse.env_names():
            errors.append(f"{key}: unknown variable{config_parse.suggest(key, config_parse.env_names())}")
    if overrides:
        cfg = config_parse.apply_overrides(cfg, overrides, errors)
    config_parse.validate(cfg, errors, config_parse.origins(env, overrides or {}))
    if errors:
        raise ConfigError(
            f"{len(errors)} configuration problem(s) " + config_parse.by_origin(errors, pyproject),
            "fix them and run again",
        )
    if source == "backend" and not defer_backend:
        cfg = _from_backend(cfg, outputs)
    return cfg


def _from_backend(cfg: Config, outputs: Sequence[Path] | None = None) -> Config:
    """Fill name and version from a build output's manifest, else the backend's metadata (cached by its inputs)."""
    from kestrel_release import output_identity, project_meta

    found = output_identity.from_outputs(outputs, cfg.out_path) if outputs is not None else None
    if found is not None:
        return dataclasses.replace(cfg, name=found[0], version=found[1])
    meta = project_meta.for_config(cfg)
    return dataclasses.replace(cfg, name=meta.name, version=meta.version)
