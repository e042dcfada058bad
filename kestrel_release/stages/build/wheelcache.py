"""A content-addressed cache of repaired wheels, for warm rebuilds of unchanged sources.

Builds are byte-reproducible (fixed SOURCE_DATE_EPOCH, normalised zips), so a
wheel built from the same sources, interpreter, build settings and tool versions
is the wheel a rebuild would produce: reusing it skips the whole per-Python
build. The key covers the project tree (minus build outputs and hidden files),
the interpreter binary, cfg.build, SOURCE_DATE_EPOCH and the tools' versions;
`--check-reproducible` never reads it (it must really build twice).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from kestrel_release import __version__, fsutil
from kestrel_release.adapters import toolchain
from kestrel_release.config import Config

_SKIP_DIRS = {"build", "dist", "dist-all", "wheelhouse", "__pycache__"}


def source_digest(cfg: Config) -> str:
    """sha256 over every source file of the project (relative path + content)."""
    digest = hashlib.sha256()
    out = cfg.out_path
    for dirpath, dirnames, filenames in os.walk(cfg.project_dir):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".") and d not in _SKIP_DIRS and not d.endswith(".egg-info") and here / d != out
        )
        for name in sorted(filenames):
            if not name.startswith("."):
                path = here / name
                digest.update(path.relative_to(cfg.project_dir).as_posix().encode() + b"\0")
                digest.update(fsutil.sha256_file(path).encode() + b"\0")
    return digest.hexdigest()


def key(cfg: Config, source: str, python: Path, source_date_epoch: int, tools: dict) -> str:
    st = python.resolve().stat()
    payload = {
        "source": source,
        "python": [str(python), st.st_size, st.st_mtime_ns],
        "build": asdict(cfg.build),
        "sde": source_date_epoch,
        "tools": tools,
        "tool": __version__,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _entry(key: str) -> Path:
    return toolchain.cache_dir() / "wheels" / key


def get(key: str, dest_dir: Path) -> Path | None:
    """Copy the cached wheel for `key` into dest_dir; None on a miss."""
    wheels = sorted(_entry(key).glob("*.whl"))
    if len(wheels) != 1:
        return None
    dest_dir.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(wheels[0], dest_dir / wheels[0].name))


def put(key: str, wheel: Path) -> None:
    entry = _entry(key)
    tmp = entry.with_name(f".{entry.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copy2(wheel, tmp / wheel.name)
    try:
        os.replace(tmp, entry)
    except OSError:  # stored by a concurrent build already: same bytes by construction
        shutil.rmtree(tmp, ignore_errors=True)
