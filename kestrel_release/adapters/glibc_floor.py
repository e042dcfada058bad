"""The glibc floor a wheel can claim, from auditwheel's own analysis (in a child process)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from kestrel_release.adapters import auditwheel
from kestrel_release.errors import BuildError
from kestrel_release.platforms import linux
from kestrel_release.process import proc


@dataclass(frozen=True)
class Analysis:
    policy: str  # the most compatible tag the wheel can carry, e.g. manylinux_2_34_x86_64
    floor: tuple[int, int] | None  # that tag's glibc
    symbols: tuple[str, ...]  # "sym@GLIBC_2.38 (member)" newer than the requested floor


def plat_floor(plat: str) -> tuple[int, int] | None:
    """The glibc a manylinux tag asks for (legacy names included); None for any other tag."""
    return linux.glibc_floor(plat)


def analyze(wheel: Path, wanted: tuple[int, int], exclude: tuple[str, ...], log: Path) -> Analysis:
    """auditwheel's policy analysis of `wheel`; the symbols listed are those above `wanted`."""
    argv = [
        sys.executable,
        "-m",
        "kestrel_release.adapters._glibc_floor_child",
        str(wheel),
        f"{wanted[0]}.{wanted[1]}",
        *exclude,
    ]
    result = proc.run(
        argv,
        env=auditwheel.repair_env(0),
        log=log,
        error=BuildError,
        what=f"auditwheel analysis of {wheel.name}",
        timeout=600,
    )
    data = json.loads(result.output.strip().splitlines()[-1])
    return Analysis(data["policy"], plat_floor(data["policy"]), tuple(data["symbols"]))
