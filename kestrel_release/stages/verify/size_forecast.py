"""What each CUDA arch and toolkit costs a wheel, and the wheel against the index's per-file limit.

Each code image's share of the wheel is its stored bytes in the binary times that binary's zip ratio
(compressed / uncompressed member size): what it adds to the file that is uploaded. The toolkit comes
from the image (cubin note, PTX ISA) or the member's path (`cu12.9/`, `cu130/`: the precompile layout).
Over the limit is an error before any upload; within 10% of it a warning; both name the largest arch
and the two ways out (compression, fewer archs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kestrel_release.artifacts.cuda_binary import CudaInfo
from kestrel_release.artifacts.wheel import Member
from kestrel_release.stages.verify.leaks import Finding
from kestrel_release.ui import console

_PATH_TOOLKIT = re.compile(r"(?:^|/)cu(?:da)?[-_]?(\d{2})\.?(\d)?(?:/|[-_])")
COMPRESSED_DRIVER = "550"  # compressed fat binaries need CUDA 12.4's driver (r550)


def toolkit_of(member: str, cuda: str) -> str:
    if cuda:
        return cuda
    m = _PATH_TOOLKIT.search(member)
    return f"{m.group(1)}.{m.group(2)}" if m and m.group(2) else (m.group(1) if m else "?")


def per_arch(cuda: Sequence[CudaInfo], members: Sequence[Member]) -> list[dict]:
    """[{toolkit, arch, bytes}] largest first: each (toolkit, arch)'s share of the wheel file."""
    by_name = {m.name: m for m in members}
    totals: dict[tuple[str, str], float] = {}
    for info in cuda:
        member = by_name.get(info.member)
        ratio = member.compressed_size / member.size if member and member.size else 1.0
        for entry in info.entries:
            key = (toolkit_of(info.member, entry.get("cuda", "")), entry["arch"])
            totals[key] = totals.get(key, 0.0) + entry["bytes"] * ratio
    rows = [{"toolkit": t, "arch": a, "bytes": int(b)} for (t, a), b in totals.items()]
    return sorted(rows, key=lambda r: -r["bytes"])


def check(filename: str, size: int, limit: int, rows: list[dict], cuda: Sequence[CudaInfo]) -> list[Finding]:
    """An error over `limit`, a warning within 10% of it; nothing for a wheel without CUDA code."""
    if not rows or size <= limit * 0.9:
        return []
    top = rows[0]
    compressed = all(e.get("compressed") for info in cuda for e in info.entries if e["kind"] == "sass")
    ways = (
        "drop an arch or split the wheel"
        if compressed
        else f'compress (build.cuda_compress = "size", needs driver >= {COMPRESSED_DRIVER}) or drop an arch'
    )
    text = (
        f"{top['arch']} (CUDA {top['toolkit']}) adds {console.size(top['bytes'])}; the wheel is "
        f"{console.size(size)} of the {console.size(limit)} per-file limit: {ways}"
    )
    if size > limit:
        return [Finding("size-forecast", "error", filename, f"{filename} is over the limit: {text}")]
    return [Finding("size-forecast", "warning", filename, f"{filename} is within 10% of the limit: {text}")]
