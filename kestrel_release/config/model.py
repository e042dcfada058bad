"""The configuration's shape: the frozen Config that stages read, and every name of its declarations.

Each setting is declared once, on a dataclass field: Config's own here, each table's in config_tables.py,
with config_defaults.py's defaults, allowed values and `doc(...)`. Its field gives the key, the type and
the default, and its metadata the one-paragraph description and the allowed values. The parser's checks
(config_parse), the variable names, the JSON Schema and the configuration reference (schema.py) are
derived from these declarations through config_settings.py. Callers import all of it from here.

Kept apart from config.py (loading) and config_parse.py (parsing, validation) so both import
it and neither imports the other at module level; `kestrel_release.config_loader.load` re-exports it all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.config.defaults import (
    ABI_MODES,
    COMPILE_CACHES,
    CONTAINER_ENGINES,
    CUDA_COMPRESS_MODES,
    DEFAULT_EXCLUDES,
    DEFAULT_FORBID,
    DEFAULT_PYTHONS,
    FRONTENDS,
    MIB,
    NIGHTLY_MODES,
    PRECOMPILE_PLACES,
    RESERVED_ENV,
    doc,
    not_a_key,
    table,
)
from kestrel_release.config.tables import (
    VERIFY_DEFAULT,
    BuildConfig,
    CIConfig,
    GithubTarget,
    IndexTarget,
    PublishConfig,
    SmokeTestConfig,
    VerifyConfig,
    VersionFile,
)
from kestrel_release.config.variants import VariantsConfig

# The names callers read from here (the defaults and the tables live in config_defaults and config_tables).
__all__ = [
    "ABI_MODES",
    "COMPILE_CACHES",
    "CONTAINER_ENGINES",
    "CUDA_COMPRESS_MODES",
    "DEFAULT_EXCLUDES",
    "DEFAULT_FORBID",
    "DEFAULT_PYTHONS",
    "FRONTENDS",
    "MIB",
    "NIGHTLY_MODES",
    "PRECOMPILE_PLACES",
    "RESERVED_ENV",
    "VERIFY_DEFAULT",
    "BuildConfig",
    "CIConfig",
    "Config",
    "GithubTarget",
    "IndexTarget",
    "PublishConfig",
    "SmokeTestConfig",
    "VerifyConfig",
    "VersionFile",
    "doc",
    "not_a_key",
    "table",
]


@dataclass(frozen=True)
class Config:
    project_dir: Path = field(metadata=not_a_key("The project's directory."))
    name: str = field(metadata=not_a_key("The project's name, from [project] or the build backend."))
    version: str | None = field(metadata=not_a_key("The project's version; None when [project] declares it dynamic."))
    metadata_source: str = field(
        default="pyproject",
        metadata=not_a_key(
            'Where name/version come from: "pyproject" ([project]) or "backend" (PEP 517 metadata, for setup.py '
            "projects and dynamic fields; project/backend_meta.py)."
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
            "The torch x CUDA matrix (config/variants.py): build a torch extension once per torch minor x CUDA "
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
