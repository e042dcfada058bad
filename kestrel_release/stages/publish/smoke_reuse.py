"""`smoke_test.reuse`: let a smoke venv see distributions the host interpreter already has (torch on an
offline GPU host) instead of fetching them, and nothing else of the host's.

The named distributions and their installed requirements (transitively, extras left out) are exposed
through one directory of symlinks to their top-level entries, appended to the venv's sys.path by a
.pth file; a version the install puts in the venv itself comes first and wins. So that uv counts them
as installed (and does not fetch torch again for the release's `Requires-Dist: torch`), the venv gets
a stub `.dist-info` per distribution whose RECORD lists only the stub: an uninstall by uv removes the
stub, never the host's files behind the symlinks.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from kestrel_release.errors import PublishError

# Run by the host interpreter (not isolated: a user-site torch counts): each distribution of the
# closure with its version, its dist-info and the top-level entries its RECORD names.
_HOST_CHILD = r"""
import importlib.metadata as md, json, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
todo, seen, out, missing = list(sys.argv[1:]), set(), [], []
while todo:
    name = norm(todo.pop())
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        missing.append(name)
        continue
    tops = sorted({str(dist.locate_file(f.parts[0])) for f in dist.files or () if f.parts and f.parts[0] != ".."})
    info = getattr(dist, "_path", None)
    out.append({"name": dist.metadata["Name"], "version": dist.version, "entries": tops,
                "dist_info": str(info) if info else ""})
    for r in dist.requires or ():
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", r)
        if m and not re.search(r"\bextra\s*==", r):
            todo.append(m.group(1))
print(json.dumps({"dists": out, "missing": missing}))
"""

_STUB_SKIP = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _norm(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def host_closure(interpreter: Path, names: tuple[str, ...], cwd: Path) -> list[dict[str, Any]]:
    """The named distributions of `interpreter` and what they require; PublishError naming a missing one."""
    from kestrel_release import proc

    out = proc.run([interpreter, "-c", _HOST_CHILD, *names], cwd=cwd, what="list the host's reused packages",
                   error=PublishError)  # fmt: skip
    data = json.loads(out.output.strip().splitlines()[-1])
    asked_missing = sorted(set(data["missing"]) & {_norm(n) for n in names})
    if asked_missing:
        raise PublishError(
            f"smoke_test.reuse names {', '.join(asked_missing)}, which {interpreter} does not have",
            f"install it there ({interpreter} -m pip install {' '.join(asked_missing)}) or remove it from "
            "smoke_test.reuse",
        )
    return list(data["dists"])


def site_packages(venv: Path, python: str) -> Path:
    if os.name == "nt":
        return venv / "Lib" / "site-packages"
    return venv / "lib" / f"python{python}" / "site-packages"


def expose(venv: Path, python: str, dists: list[dict[str, Any]]) -> list[str]:
    """Make `dists` visible in `venv` (symlinks + .pth + stub dist-infos); returns "name version" each."""
    site = site_packages(venv, python)
    shelf = venv / "kestrel-reuse"
    shelf.mkdir(exist_ok=True)
    extra_dirs: list[str] = []
    for dist in dists:
        for entry in map(Path, dist["entries"]):
            link = shelf / entry.name
            if link.exists() or link.is_symlink() or not entry.exists():
                continue
            try:
                link.symlink_to(entry, target_is_directory=entry.is_dir())
            except OSError:  # no symlinks (Windows without the privilege): the entry's whole directory
                if str(entry.parent) not in extra_dirs:
                    extra_dirs.append(str(entry.parent))
        _stub(site, dist)
    (site / "kestrel-reuse.pth").write_text("\n".join([str(shelf), *extra_dirs]) + "\n", encoding="utf-8")
    return [f"{d['name']} {d['version']}" for d in dists]


def _stub(site: Path, dist: dict[str, Any]) -> None:
    """A dist-info uv reads as installed, whose RECORD names only itself."""
    source = Path(dist["dist_info"]) if dist["dist_info"] else None
    name = f"{_norm(dist['name']).replace('-', '_')}-{dist['version']}.dist-info"
    stub = site / name
    if stub.exists():
        return
    stub.mkdir(parents=True)
    if source is not None and source.is_dir():
        for item in source.iterdir():
            if item.is_file() and item.name not in _STUB_SKIP:
                shutil.copyfile(item, stub / item.name)
    if not (stub / "METADATA").exists():
        (stub / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist['name']}\nVersion: {dist['version']}\n")
    (stub / "INSTALLER").write_text("kestrel-release (reused from the host)\n")
    files = sorted(p.name for p in stub.iterdir())
    (stub / "RECORD").write_text("".join(f"{name}/{f},,\n" for f in [*files, "RECORD"]))
