"""Render every kernel variant and compile it ahead of time to a cubin.

Run from the project directory (``kernels/``)::

    python -m scripts.precompile [--kernels NAME ...] [--out DIR] [--jobs N] [--arch 90a]

For each variant of each family template (``python/kestrel_kernels/<family>/kernel.py``)
the rendered CUDA source is compiled with nvcc (``$CUDACXX`` or PATH) into
``<out>/<variant>.cubin`` for exactly one real architecture: no PTX, no ``-G``,
no ``-lineinfo``, ``-DNDEBUG``. ``<out>/manifest.json`` records each variant's
cubin, sha256, arch and a hash of everything that went into it (rendered source,
template, headers, nvcc version, flags). A variant whose input hash is unchanged
and whose cubin still has the recorded sha256 is skipped, and when every variant
is up to date no nvcc process runs at all: nvcc's version is cached by path,
mtime and size. Architecture, first match wins: ``--arch``,
``$KESTREL_KERNELS_CUDA_ARCH``, ``-DKESTREL_KERNELS_CUDA_ARCH=`` in ``$CMAKE_ARGS``,
``$TORCH_CUDA_ARCH_LIST`` (``9.0a`` -> ``90a``), default ``90a``.

Exit codes: 0 ok, 2 usage/configuration, 3 nvcc missing, 4 a compile failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import difflib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "kestrel_kernels"
CSRC = ROOT / "csrc"
DEFAULT_OUT = PACKAGE / "precompiled"
FAMILIES = ("silu_and_mul", "topk", "moe_align")
DEFAULT_ARCH = "90a"
MANIFEST_FORMAT = 1
NVCC_CACHE = ".nvcc-version-cache.json"
LOCK_FILE = ".precompile.lock"

# Relative include path on purpose: it goes into the input hash, and nvcc runs
# with ROOT as its working directory, so no absolute path reaches a cubin.
BASE_FLAGS = ("-cubin", "-O3", "-DNDEBUG", "-std=c++17", "-Icsrc", "-Xptxas=-warn-spills")


class PrecompileError(Exception):
    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Variant:
    family: str
    name: str
    params: dict
    kernels: list
    source: str
    template_sha256: str


# ---- architecture ---------------------------------------------------------------


def normalize_arch(value: str, origin: str) -> str:
    """'90a', 'sm_90a', 'compute_90a', '9.0a' -> '90a'."""
    v = value.strip().lower()
    v = re.sub(r"^(sm_|compute_)", "", v)
    m = re.fullmatch(r"(\d+)\.(\d)([af]?)", v)
    if m:
        v = f"{m.group(1)}{m.group(2)}{m.group(3)}"
    if not re.fullmatch(r"\d{2,3}[af]?", v):
        raise PrecompileError(f"{origin}: {value!r} is not a CUDA architecture (expected e.g. 90a or 9.0a)")
    return v


def arch_from_torch_list(value: str) -> str:
    entries = [e for e in re.split(r"[;\s,]+", value.strip()) if e]
    if any(e.upper().endswith("+PTX") for e in entries):
        raise PrecompileError(f"TORCH_CUDA_ARCH_LIST={value!r}: kestrel-kernels ships no PTX; drop '+PTX'")
    if len(entries) != 1:
        raise PrecompileError(
            f"TORCH_CUDA_ARCH_LIST={value!r}: kestrel-kernels builds for exactly one architecture "
            "(e.g. TORCH_CUDA_ARCH_LIST=9.0a)"
        )
    return normalize_arch(entries[0], "TORCH_CUDA_ARCH_LIST")


def resolve_arch(cli_arch: str | None, env: dict) -> tuple[str, str]:
    """Return (arch, where it came from)."""
    if cli_arch:
        return normalize_arch(cli_arch, "--arch"), "--arch"
    if env.get("KESTREL_KERNELS_CUDA_ARCH"):
        return normalize_arch(env["KESTREL_KERNELS_CUDA_ARCH"], "KESTREL_KERNELS_CUDA_ARCH"), "env"
    for arg in shlex.split(env.get("CMAKE_ARGS", "")):
        m = re.fullmatch(r"-DKESTREL_KERNELS_CUDA_ARCH(?::\w+)?=(.*)", arg)
        if m and m.group(1):
            return normalize_arch(m.group(1), "CMAKE_ARGS"), "CMAKE_ARGS"
    if env.get("TORCH_CUDA_ARCH_LIST"):
        return arch_from_torch_list(env["TORCH_CUDA_ARCH_LIST"]), "TORCH_CUDA_ARCH_LIST"
    return DEFAULT_ARCH, "default"


def arch_flags(arch: str) -> list:
    # Real architecture only: code=sm_XX puts SASS in the cubin and no PTX.
    return ["-gencode", f"arch=compute_{arch},code=sm_{arch}"]


# ---- nvcc -------------------------------------------------------------------------


def find_nvcc(env: dict) -> str:
    cand = env.get("CUDACXX") or shutil.which("nvcc", path=env.get("PATH"))
    if not cand:
        raise PrecompileError("nvcc not found: set CUDACXX=/path/to/nvcc or put nvcc on PATH", 3)
    path = shutil.which(cand) or cand
    if not os.path.isfile(path):
        raise PrecompileError(f"nvcc not found at {cand!r} (from CUDACXX)", 3)
    return os.path.abspath(path)


def nvcc_version(nvcc: str, cache_dir: Path) -> str:
    """nvcc's release line, cached by (path, mtime, size) so up-to-date runs spawn nothing."""
    st = os.stat(nvcc)
    key = {"path": nvcc, "mtime_ns": st.st_mtime_ns, "size": st.st_size}
    cache = cache_dir / NVCC_CACHE
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(cache.read_text())
        if data.get("key") == key and data.get("version"):
            return data["version"]
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PrecompileError(f"{nvcc} --version failed: {proc.stderr.strip()}", 3)
    lines = [ln for ln in proc.stdout.splitlines() if "release" in ln] or proc.stdout.splitlines()[-1:]
    version = lines[0].strip()
    atomic_write(cache, json.dumps({"key": key, "version": version}, indent=2))
    return version


# ---- variants and hashing ---------------------------------------------------------------


def load_template(family: str):
    path = PACKAGE / family / "kernel.py"
    # Loaded by path: importing the kestrel_kernels package is not needed (or wanted) here.
    spec = importlib.util.spec_from_file_location(f"_kestrel_template_{family}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, hashlib.sha256(path.read_bytes()).hexdigest()


def discover(families) -> list:
    out = []
    for family in families:
        module, template_sha = load_template(family)
        for v in module.variants():
            out.append(Variant(family, v["name"], v["params"], v["kernels"], module.render(v["params"]), template_sha))
    return out


def headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in CSRC.rglob("*") if p.is_file()):
        h.update(path.relative_to(CSRC).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def source_hash(variant: Variant, headers: str, flags: list) -> str:
    """Everything but the compiler: lets a machine without nvcc reuse cubins."""
    payload = {
        "format": MANIFEST_FORMAT,
        "source": hashlib.sha256(variant.source.encode()).hexdigest(),
        "template": variant.template_sha256,
        "headers": headers,
        "flags": flags,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def input_hash(src_hash: str, nvcc_ver: str) -> str:
    return hashlib.sha256(f"{src_hash}\0{nvcc_ver}".encode()).hexdigest()


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- files ---------------------------------------------------------------------------


def atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Serialize concurrent precompiles of one output dir (parallel wheel builds)."""
    with open(out_dir / LOCK_FILE, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def read_manifest(out_dir: Path) -> dict:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((out_dir / "manifest.json").read_text())
        if data.get("format") == MANIFEST_FORMAT:
            return data
    return {}


def read_manifest_any(out_dir: Path, fmt: int) -> dict:
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((out_dir / "manifest.json").read_text())
        if isinstance(data, dict) and data.get("format") == fmt:
            return data
    return {}


def atomic_write_bytes(path: Path, data: bytes) -> None:
    staged = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    staged.write_bytes(data)
    os.chmod(staged, 0o644)
    os.replace(staged, path)


def up_to_date(entry: dict | None, key: str, value: str, out_dir: Path) -> bool:
    if not entry or entry.get(key) != value:
        return False
    cubin = out_dir / entry["cubin"]
    return cubin.is_file() and sha256_file(cubin) == entry.get("sha256")


# ---- compile ----------------------------------------------------------------------


def compile_variant(nvcc: str, variant: Variant, flags: list, out_dir: Path) -> Path:
    target = out_dir / f"{variant.name}.cubin"
    with tempfile.TemporaryDirectory(prefix=f"kk-{variant.name}-") as tmp:
        src = Path(tmp) / f"{variant.name}.cu"
        src.write_text(variant.source)
        obj = Path(tmp) / f"{variant.name}.cubin"
        cmd = [nvcc, *flags, "-o", str(obj), str(src)]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise PrecompileError(f"nvcc failed for {variant.name}:\n{proc.stdout}{proc.stderr}".rstrip(), 4)
        if "spill" in proc.stderr and "0 bytes spill" not in proc.stderr:
            print(f"warning: {variant.name}: {proc.stderr.strip()}", file=sys.stderr)
        staged = out_dir / f".{variant.name}.cubin.{os.getpid()}.tmp"
        shutil.copyfile(obj, staged)
        os.chmod(staged, 0o644)
        os.replace(staged, target)
    return target


def precompile(families, out_dir: Path, jobs: int, arch: str, env: dict) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = discover(families)
    headers = headers_digest()
    flags = [*arch_flags(arch), *BASE_FLAGS]
    with locked(out_dir):
        old = read_manifest(out_dir)
        old_variants = old.get("variants", {}) if old.get("arch") == arch else {}
        src_hashes = {v.name: source_hash(v, headers, flags) for v in variants}
        try:
            nvcc = find_nvcc(env)
        except PrecompileError:
            # No compiler here: fine only if every cubin was built from these exact sources.
            if all(up_to_date(old_variants.get(n), "source_hash", h, out_dir) for n, h in src_hashes.items()):
                print(f"precompile: nvcc not found; reusing cubins built with {old.get('nvcc')}", file=sys.stderr)
                return {"compiled": 0, "up_to_date": len(variants), "seconds": 0.0, "manifest": old}
            raise
        nvcc_ver = nvcc_version(nvcc, out_dir)
        entries = {}
        todo = []
        for v in variants:
            ihash = input_hash(src_hashes[v.name], nvcc_ver)
            prev = old_variants.get(v.name)
            if up_to_date(prev, "input_hash", ihash, out_dir):
                entries[v.name] = prev
            else:
                todo.append((v, ihash))

        t0 = time.monotonic()
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = {pool.submit(compile_variant, nvcc, v, flags, out_dir): (v, h) for v, h in todo}
            for fut in concurrent.futures.as_completed(futures):
                v, ihash = futures[fut]
                try:
                    cubin = fut.result()
                except PrecompileError as exc:
                    failures.append(str(exc))
                    continue
                entries[v.name] = {
                    "family": v.family,
                    "params": v.params,
                    "kernels": v.kernels,
                    "cubin": cubin.name,
                    "sha256": sha256_file(cubin),
                    "arch": f"sm_{arch}",
                    "input_hash": ihash,
                    "source_hash": src_hashes[v.name],
                }

        # A partial run (--kernels) keeps the other families' still-valid entries.
        for name, entry in old_variants.items():
            other_family = entry.get("family") not in families and name not in entries
            if other_family and (out_dir / entry["cubin"]).is_file():
                entries[name] = entry
        manifest = {
            "format": MANIFEST_FORMAT,
            "package": "kestrel-kernels",
            "arch": arch,
            "nvcc": nvcc_ver,
            "flags": flags,
            "variants": dict(sorted(entries.items())),
        }
        if old != manifest:
            atomic_write(out_dir / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        keep = {e["cubin"] for e in entries.values()}
        for stale in out_dir.glob("*.cubin"):
            if stale.name not in keep:
                stale.unlink()
        if failures:
            raise PrecompileError("\n\n".join(failures), 4)
        return {
            "compiled": len(todo),
            "up_to_date": len(variants) - len(todo),
            "seconds": time.monotonic() - t0,
            "manifest": manifest,
        }


def parse_args(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m scripts.precompile", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--kernels", nargs="+", metavar="NAME", help=f"families to build (default: all of {', '.join(FAMILIES)})"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: %(default)s)")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, help="parallel nvcc processes")
    p.add_argument("--arch", help="CUDA architecture, e.g. 90a (overrides the environment)")
    p.add_argument("--pair", action="store_true", help="one (toolkit, arch) pair as fat binaries (kestrel-release)")
    p.add_argument("--cuda", help="--pair: the toolkit's name (12.9)")
    p.add_argument("--nvcc", help="--pair: nvcc of the toolkit ('' = use --nvrtc)")
    p.add_argument("--nvrtc", help="--pair: libnvrtc of the toolkit")
    p.add_argument("--ptx", default="0", help="--pair: 1 = also embed PTX")
    p.add_argument("--for-cmake", metavar="LIST", help="keep or make the pairs layout in --out; list its files in LIST")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.for_cmake:
            from scripts import pairs

            return pairs.for_cmake(args.out.resolve(), Path(args.for_cmake).resolve(), args.jobs)
        if args.pair:
            from scripts import pairs

            arch = normalize_arch(args.arch or "", "--arch")
            result = pairs.compile_pair(
                args.out.resolve(), arch, args.cuda or "", args.nvcc or "", args.nvrtc or "", args.ptx == "1", args.jobs
            )
            print(
                f"precompile: CUDA {args.cuda} sm_{arch}: {result['compiled']} compiled, "
                f"{result['up_to_date']} up to date -> {args.out}"
            )
            return 0
        families = tuple(args.kernels or FAMILIES)
        unknown = [f for f in families if f not in FAMILIES]
        if unknown:
            hints = [
                f"{u!r}" + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(u, FAMILIES, 1)) else "")
                for u in unknown
            ]
            raise PrecompileError(f"unknown kernel family {', '.join(hints)}; known: {', '.join(FAMILIES)}")
        arch, origin = resolve_arch(args.arch, dict(os.environ))
        result = precompile(families, args.out.resolve(), args.jobs, arch, dict(os.environ))
    except PrecompileError as exc:
        print(f"precompile: error: {exc}", file=sys.stderr)
        return exc.code
    total = result["compiled"] + result["up_to_date"]
    print(
        f"precompile: {total} variants for sm_{arch} ({origin}): {result['compiled']} compiled, "
        f"{result['up_to_date']} up to date ({result['seconds']:.1f} s) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    # Through the package module: scripts.pairs raises scripts.precompile's PrecompileError, not __main__'s.
    from scripts.precompile import main as _main

    sys.exit(_main())
