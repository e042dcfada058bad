"""Test material for CUDA: a table of nvcc-built binaries and a cuobjdump reference reader.

The nvcc table is built once per nvcc version into a cache under the temp dir
(several nvcc jobs in parallel); later sessions reuse it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNEL = HERE / "kernel.cu"
GEN = "-gencode"

# name -> nvcc arguments (the output path and source are added).
CASES: dict[str, list[str]] = {
    "sm80.cubin": ["-cubin", "-arch=sm_80"],
    "sm90.cubin": ["-cubin", "-arch=sm_90"],
    "sm90a.cubin": ["-cubin", "-arch=sm_90a"],
    "sm100a.cubin": ["-cubin", "-arch=sm_100a"],
    "sm120f.cubin": ["-cubin", "-arch=sm_120f"],
    "sm90a-ndebug.cubin": ["-cubin", "-arch=sm_90a", "-DNDEBUG"],
    "sm90a-ndebug.so": ["-shared", "-Xcompiler", "-fPIC", "-DNDEBUG", GEN, "arch=compute_90a,code=sm_90a"],
    "sm90a-G.cubin": ["-cubin", "-arch=sm_90a", "-G"],
    "sm90a-lineinfo.cubin": ["-cubin", "-arch=sm_90a", "-lineinfo"],
    "ptx90a.fatbin": ["-fatbin", GEN, "arch=compute_90a,code=[sm_90a,compute_90a]"],
    "multi.fatbin": [
        "-fatbin",
        GEN,
        "arch=compute_80,code=sm_80",
        GEN,
        "arch=compute_90,code=sm_90",
        GEN,
        "arch=compute_100a,code=sm_100a",
        GEN,
        "arch=compute_120f,code=sm_120f",
    ],
    "G.fatbin": ["-fatbin", "-G", GEN, "arch=compute_90a,code=[sm_90a,compute_90a]"],
    "lineinfo-all.fatbin": ["-fatbin", "-lineinfo", "-Xfatbin=-compress-all", GEN, "arch=compute_90a,code=sm_90a"],
    "size.fatbin": ["-fatbin", "--compress-mode=size", GEN, "arch=compute_90,code=[sm_90,compute_90]"],
    "speed-all.fatbin": [
        "-fatbin",
        "--compress-mode=speed",
        "-Xfatbin=-compress-all",
        "-G",
        GEN,
        "arch=compute_90,code=[sm_90,compute_90]",
    ],
    "none.fatbin": ["-fatbin", "--compress-mode=none", GEN, "arch=compute_90,code=[sm_90,compute_90]"],
    "sm90a.so": ["-shared", "-Xcompiler", "-fPIC", GEN, "arch=compute_90a,code=sm_90a"],
    "ptx-lineinfo.so": [
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-lineinfo",
        GEN,
        "arch=compute_90a,code=[sm_90a,compute_90a]",
    ],
    "rdc.so": ["-shared", "-Xcompiler", "-fPIC", "-rdc=true", GEN, "arch=compute_90,code=[sm_90,compute_90]"],
    "rdc.o": ["-c", "-rdc=true", GEN, "arch=compute_90,code=[sm_90,compute_90]"],
    "lto.o": ["-c", "-rdc=true", GEN, "arch=compute_90,code=lto_90"],
    "sm80.o": ["-c", GEN, "arch=compute_80,code=sm_80"],
}


def nvcc_version() -> str | None:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout


def build_cuda_matrix(jobs: int = 3) -> Path:
    """Build every CASES entry once per nvcc version; returns the cache directory."""
    version = nvcc_version()
    assert version is not None, "nvcc is not on PATH"
    key = hashlib.sha256((version + repr(CASES) + KERNEL.read_text()).encode()).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"kestrel-cuda-matrix-{key}"
    cache.mkdir(exist_ok=True)
    source = cache / "kernel.cu"
    if not source.exists():
        shutil.copy(KERNEL, source)
    todo = [name for name in CASES if not (cache / name).exists()]
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(lambda name: _nvcc(cache, source, name), todo))
    return cache


def _nvcc(cache: Path, source: Path, name: str) -> None:
    # The absolute source path is what -G/-lineinfo builds leak; temp + rename for parallel sessions.
    tmp = cache / f".{name}.{os.getpid()}.tmp"
    subprocess.run(["nvcc", *CASES[name], "-o", str(tmp), str(source)], check=True, cwd=cache, capture_output=True)
    os.replace(tmp, cache / name)


def cuobjdump() -> Path | None:
    """The cuobjdump binary of the nvidia-cuda-cuobjdump wheel in this venv, if installed."""
    import site
    import sys

    roots = [Path(p) for p in site.getsitepackages()] + [Path(sys.prefix)]
    for root in roots:
        for found in root.glob("nvidia/**/bin/cuobjdump"):
            return found
    return shutil.which("cuobjdump") and Path(shutil.which("cuobjdump"))  # type: ignore[arg-type]


def cuobjdump_report(path: Path) -> tuple[list[str], list[str], bool] | None:
    """SASS and PTX as `cuobjdump -lelf -lptx -all` lists them; debug as cuobjdump shows it: an entry's
    'has debug info', or a DWARF / line / PTX-text section with content in `cuobjdump -elf`
    (not .debug_frame, in every cubin, nor the `.nv_debug.shared` memory placeholder). None without cuobjdump."""
    import re

    tool = cuobjdump()
    if tool is None:
        return None

    def run(*args: str) -> str:
        return subprocess.run([str(tool), *args, str(path)], capture_output=True, text=True, check=False).stdout

    listing = run("-lelf", "-lptx", "-all")  # -all: also __nv_relfatbin, where -rdc PTX ships
    sass = sorted(set(re.findall(r"^ELF file\s+\d+: .*\.(sm_\w+)\.cubin$", listing, re.MULTILINE)))
    ptx = sorted(
        {
            a.replace("sm_", "compute_")
            for a in re.findall(r"^PTX file\s+\d+: .*\.(sm_\w+)\.ptx$", listing, re.MULTILINE)
        }
    )
    dump = run("-all", "-elf")
    rows = re.findall(
        r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+\S+\s+(\S+)\s+\S+\s+\S+\s+\S+\s+"
        r"(\.debug_\w+|\.nv_debug\S*)$",
        dump,
        re.MULTILINE,
    )
    debug = "has debug info" in dump or any(
        int(size, 16) > 0
        and kind not in ("NOBITS", "CUDA_SHARED")
        and name != ".debug_frame"
        and not name.startswith(".nv_debug.")
        for size, kind, name in rows
    )
    return sass, ptx, debug
