"""Verify on large wheels: `kestrel-release verify` against sha256sum (the floor) and the peers.

Generates four wheels (cp310-cp313, about 250 MB each; quick: about 40 MB)
whose `_C` extension embeds a real nvcc-built fat binary (sm_90a SASS, cubins
compressed by nvcc) repeated in `.nv_fatbin` until the size is reached, plus
the same precompiled cubins in each wheel, deflated like a real wheel. They
verify clean. Then times, fresh processes, median of several rounds:
  - kestrel-release verify DIR (the full gate: integrity, leaks, CUDA, PyPI rules, matrix)
  - sha256sum of the wheels (reading and hashing the bytes: the floor)
  - check-wheel-contents + twine check --strict (today's tools, which check far less)

Usage: uv run python benchmarks/bench_verify.py [--quick]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.data.cuda.builders import KERNEL, nvcc_version  # noqa: E402 (after the sys.path line)
from tests.factories import make_verify_project, make_wheel  # noqa: E402

VENV_BIN = Path(sys.executable).parent
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PKG = "kestrel_kernels"
FLOOR_TARGET = 1.5


def _sh(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)


def _kernels_source() -> str:
    """34 template instantiations: a ~65 KB fatbin, larger than deflate's 32 KB window,
    so the repeated units do not collapse when the wheel is deflated (like real kernel code)."""
    lines = [
        "template <typename T, int N> __global__ void unrolled(T* a, const T* b) {",
        "  T acc = 0;",
        "#pragma unroll",
        "  for (int i = 0; i < N; ++i) acc += a[threadIdx.x * N + i] * b[(i * 7 + threadIdx.x) % 1024] + T(i);",
        "  a[threadIdx.x] = acc;",
        "}",
    ]
    lines += [
        f"template __global__ void unrolled<{t}, {n}>({t}*, const {t}*);"
        for t in ("float", "double")
        for n in range(16, 272, 16)
    ]
    return "\n".join(lines) + "\n"


def _extension(work: Path, size: int) -> bytes:
    """A host .so whose .nv_fatbin holds a real fatbin repeated up to `size` bytes."""
    (work / "kernels.cu").write_text(_kernels_source())
    _sh(
        [
            "nvcc",
            "-fatbin",
            "-DNDEBUG",
            "-Xfatbin=-compress-all",
            "-gencode",
            "arch=compute_90a,code=sm_90a",
            "-o",
            "k.fatbin",
            "kernels.cu",
        ],
        work,
    )
    _sh(["nvcc", "-cubin", "-DNDEBUG", "-arch=sm_90a", "-o", "k.cubin", str(KERNEL)], work)
    unit = (work / "k.fatbin").read_bytes()
    unit += bytes(-len(unit) % 8)  # containers sit 8-byte aligned
    (work / "big.fatbin").write_bytes(unit * max(1, size // len(unit)))
    (work / "ext.S").write_text(
        '.section .nv_fatbin,"a"\n.balign 8\n.incbin "big.fatbin"\n.section .note.GNU-stack,"",@progbits\n'
    )
    _sh(["gcc", "-shared", "-o", "_C.so", "ext.S"], work)
    return (work / "_C.so").read_bytes()


def generate(directory: Path, size: int) -> Path:
    """Write the four wheels and a project that configures them; returns the project dir."""
    work = directory / "work"
    work.mkdir(parents=True, exist_ok=True)
    ext = _extension(work, size)
    cubin = (work / "k.cubin").read_bytes()
    dist = directory / "dist-all"
    dist.mkdir(exist_ok=True)
    for py in PYTHONS:
        tag = f"cp{py.replace('.', '')}"
        files = {
            f"{PKG}/__init__.py": b'__version__ = "0.1.0"\n',
            f"{PKG}/_C.{tag.replace('cp', 'cpython-')}-x86_64-linux-gnu.so": ext,
            **{f"{PKG}/precompiled/k{i}.cubin": cubin for i in range(8)},
        }
        make_wheel(
            dist,
            files,
            tag=f"{tag}-{tag}-manylinux_2_34_x86_64",
            extra_metadata="Summary: bench\nDescription-Content-Type: text/plain\n\nKernels.\n",
        )
    shutil.rmtree(work)
    limit = f'max_file_size = "{size * 2 // 2**20 + 1} MiB"'  # the config declares a granted limit
    return make_verify_project(directory, pythons=PYTHONS, verify=limit)


def _cached_wheels(size: int) -> Path:
    key = hashlib.sha256(f"{size}{nvcc_version()}{KERNEL.read_text()}v3".encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"kestrel-bench-verify-{key}"
    if not (root / "pyproject.toml").exists():
        shutil.rmtree(root, ignore_errors=True)
        tmp = root.with_name(root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        generate(tmp, size)
        tmp.rename(root)
    return root


def _time(argv: list, ok_codes=(0,), env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in ok_codes:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {(done.stdout + done.stderr)[-500:]}")
    return elapsed


def run(quick: bool) -> dict:
    """Generate (or reuse) the wheels and time the three commands; returns figures in seconds."""
    if nvcc_version() is None:
        raise RuntimeError("nvcc is not on PATH: cannot build the fat binaries")
    size = 40 * 10**6 if quick else 250 * 10**6
    project = _cached_wheels(size)
    wheels = sorted((project / "dist-all").glob("*.whl"))
    rounds = 3 if quick else 5
    tool = [VENV_BIN / "kestrel-release", "verify", project / "dist-all", "--project", project]
    _time(tool)  # warm the page cache; also proves the wheels verify clean (exit 0)
    samples: dict[str, list[float]] = {"verify": [], "sha256sum": [], "check_wheel_contents": [], "twine_check": []}
    scratch = Path(tempfile.mkdtemp(prefix="kestrel-bench-verify-"))
    for _ in range(rounds):
        samples["sha256sum"].append(_time(["sha256sum", *wheels]))
        # An empty cache dir each round: a first verify of these bytes, never a stored verdict (verdicts.py).
        shutil.rmtree(scratch / "cache", ignore_errors=True)
        samples["verify"].append(_time(tool, env={**os.environ, "KESTREL_RELEASE_CACHE_DIR": str(scratch / "cache")}))
        # check-wheel-contents exits 1 on its own W-codes; we time it, not judge it.
        samples["check_wheel_contents"].append(_time([VENV_BIN / "check-wheel-contents", *wheels], (0, 1)))
        samples["twine_check"].append(_time([VENV_BIN / "twine", "check", "--strict", *wheels]))
    shutil.rmtree(scratch, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in samples.items()}
    peers = med["check_wheel_contents"] + med["twine_check"]
    return {
        "quick": quick,
        "wheels": len(wheels),
        "wheel_bytes": [w.stat().st_size for w in wheels],
        "total_bytes": sum(w.stat().st_size for w in wheels),
        "rounds": rounds,
        "samples": samples,
        "median": med,
        "peers_median": peers,
        "ratio_to_sha256sum": med["verify"] / med["sha256sum"],
        "ratio_to_peers": med["verify"] / peers,
        "floor_target": FLOOR_TARGET,
        "met_floor": med["verify"] / med["sha256sum"] <= FLOOR_TARGET,
        "met_peers": med["verify"] < peers,
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2))
