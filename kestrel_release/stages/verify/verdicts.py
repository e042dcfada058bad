"""A cache of verify's per-wheel verdicts, so an unchanged wheel is not read member by member again.

Why: publish re-verifies every wheel before it sends a byte, and a re-run after an interrupted or
finished release would inflate and scan every member of every wheel again (seconds per GB), only to
reach the verdict it reached before. A clean verdict (no error) is stored under a key that covers
everything `_verify_one` reads: the wheel's sha256 and filename, the target, the project mode, the
planned version, the whole config (`repr(cfg)`), the build dirs the leak scan looks for, the tool's
own code (path, size and mtime of every module of the package), the Python and `packaging` versions,
and for abi3 wheels the abi3audit that audited it. Any change to one of them is a miss.

Finding the key needs the wheel's sha256 before reading it: a stat index (path, size, mtime, inode,
ctime -> the sha256 verify read last time) says which verdict to try, and the file is then hashed to
confirm it (one sequential read, the cost of `sha256sum`); a wheel that is new or changed takes the
full read, which computes the sha256 anyway, so a miss costs nothing extra. Errors are never cached:
their advice reads the project's files, and a failing wheel is about to be rebuilt anyway.
Entries live under `<cache>/verify/`; an unusable cache dir disables the cache, never the verify.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import threading
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMAT = 1  # bump when the stored fields change


@lru_cache(maxsize=1)
def _tool_code() -> str:
    """Path, size and mtime of every module of the installed tool: any edit is a new rule set."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _abi3_tool() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from kestrel_release.adapters import abi3audit

    try:
        found = version("abi3audit")
    except PackageNotFoundError:
        found = ""
    return f"{abi3audit.command()}:{found}"


def context(cfg: Any, target: str, project: bool, plan: str | None, build_dirs: tuple[str, ...]) -> str:
    """Everything but the wheel that a verdict depends on, as one string (hashed into each key)."""
    import packaging

    return json.dumps(
        [FORMAT, _tool_code(), sys.version, packaging.__version__, target, project, plan, repr(cfg), build_dirs]
    )


def _root() -> Path | None:
    from kestrel_release.errors import FilesystemError
    from kestrel_release.files import statedir

    try:
        return statedir.cache_dir() / "verify"
    except FilesystemError:
        return None


def _key(ctx: str, filename: str, sha256: str) -> str:
    extra = _abi3_tool() if "-abi3-" in filename else ""
    return hashlib.sha256(json.dumps([ctx, filename, sha256, extra]).encode()).hexdigest()


def _stat_entry(root: Path, path: Path) -> tuple[Path, list[int]]:
    st = path.stat()
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()
    return root / "files" / f"{name}.json", [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def lookup(path: Path, ctx: str) -> dict[str, Any] | None:
    """The stored verdict for the wheel at `path` (its sha256 confirmed by hashing the file), else None."""
    from kestrel_release.files import fsutil

    root = _root()
    if root is None:
        return None
    try:
        index, signature = _stat_entry(root, path)
        known = json.loads(index.read_text())
        if known.get("stat") != signature:
            return None
        entry = root / "verdicts" / f"{_key(ctx, path.name, known['sha256'])}.json"
        if not entry.is_file():
            return None
        verdict = json.loads(entry.read_text())
        if fsutil.sha256_file(path) != known["sha256"] or verdict.get("sha256") != known["sha256"]:
            return None
        return verdict
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store(path: Path, ctx: str, sha256: str, verdict: dict[str, Any] | None) -> None:
    """Remember the sha256 of the wheel at `path` and, when given (a clean verdict), the verdict."""
    root = _root()
    if root is None:
        return
    with contextlib.suppress(OSError, ValueError):
        index, signature = _stat_entry(root, path)
        _write(index, json.dumps({"stat": signature, "sha256": sha256}))
        if verdict is not None:
            _write(root / "verdicts" / f"{_key(ctx, path.name, sha256)}.json", json.dumps(verdict))


def _write(path: Path, text: str) -> None:
    """Atomic (rename) but not synced: a cache entry lost or cut short by a crash reads as a miss."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def dump(report: Any) -> dict[str, Any]:
    """A WheelReport as stored: every field but the path, CudaInfo and Finding with all their fields."""
    return {
        "filename": report.filename,
        "sha256": report.sha256,
        "size": report.size,
        "name": report.name,
        "version": report.version,
        "tags": report.tags,
        # CudaInfo holds only lists and dicts of plain values: a shallow copy serializes the same as asdict,
        # without asdict's deep copy (3 s for a wheel of 16,000 cubins).
        "cuda": [dict(vars(c)) for c in report.cuda],
        "findings": [asdict(f) for f in report.findings],
        "kernels": report.kernels,
        "native": report.native,
        "binaries": {k: list(v) for k, v in report.binaries.items()},
        "cuda_sizes": report.cuda_sizes,
        "coverage": report.coverage,
    }


def load(data: dict[str, Any]) -> dict[str, Any]:
    """The WheelReport fields `dump` stored (all but the path), with CudaInfo and Finding rebuilt."""
    from kestrel_release.artifacts.cuda_binary import CudaInfo
    from kestrel_release.stages.verify.finding import Finding

    return {
        **data,
        "cuda": [CudaInfo(**c) for c in data["cuda"]],
        "findings": [Finding(**f) for f in data["findings"]],
        "binaries": {k: tuple(v) for k, v in data["binaries"].items()},
    }


def cacheable(report: Any) -> bool:
    """Only clean verdicts: an error's advice reads the project's files, which the key does not cover."""
    return bool(report.ok)
