"""The built wheel: exactly the allow-list plus cubins, nothing else, and a clean extension."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest
from conftest import FAMILIES, KERNELS, all_variant_names
from cubin import read_cubin

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")


def expected_files(names: list) -> set:
    dist_info = {n for n in names if n.startswith("kestrel_kernels-0.1.0.dist-info/")}
    so = [n for n in names if re.fullmatch(r"kestrel_kernels/_C\.cpython-\d+-x86_64-linux-gnu\.so", n)]
    python = {"kestrel_kernels/__init__.py", "kestrel_kernels/_runtime.py", "kestrel_kernels/_select.py"}
    python |= {f"kestrel_kernels/{f}/{m}" for f in FAMILIES for m in ("__init__.py", "dispatch.py")}
    pairs = {n.rsplit("/", 1)[0] for n in names if n.endswith("/manifest.json") and "/precompiled/cu" in n}
    assert pairs, names  # one per (toolkit, arch): a plain `uv build` makes one, kestrel-release the configured set
    kernels = {f"{d}/{v}.fatbin" for d in pairs for v in all_variant_names()} | {f"{d}/manifest.json" for d in pairs}
    return python | kernels | {"kestrel_kernels/precompiled/kestrel-precompile.json"} | set(so) | dist_info


def test_wheel_is_exactly_the_allow_list(built_wheel):
    names = zipfile.ZipFile(built_wheel).namelist()
    assert len(names) == len(set(names))
    assert set(names) == expected_files(names)
    assert sum(n.endswith(".so") for n in names) == 1
    assert {n.split("/")[-1] for n in names if "dist-info" in n} >= {"METADATA", "WHEEL", "RECORD"}
    # never a template, a CUDA/C source or a header
    assert not [n for n in names if n.endswith(("kernel.py", ".cu", ".cuh", ".c", ".h")) or "csrc" in n]


def test_release_config_allow_list_matches_the_wheel(built_wheel):
    config = tomllib.loads((KERNELS / "pyproject.toml").read_text())["tool"]["kestrel-release"]
    allow = config["verify"]["allow"]
    names = zipfile.ZipFile(built_wheel).namelist()
    unmatched = [n for n in names if not any(fnmatch.fnmatch(n, p) for p in allow)]
    assert unmatched == []
    unused = [p for p in allow if not any(fnmatch.fnmatch(n, p) for n in names)]
    assert unused == []


def test_wheel_tag_is_this_interpreter(built_wheel):
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert built_wheel.name == f"kestrel_kernels-0.1.0-{tag}-{tag}-linux_x86_64.whl"
    wheel_meta = zipfile.ZipFile(built_wheel).read("kestrel_kernels-0.1.0.dist-info/WHEEL").decode()
    assert f"Tag: {tag}-{tag}-linux_x86_64" in wheel_meta and "Root-Is-Purelib: false" in wheel_meta


def _entry_arch(fatbin: bytes) -> str:
    """sm_XY[a|f] of a fat binary's first entry (header: u32 SM at +0x1c, u64 flags at +0x28)."""
    sm, flags = struct.unpack_from("<I", fatbin, 16 + 0x1C)[0], struct.unpack_from("<Q", fatbin, 16 + 0x28)[0]
    return f"sm_{sm}{'a' if flags & 0x100000 else 'f' if flags & 0x200000 else ''}"


def test_wheel_fatbins_match_manifest_and_their_pair(built_wheel):
    zf = zipfile.ZipFile(built_wheel)
    index = json.loads(zf.read("kestrel_kernels/precompiled/kestrel-precompile.json"))
    assert index["pairs"]
    for pair in index["pairs"]:
        assert pair["dir"] == f"cu{pair['cuda']}/sm_{pair['arch']}"
        manifest = json.loads(zf.read(f"kestrel_kernels/precompiled/{pair['dir']}/manifest.json"))
        assert set(manifest["variants"]) == all_variant_names()
        for entry in manifest["variants"].values():
            data = zf.read(f"kestrel_kernels/precompiled/{pair['dir']}/{entry['cubin']}")
            assert hashlib.sha256(data).hexdigest() == entry["sha256"]
            assert data[:4] == b"\x50\xed\x55\xba"  # a fat binary, its entry naming the pair's arch
            assert _entry_arch(data) == f"sm_{pair['arch']}"
            if pair["arch"] == "90a":
                assert read_cubin(data[data.index(b"\x7fELF") :]).arch == "sm_90a"
        assert b"/" not in json.dumps(manifest).encode().replace(b"-Icsrc", b"")  # no absolute paths


def test_extension_needs_only_libc(built_wheel, installed_wheel):
    if not shutil.which("readelf"):
        pytest.skip("readelf (binutils) not installed")
    so = next(installed_wheel.glob("kestrel_kernels/_C*.so"))
    dyn = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn))
    assert needed <= {"libc.so.6", "libdl.so.2"}, needed
    data = so.read_bytes()
    assert str(KERNELS).encode() not in data  # no build paths (Release, no -g, stripped)
    assert b".debug_info" not in data
