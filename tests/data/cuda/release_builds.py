"""What each committed release build in tests/data/cuda/release holds (made by make_release_builds.sh):
one table for the reader's unit tests and the comparison with cuobjdump."""

from __future__ import annotations

from pathlib import Path

RELEASE = Path(__file__).resolve().parent / "release"

# file -> (format, machine, sass, ptx, debug): what each recipe in make_release_builds.sh produces.
EXPECTED = {
    "cu118-sm90.cubin": ("cubin", "cuda", ["sm_90"], [], False),
    "cu118-sm90-rdc.cubin": ("cubin", "cuda", ["sm_90"], [], False),
    "cu118-sm90-lineinfo.cubin": ("cubin", "cuda", ["sm_90"], [], True),
    "cu124-sm90a.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu124-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu124-sm90a-g.cubin": ("cubin", "cuda", ["sm_90a"], [], True),
    "cu128-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu128-sm100a.cubin": ("cubin", "cuda", ["sm_100a"], [], False),
    "cu128-sm90a-g.cubin": ("cubin", "cuda", ["sm_90a"], [], True),
    "cu128-sm100a-g.cubin": ("cubin", "cuda", ["sm_100a"], [], True),
    "cu129-sm100a.cubin": ("cubin", "cuda", ["sm_100a"], [], False),
    "cu129-sm100a-g.cubin": ("cubin", "cuda", ["sm_100a"], [], True),
    "cu129-sm100a-note13.cubin": ("cubin", "cuda", ["sm_100a"], [], False),
    "cu129-sm103a.cubin": ("cubin", "cuda", ["sm_103a"], [], False),
    "cu129-sm103a-lineinfo.cubin": ("cubin", "cuda", ["sm_103a"], [], True),
    "cu130-sm90a-rdc.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu130-sm90a.cubin": ("cubin", "cuda", ["sm_90a"], [], False),
    "cu130-sm90a-lineinfo.cubin": ("cubin", "cuda", ["sm_90a"], [], True),
    "cu130-sm100a.cubin": ("cubin", "cuda", ["sm_100a"], [], False),
    "cu130-sm100a-G.cubin": ("cubin", "cuda", ["sm_100a"], [], True),
    "cu130-sm90a-ptx.fatbin": ("fatbin", "cuda", ["sm_90a"], ["compute_90a"], False),
    "aarch64_sm90a.so": ("elf", "aarch64", ["sm_90a"], ["compute_90a"], False),
    "kernel_sm90a.dll": ("pe", "x86_64", ["sm_90a"], ["compute_90a"], False),
    "rdata_sm90a.dll": ("pe", "x86_64", ["sm_90a"], ["compute_90a"], False),
}
# cuobjdump (Linux) reads no PE file: a DLL is compared with the fat binary it embeds.
EMBEDDED = {"kernel_sm90a.dll": "cu130-sm90a-ptx.fatbin", "rdata_sm90a.dll": "cu130-sm90a-ptx.fatbin"}
