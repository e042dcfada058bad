"""One (CUDA toolkit, arch) pair of precompiled kernels, and the multi-generation layout the wheel ships.

Layout under ``python/kestrel_kernels/precompiled/``::

    kestrel-precompile.json          the pairs: [{cuda, cuda_version, arch, ptx, dir}]
    cu12.9/sm_100f/manifest.json     that pair's variants (file, sha256, input hash)
    cu12.9/sm_100f/<variant>.fatbin  SASS for sm_100f (+ PTX when asked), in a fat binary: the
                                     family/arch suffix lives only in a fat-binary entry

kestrel-release runs ``--pair`` once per pair (``{out} {cuda} {arch} {nvcc} {nvrtc} {ptx}``); a plain
``uv build`` (CMake) runs ``--for-cmake``: it keeps a complete layout, or compiles one pair with the
nvcc on PATH for ``$KESTREL_KERNELS_CUDA_ARCH`` (default 90a), then lists the files to install.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts import fatbin, nvrtc
from scripts import precompile as base

INDEX = "kestrel-precompile.json"
PAIR_FORMAT = 2
OPTS = ("-O3", "-DNDEBUG", "-std=c++17", "-Icsrc")


def short_version(version: str) -> str:
    m = re.search(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else version


def _nvcc_fatbin(nvcc: str, source: str, name: str, arch: str, ptx: bool) -> bytes:
    codes = f"[sm_{arch},compute_{arch}]" if ptx else f"sm_{arch}"
    with tempfile.TemporaryDirectory(prefix=f"kk-{name}-") as tmp:
        src, out = Path(tmp) / f"{name}.cu", Path(tmp) / f"{name}.fatbin"
        src.write_text(source)
        # Stored, not compressed: any r525+ driver loads it (compressed fat binaries need CUDA 12.4's).
        cmd = [nvcc, "-fatbin", "-gencode", f"arch=compute_{arch},code={codes}", "--compress-mode=none", *OPTS]
        proc = subprocess.run(
            [*cmd, "-o", str(out), str(src)], cwd=base.ROOT, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0 and "compress-mode" in proc.stderr:  # before CUDA 12.8: never compressed
            cmd.remove("--compress-mode=none")
            proc = subprocess.run(
                [*cmd, "-o", str(out), str(src)], cwd=base.ROOT, capture_output=True, text=True, check=False
            )
        if proc.returncode != 0:
            raise base.PrecompileError(f"nvcc failed for {name}:\n{proc.stdout}{proc.stderr}".rstrip(), 4)
        return out.read_bytes()


def _nvrtc_fatbin(lib: str, include: list[str], source: str, name: str, arch: str, ptx: bool) -> bytes:
    options = [o for o in OPTS if o != "-O3"] + [f"-I{d}" for d in include]  # NVRTC optimises by default
    try:
        cubin = nvrtc.compile_source(lib, source, f"{name}.cu", [f"-arch=sm_{arch}", *options])
        text = (
            nvrtc.compile_source(lib, source, f"{name}.cu", [f"-arch=compute_{arch}", *options], ptx=True)
            if ptx
            else None
        )
    except nvrtc.NvrtcError as exc:
        raise base.PrecompileError(str(exc), 4) from None
    return fatbin.build(arch, cubin, text)


def compile_pair(out: Path, arch: str, cuda: str, nvcc: str, lib: str, ptx: bool, jobs: int) -> dict:
    """Every variant for one (toolkit, arch) into `out`; unchanged variants are kept."""
    if not nvcc and not lib:
        raise base.PrecompileError("neither nvcc nor NVRTC given for this toolkit", 3)
    out.mkdir(parents=True, exist_ok=True)
    include = [p for p in os.environ.get("KESTREL_CUDA_INCLUDE", "").split(os.pathsep) if p]
    compiler = f"nvcc {base.nvcc_version(nvcc, out)}" if nvcc else f"nvrtc {nvrtc.version(lib)}"
    variants = base.discover(base.FAMILIES)
    headers = base.headers_digest()
    flags = [compiler, arch, "ptx" if ptx else "sass", *OPTS]
    old = base.read_manifest_any(out, PAIR_FORMAT)
    entries, todo = {}, []
    for v in variants:
        ihash = base.input_hash(base.source_hash(v, headers, flags), compiler)
        if base.up_to_date(old.get("variants", {}).get(v.name), "input_hash", ihash, out):
            entries[v.name] = old["variants"][v.name]
        else:
            todo.append((v, ihash))

    def build(item):
        v, ihash = item
        data = (
            _nvcc_fatbin(nvcc, v.source, v.name, arch, ptx)
            if nvcc
            else _nvrtc_fatbin(lib, include, v.source, v.name, arch, ptx)
        )
        base.atomic_write_bytes(out / f"{v.name}.fatbin", data)
        return v.name, {
            "family": v.family,
            "params": v.params,
            "kernels": v.kernels,
            "cubin": f"{v.name}.fatbin",
            "sha256": hashlib.sha256(data).hexdigest(),
            "arch": f"sm_{arch}",
            "input_hash": ihash,
        }

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        entries.update(dict(pool.map(build, todo)))
    manifest = {
        "format": PAIR_FORMAT,
        "package": "kestrel-kernels",
        "cuda": cuda,
        "compiler": compiler,
        "arch": arch,
        "ptx": ptx,
        "variants": dict(sorted(entries.items())),
    }
    base.atomic_write(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    for stale in out.glob("*.fatbin"):
        if stale.name not in {e["cubin"] for e in entries.values()}:
            stale.unlink()
    return {"compiled": len(todo), "up_to_date": len(variants) - len(todo)}


def complete(precompiled: Path) -> bool:
    """Whether the layout's index names pairs whose manifests hold every variant, files intact."""
    try:
        index = json.loads((precompiled / INDEX).read_text())
    except (OSError, ValueError):
        return False
    names = {v.name for v in base.discover(base.FAMILIES)}
    for pair in index.get("pairs", []):
        d = precompiled / pair["dir"]
        manifest = base.read_manifest_any(d, PAIR_FORMAT)
        variants = manifest.get("variants", {})
        if set(variants) != names or not all(base.up_to_date(e, "sha256", e["sha256"], d) for e in variants.values()):
            return False
    return bool(index.get("pairs"))


def for_cmake(precompiled: Path, listing: Path, jobs: int) -> int:
    """Keep a complete layout (kestrel-release made it) or compile one pair here; list the files to install."""
    if not complete(precompiled):
        env = dict(os.environ)
        nvcc = base.find_nvcc(env)
        arch, _origin = base.resolve_arch(None, env)
        precompiled.mkdir(parents=True, exist_ok=True)
        cuda = short_version(re.sub(r".*release\s*", "", base.nvcc_version(nvcc, precompiled)))
        d = f"cu{cuda}/sm_{arch}"
        compile_pair(precompiled / d, arch, cuda, nvcc, "", False, jobs)
        pair = {"cuda": cuda, "cuda_version": cuda, "arch": arch, "ptx": False, "dir": d}
        base.atomic_write(precompiled / INDEX, json.dumps({"format": 1, "pairs": [pair]}, indent=2) + "\n")
    index = json.loads((precompiled / INDEX).read_text())
    files = [INDEX]
    for pair in index["pairs"]:
        manifest = base.read_manifest_any(precompiled / pair["dir"], PAIR_FORMAT)
        files.append(f"{pair['dir']}/manifest.json")
        files += [f"{pair['dir']}/{e['cubin']}" for e in manifest["variants"].values()]
    listing.parent.mkdir(parents=True, exist_ok=True)
    listing.write_text("\n".join(files) + "\n")
    print(f"precompile: {len(index['pairs'])} (toolkit, arch) pairs, {len(files)} files", file=sys.stderr)
    return 0
