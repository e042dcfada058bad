"""What a build's bytes depend on besides its sources: the toolchain, as every build cache sees it.

Why: the wheel cache, the precompile cache and scikit-build-core's persistent build dir skip work
when their key matches. Keys that covered only the sources served a wheel built by another
compiler (`CXX=/usr/bin/g++` got the old wheel back in 5 s, with the defect verify had named) or
with other flags (`CXXFLAGS=-O0`, then a plain build served the -O0 wheel).

Covered, from the environment the build runs in (os.environ with build.env on top):
- ENV: the variables compilers, linkers and build backends read (compilers, flags, CUDA and include
  paths, target architectures, CMake/scikit-build/setuptools-scm settings), and every variable
  starting with one of PREFIXES;
- the compilers actually used: CC and CXX (default `cc`/`c++`, as CMake and meson pick them),
  CUDAHOSTCXX, NVCC_CCBIN and the interpreter's own sysconfig CC/CXX (setuptools' default) are
  resolved on PATH and recorded with path, size, mtime and the first line of `--version` (cached
  per binary, so a warm build runs no compiler); nvcc's version comes from preflight;
- where the build env can be inspected (the reusable build env, or the interpreter itself with
  isolation off) the installed versions of the build requirements and their dependencies (asked of
  the env's interpreter; a venv's answer is kept until its site-packages, pyvenv.cfg, interpreter,
  PYTHON* variables or the requirement names change, so a warm build starts no probe per Python).

Not covered, on purpose: parallelism (MAX_JOBS, CMAKE_BUILD_PARALLEL_LEVEL, MAKEFLAGS, NVCC_THREADS)
and the compile cache (build.compile_cache, its launchers and CCACHE_* variables) change how fast a
build runs, not what it writes (builds are byte-reproducible, which
`--check-reproducible` checks); PATH itself (the compilers it resolves to are keyed instead).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from kestrel_release.adapters import pythons, toolchain
from kestrel_release.files import fsutil

ENV = (
    # compilers and tools
    "CC", "CXX", "CPP", "LD", "AR", "RANLIB", "LDSHARED", "LDCXXSHARED", "CUDAHOSTCXX", "CUDACXX",
    "NVCC_CCBIN", "HIPCC",
    # flags
    "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "ARFLAGS", "OPT", "CUDAFLAGS", "NVCC_FLAGS",
    "TORCH_NVCC_FLAGS",
    # toolkits and search paths
    "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME", "ROCM_HOME", "ROCM_PATH", "CPATH", "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR",
    # targets
    "TORCH_CUDA_ARCH_LIST", "CUDAARCHS", "PYTORCH_ROCM_ARCH", "MACOSX_DEPLOYMENT_TARGET", "ARCHFLAGS",
    "_PYTHON_HOST_PLATFORM", "SETUPTOOLS_EXT_SUFFIX", "DEBUG",
)  # fmt: skip
PREFIXES = (
    *("NVCC_", "CMAKE_", "SKBUILD_", "TORCH_CUDA_", "KESTREL_KERNELS_", "MESONPY_"),
    # The version tools' (a pretend version is a version): as the metadata cache keys them.
    *("SETUPTOOLS_SCM_", "PDM_BUILD_SCM_", "POETRY_DYNAMIC_VERSIONING_", "HATCH_VCS_", "VERSIONEER_"),
)
NOT_KEYED = {
    *("MAX_JOBS", "CMAKE_BUILD_PARALLEL_LEVEL", "MAKEFLAGS", "NVCC_THREADS", "CMAKE_COLOR_DIAGNOSTICS"),
    # The compile cache's launchers: ccache serves an object only for the same compiler, flags and
    # preprocessed source, so whether it ran changes how long a build takes, not what it writes.
    *("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"),
}
# The build settings that change how a build runs, not what it writes (left out of every key).
NOT_KEYED_SETTINGS = ("jobs", "compile_jobs", "memory_per_job", "compile_cache", "compile_cache_dir")
# Compilers: the variable, and what is used when it is unset (None: nothing).
COMPILERS = (("CC", "cc"), ("CXX", "c++"), ("CUDAHOSTCXX", None), ("NVCC_CCBIN", None))


def keyed_env(env: dict[str, str]) -> dict[str, str]:
    """The variables of `env` that change what a build writes (see the module doc)."""
    return {k: v for k, v in sorted(env.items()) if k not in NOT_KEYED and (k in ENV or k.startswith(PREFIXES))}


def _describe(compiler: Path) -> str:
    try:
        st = compiler.stat()
    except OSError:
        return f"{compiler} (missing)"
    return f"{compiler} ({toolchain.compiler_version(compiler)}; {st.st_size} bytes, mtime {st.st_mtime_ns})"


def compilers(env: dict[str, str], sysconfig: dict[str, str] | None = None) -> dict[str, str]:
    """label -> "path (version line; size, mtime)" of every compiler the build may call."""
    wanted = [(name, env.get(name) or default) for name, default in COMPILERS]
    wanted += [(f"sysconfig {k}", v) for k, v in sorted((sysconfig or {}).items()) if k in ("CC", "CXX")]
    out: dict[str, str] = {}
    for label, spec in wanted:
        if not spec:
            continue
        found = toolchain.resolve_compiler(spec, env)
        out[label] = _describe(found) if found else f"{spec} (not found)"
    return out


def requirement_names(project: Path, extra: Sequence[str] = ()) -> list[str]:
    """The names in [build-system].requires (setuptools when there is none, as PEP 517 says) and build.requires."""
    from kestrel_release.project import build_env

    try:
        requires = build_env.build_system(project, extra)["requires"]
    except Exception:  # an unreadable pyproject.toml: the build itself reports it
        return []
    names = (re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r) for r in requires)
    return sorted({m.group(1) for m in names if m})


def build_env_facts(python: Path, project: Path, env: dict[str, str], extra: Sequence[str] = ()) -> dict | None:
    """The build env's installed requirement versions and default compilers, or None (no answer).

    Asked of the env's interpreter (a child process per Python, seconds of a warm build on a busy
    machine), and remembered for a virtual env whose inputs are unchanged: see `_facts_key`."""
    names = requirement_names(project, extra)
    key = _facts_key(python, names, env)
    entry = toolchain.cache_dir() / "build-facts" / f"{key}.json" if key else None
    if entry is not None:
        with contextlib.suppress(OSError, ValueError):
            cached = json.loads(entry.read_text())
            if isinstance(cached, dict):
                return cached
    facts = pythons.build_facts(python, names, env)
    if entry is not None and facts is not None:
        with contextlib.suppress(OSError):
            fsutil.atomic_write_text(entry, json.dumps(facts))
    return facts


def _facts_key(python: Path, names: list[str], env: dict[str, str]) -> str | None:
    """What the facts of a virtual env depend on: the interpreter (path, and size and mtime of the binary
    it resolves to), pyvenv.cfg, the listing of its site-packages (a dir's mtime changes with every
    package installed, upgraded or removed), the requirement names, the PYTHON* variables and the
    probe itself. None (always ask) for an interpreter outside a venv or one that sees the system's
    site-packages: what is installed there is not in this key."""
    root = python.parent.parent
    try:
        cfg = (root / "pyvenv.cfg").read_text(errors="replace")
        if re.search(r"(?im)^\s*include-system-site-packages\s*=\s*true", cfg):
            return None
        binary = python.resolve().stat()
        sites = sorted({*root.glob("lib*/python*/site-packages"), *root.glob("Lib/site-packages")})
        listing = [(str(d), d.stat().st_mtime_ns) for d in sites]
    except OSError:
        return None
    if not listing:
        return None
    variables = {k: v for k, v in env.items() if k.startswith(("PYTHON", "_PYTHON"))}
    parts = [str(python), binary.st_size, binary.st_mtime_ns, cfg, listing, names, variables, pythons.FACTS_PROBE]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def short(value: str) -> str:
    """A value that must not be shown (build.env may hold anything): a short digest of it."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]
