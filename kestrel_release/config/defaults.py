"""The configuration's defaults, the allowed values of its word settings, and the helpers that declare a setting.

A setting's field carries its declaration in its metadata (`doc(...)`, `table(...)`, `not_a_key(...)`);
config_tables.py and config_model.py declare their fields with these. Kept apart so both import them
without importing each other.
"""

from __future__ import annotations

from typing import Any

from kestrel_release.facts import pyversions

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
    "KESTREL_RELEASE_TORCH_PYPI",
    "KESTREL_RELEASE_TORCH_INDEX",
}  # BUILDER: the CI leg's label, recorded in the build manifest; SIGN_PASSPHRASE: sign_key's (adapters/ssh_sign.py);
# TORCH_PYPI / TORCH_INDEX: a mirror to read torch's CUDA facts from (adapters/pypi/torch_cuda, adapters/pytorch_index)


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
