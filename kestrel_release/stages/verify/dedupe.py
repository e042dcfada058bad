"""Byte-identical binaries across the per-Python wheels of one platform, and what one wheel would save.

A kernel package's binaries often do not use the CPython ABI at all (kernels
loaded through torch ops, a C ABI, or the limited API), yet one wheel per Python
is uploaded for each platform: five copies of the same bytes, against a 10 GiB
project quota (the upstream's per-Python wheels differ by about 13 bytes). When
every host binary of a platform's cpXY-cpXY wheels is the same bytes, one
`py3-none-<plat>` or `cp310-abi3-<plat>` wheel would do; when only some are, those
could move to one shared wheel. Binaries are compared by the sha256 the wheel
reader computed while inflating them, whatever their names (an extension module's
name carries its Python tag even when its bytes do not differ); .dist-info is ignored.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kestrel_release.stages.verify.finding import Finding
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.artifacts.binformat import BinaryKind
    from kestrel_release.artifacts.wheel import WheelFile

_PER_PYTHON = re.compile(r"^cp3\d+$")


def binaries_of(wheel: WheelFile, binaries: list[tuple[str, BinaryKind]]) -> dict[str, tuple[str, int]]:
    """member -> (content digest, compressed size) of the wheel's host binaries (not .dist-info)."""
    names = {name for name, kind in binaries if kind.format not in ("cubin", "fatbin")}
    return {
        m.name: (m.digest, m.compressed_size)
        for m in wheel.members
        if m.name in names and m.digest and ".dist-info/" not in m.name
    }


def platform_of(tags: list[str]) -> str | None:
    """The platform of a per-Python CPython wheel (cp312-cp312-<plat>, or its compressed platform set
    joined as in the filename); None for abi3/py3 and multi-Python wheels."""
    split = [tag.split("-") for tag in tags]
    if not split or len({(interp, abi) for interp, abi, _plat in split}) != 1:
        return None
    interp, abi, _plat = split[0]
    plat = ".".join(sorted(p for _i, _a, p in split))
    return plat if _PER_PYTHON.match(interp) and abi.startswith(interp) else None


def check(wheels: list) -> list[Finding]:
    """A warning per platform whose per-Python wheels share byte-identical binaries, with the saving."""
    groups: dict[tuple, list] = {}
    for w in wheels:
        plat = platform_of(w.tags)
        if plat and w.binaries:
            groups.setdefault((w.name, w.version, plat), []).append(w)
    release = sum(w.size for w in wheels) or 1
    out = []
    for (_name, _version, plat), group in sorted(groups.items(), key=lambda kv: kv[0][2]):
        if len(group) < 2:
            continue
        digests = [{d for d, _ in w.binaries.values()} for w in group]
        shared = set.intersection(*digests)
        if not shared:
            continue
        first = group[0]
        shared_members = sorted(m for m, (d, _) in first.binaries.items() if d in shared)
        every = all(d <= shared for d in digests)
        if every:
            saving = sum(w.size for w in group) - max(w.size for w in group)
            how = f"if they do not use the CPython ABI, one py3-none-{plat} or cp310-abi3-{plat} wheel would do"
        else:
            saving = (len(group) - 1) * sum(c for d, c in first.binaries.values() if d in shared)
            how = (
                "moving them into one py3 wheel for the platform, which the per-Python wheels depend on, "
                "would keep one copy"
            )
        pythons = ", ".join(sorted((w.tags[0].split("-")[0] for w in group), key=lambda t: int(t[3:])))
        names = ", ".join(m.rsplit("/", 1)[-1] for m in shared_members[:3]) + (
            f" and {len(shared_members) - 3} more" if len(shared_members) > 3 else ""
        )
        count = f"all {len(first.binaries)}" if every else f"{len(shared_members)} of {len(first.binaries)}"
        out.append(
            Finding(
                "dedupe",
                "warning",
                "",
                f"the {len(group)} per-Python wheels for {plat} ({pythons}) "
                f"hold byte-identical binaries ({count}: {names}); {how}: it would save "
                f"{console.size(saving)} ({100 * saving / release:.0f}% of the release)",
            )
        )
    return out
