"""Which precompiled (toolkit, arch) pair serves this GPU and driver, by NVIDIA's rules. Pure: no driver.

Best first: SASS built for exactly this GPU with `a` (sm_90a on 9.0), family SASS (sm_100f on 10.0/10.3,
the highest minor not above the GPU's), plain SASS of the same major (sm_80 on 8.6), then PTX the driver
JIT-compiles (compute_XY on any newer GPU; `a`/`f` PTX only within its family). Among equals, the newest
toolkit the driver runs. A CUDA 13 binary needs a CUDA 13 driver (r580+); CUDA 12 code runs on any
CUDA 12+ driver (minor version compatibility); PTX needs a driver at least as new as its toolkit.
KESTREL_KERNELS_CUDA=12 or 13 keeps only that toolkit major's code path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FORCE_ENV = "KESTREL_KERNELS_CUDA"


class NoMatch(Exception):
    pass


@dataclass(frozen=True)
class Pair:
    cuda: tuple[int, int]  # toolkit (12, 9)
    arch: str  # "100f"
    ptx: bool
    dir: str

    @property
    def sm(self) -> tuple[int, int, str]:
        m = re.fullmatch(r"(\d+)(\d)([af]?)", self.arch)
        if not m:
            raise ValueError(f"not an arch: {self.arch!r}")
        return int(m.group(1)), int(m.group(2)), m.group(3)

    def describe(self) -> str:
        return f"sm_{self.arch}{' +PTX' if self.ptx else ''}"


def parse_pairs(index: dict) -> list[Pair]:
    out = []
    for p in index.get("pairs", []):
        m = re.match(r"(\d+)\.(\d+)", str(p.get("cuda_version") or p["cuda"]))
        cuda = (int(m.group(1)), int(m.group(2))) if m else (int(str(p["cuda"]).split(".")[0]), 0)
        out.append(Pair(cuda, str(p["arch"]), bool(p.get("ptx")), str(p["dir"])))
    return out


def _sass_rank(pair: Pair, device: tuple[int, int]) -> int | None:
    major, minor, suffix = pair.sm
    if suffix == "a":
        return 0 if (major, minor) == device else None
    if major != device[0] or minor > device[1]:
        return None
    return 1 if suffix == "f" else 2


def _ptx_ok(pair: Pair, device: tuple[int, int]) -> bool:
    major, minor, suffix = pair.sm
    if suffix:
        return _sass_rank(pair, device) is not None
    return device >= (major, minor)


def driver_cuda(version: int) -> tuple[int, int]:
    """cuDriverGetVersion's 13000 -> (13, 0)."""
    return version // 1000, (version % 1000) // 10


def choose(pairs: list[Pair], device: tuple[int, int], driver: int, force: str | None = None) -> tuple[Pair, str]:
    """(the pair to load, "sass" or "ptx"); NoMatch with the reason, naming what was there."""
    drv = driver_cuda(driver)
    allowed = pairs
    if force:
        if force not in ("12", "13"):
            raise NoMatch(f"{FORCE_ENV}={force!r}: use 12 or 13")
        allowed = [p for p in pairs if str(p.cuda[0]) == force]
    scored = []
    for p in allowed:
        rank = _sass_rank(p, device)
        if rank is not None and drv[0] >= p.cuda[0]:
            scored.append(((rank, -p.sm[1], -p.cuda[0], -p.cuda[1]), p, "sass"))
        elif p.ptx and _ptx_ok(p, device) and drv >= p.cuda:
            scored.append(((3, -(p.sm[0] * 10 + p.sm[1]), -p.cuda[0], -p.cuda[1]), p, "ptx"))
    if scored:
        _key, pair, kind = min(scored, key=lambda s: s[0])
        return pair, kind
    carried = "; ".join(
        f"CUDA {major}.{minor}: " + ", ".join(p.describe() for p in pairs if p.cuda == (major, minor))
        for major, minor in sorted({p.cuda for p in pairs})
    )
    why = f" ({FORCE_ENV}={force} keeps only CUDA {force} code)" if force else ""
    newer = [p for p in allowed if _sass_rank(p, device) is not None and drv[0] < p.cuda[0]]
    fix = (
        f"update the NVIDIA driver to one for CUDA {newer[0].cuda[0]} (r580+ for CUDA 13)"
        if newer
        else f"build for sm_{device[0]}{device[1]} (add it to cuda_arch)"
    )
    raise NoMatch(
        f"no precompiled kernels for this GPU: sm_{device[0]}{device[1]} with a CUDA {drv[0]}.{drv[1]} driver{why}; "
        f"this wheel carries {carried or 'nothing'}; {fix}"
    )
