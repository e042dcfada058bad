"""The configuration's shape: defaults, constants and the frozen dataclasses stages read.

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
ABI_MODES = ("auto", "abi3", "py3", "per-python")
CUDA_COMPRESS_MODES = ("none", "default", "size", "speed", "balance")
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
    # nvcc's fat-binary compression (--compress-mode, CUDA 12.8+) for the precompile step, through
    # NVCC_APPEND_FLAGS: none|default|size|speed|balance; "" = the toolkit's own default.
    cuda_compress: str = ""
    isolation: bool = True
    # An image to build Linux wheels in (their glibc floor is the image's), or for the chroot engine a
    # root directory; "" = build on this host. stages/build/container.py.
    container: str = ""
    container_engine: str = (
        ""  # docker | podman | chroot; "" = chroot for a directory, else podman if installed, else docker
    )
    # Where the precompile step runs with build.container: "host" (its outputs go into the image's
    # builds with the sources) or "container" (in the image, with the image's CUDA toolkit).
    precompile_in: str = "host"


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
    # Concurrent uploads, at most one per file. Each long-haul TCP connection gets 1-1.5 MB/s, so more of them
    # fill the uplink: 25 wheels of 8 MiB through benchmarks/bench_upload_scale.py's link took 43 s on 8
    # connections (four waves, the last one file alone) and 21 s on 16 or 32 alike. PyPI rate-limits new
    # projects and failed uploads, not parallel ones; 16 keeps threads, sockets and the index's load modest.
    parallel: int = 16
    timeout: float = 60.0
    rate_limit_wait_cap: float = 120.0


@dataclass(frozen=True)
class SmokeTestConfig:
    # A command run in each smoke venv after the install (the package's GPU tests): a shell command line,
    # `{python}` = the venv's interpreter, `{project}` = the project dir; "" = none.
    command: str = ""
    # Distributions of the host interpreter the smoke venv sees instead of fetching them (torch on an
    # offline GPU host): exposed with their installed requirements, nothing else of the host's.
    reuse: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexTarget:
    """An index target's settings (targets/pypi.py); `verify_rules`: see targets/base.py Target."""

    verify_rules: ClassVar[str] = "index"
    repository_url: str
    simple_url: str = ""  # "" = derived from repository_url (publish_index.simple_url_for)


@dataclass(frozen=True)
class GithubTarget:
    """The GitHub release's settings (targets/github.py)."""

    verify_rules: ClassVar[str] = "asset"
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
    # Where the workflow's jobs install kestrel-release from (it is on no index): git+https://HOST/PATH@COMMIT;
    # "" = the exact commit of the running tool, when it knows one (adapters/tool_origin.py).
    tool_source: str = ""


@dataclass(frozen=True)
class Config:
    project_dir: Path
    name: str
    version: str | None  # None when [project] declares the version dynamic
    # Where name/version come from: "pyproject" ([project] table) or "backend" (PEP 517 metadata,
    # for setup.py projects and dynamic fields; adapters/backend_meta.py).
    metadata_source: str = "pyproject"
    # True when no file of ours pins the version ([project] dynamic = ["version"], or no [project] table):
    # a stage may fill `version` from the backend, and that never makes [project].version exist.
    version_dynamic: bool = False
    abi: str = "auto"  # auto | abi3 | py3 | per-python: how many wheels one platform needs
    # CPythons to build: "3.12", or "3.14t" for a free-threaded build (pyversions.problem checks them).
    python: tuple[str, ...] = DEFAULT_PYTHONS
    # Wheel platforms a release covers (manylinux_2_34_x86_64, win_amd64...): `ci init` writes one
    # build job each; () = the platform of the machine running the tool.
    platforms: tuple[str, ...] = ()
    # CUDA architectures to build ("90a", "100f", "110@13.0" = by CUDA 13.0 only); a string may list
    # several ("80,90a"). cuda: the toolkits building them (() = the one nvcc found); cuda_ptx: archs
    # that also get PTX. Rules: cuda_rules.py.
    cuda_arch: tuple[str, ...] = ("90a",)
    cuda: tuple[str, ...] = ()
    cuda_ptx: tuple[str, ...] = ()
    requires_gpu: bool = False
    precompile: tuple[str, ...] = ()
    precompile_inputs: tuple[str, ...] = ()
    precompile_outputs: str = ""
    out_dir: str = "dist-all"
    version_files: tuple[VersionFile, ...] = ()
    build: BuildConfig = field(default_factory=BuildConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    publish: PublishConfig = field(default_factory=PublishConfig)
    smoke_test: SmokeTestConfig = field(default_factory=SmokeTestConfig)
    targets: dict[str, Any] = field(default_factory=dict)
    ci: CIConfig = field(default_factory=CIConfig)
    # [tool.kestrel-release.variants]: the torch x CUDA matrix (variants/model.py); None = no variants, one
    # build per Python as always.
    variants: VariantsConfig | None = None

    @property
    def out_path(self) -> Path:
        return (self.project_dir / self.out_dir).resolve()

    @property
    def dist_name(self) -> str:
        """The wheel filename prefix: the normalized name with underscores."""
        return self.name.replace("-", "_").replace(".", "_").lower()

    def github(self) -> GithubTarget:
        """The GitHub release's settings (the first target of that kind; targets/github.py owns the name)."""
        return next((t for t in self.targets.values() if isinstance(t, GithubTarget)), GithubTarget())
