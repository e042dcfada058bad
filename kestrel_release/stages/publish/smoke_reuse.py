"""`smoke_test.reuse`: let a smoke venv see distributions the host interpreter already has (torch on an
offline GPU host) instead of fetching them, and nothing else of the host's.

The named distributions and their installed requirements (transitively, with the extras they ask for and
the markers this host meets) are exposed
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.errors import PublishError

# Run by the host interpreter (not isolated: a user-site torch counts), with a private copy of the tool's
# `packaging` appended to its path (a folder with no dist-info: it adds no distribution to the host's).
# The closure follows the real metadata: the requested extras of each distribution (recursively,
# `torch` -> `cuda-toolkit[cublas,cudart]` -> `nvidia-cublas; extra == "cublas"`), environment markers
# evaluated for this host, and it finds the files of distributions that other tools installed
# without a RECORD (conda, a distribution's own packages): their top_level.txt, else their name.
_HOST_CHILD = r"""
import importlib.metadata as md, json, os, re, sys
sys.path.append(sys.argv[1])
from packaging.requirements import Requirement, InvalidRequirement
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()

def tops(dist, base):
    if dist.files is not None:
        return sorted({str(dist.locate_file(f.parts[0])) for f in dist.files if f.parts and f.parts[0] != ".."})
    names = (dist.read_text("top_level.txt") or "").split() or [norm(dist.metadata["Name"]).replace("-", "_")]
    out = set()
    for entry in os.listdir(base) if base and os.path.isdir(base) else ():
        stem = entry.split(".", 1)[0]
        if stem in names and not entry.endswith((".dist-info", ".egg-info")):
            out.add(os.path.join(base, entry))
    return sorted(out)

todo = [(None, r) for r in sys.argv[2:]]
extras_done, out, missing, lacking = {}, {}, [], set()
while todo:
    parent, text = todo.pop()
    try:
        req = Requirement(text)
    except InvalidRequirement:
        continue
    name, extras = norm(req.name), set(req.extras)
    done = extras_done.setdefault(name, None)
    if done is not None and extras <= done:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        if name not in lacking:
            lacking.add(name)
            missing.append({"name": name, "requirement": text, "of": parent})
        continue
    new = extras - (done or set()) | ({""} if done is None else set())
    extras_done[name] = (done or set()) | extras
    if name not in out:
        info = getattr(dist, "_path", None)
        out[name] = {"name": dist.metadata["Name"], "version": dist.version, "dist_info": str(info) if info else "",
                     "entries": tops(dist, str(info.parent) if info else "")}
    label = f"{dist.metadata['Name']} {dist.version}"
    for r in dist.requires or ():
        try:
            sub = Requirement(r)
        except InvalidRequirement:
            continue
        if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in new):
            todo.append((label, str(sub).split(";", 1)[0]))
print(json.dumps({"dists": list(out.values()), "missing": missing}))
"""

_STUB_SKIP = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def norm(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def host_closure(interpreter: Path, names: tuple[str, ...], cwd: Path) -> Closure:
    """The named distributions of `interpreter` and what they require (extras and markers followed);
    PublishError naming a named one the host lacks. `Closure.missing`: requirements the host lacks."""
    from kestrel_release.process import proc

    vendor = cwd / "kestrel-reuse-vendor"
    if not (vendor / "packaging").is_dir():
        import packaging

        shutil.copytree(Path(packaging.__file__).parent, vendor / "packaging", ignore=shutil.ignore_patterns("*.pyc"))
    out = proc.run([interpreter, "-c", _HOST_CHILD, vendor, *names], cwd=cwd, what="list the host's reused packages",
                   error=PublishError)  # fmt: skip
    data = json.loads(out.output.strip().splitlines()[-1])
    asked_missing = sorted({m["name"] for m in data["missing"] if m["of"] is None})
    if asked_missing:
        raise PublishError(
            f"smoke_test.reuse names {', '.join(asked_missing)}, which {interpreter} does not have",
            f"install it there ({interpreter} -m pip install {' '.join(asked_missing)}) or remove it from "
            "smoke_test.reuse",
        )
    return Closure(list(data["dists"]), [(m["requirement"], m["of"]) for m in data["missing"]])


@dataclass(frozen=True)
class Closure:
    """What `host_closure` found: the distributions to expose, and the (requirement, required by) pairs
    that the host does not have (the smoke install has to fetch those, which an offline host cannot)."""

    dists: list[dict[str, Any]]
    missing: list[tuple[str, str]] = field(default_factory=list)

    def lacking(self) -> str:
        """`nvidia-cublas==13.0.2 (required by cuda-toolkit 13.0.2), ...`, or "" when nothing is missing."""
        return ", ".join(f"{req} (required by {of})" for req, of in self.missing)


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
    name = f"{norm(dist['name']).replace('-', '_')}-{dist['version']}.dist-info"
    stub = site / name
    if stub.exists():
        return
    stub.mkdir(parents=True)
    if source is not None and source.is_dir():
        for item in source.iterdir():
            if item.is_file() and item.name not in _STUB_SKIP:
                shutil.copyfile(item, stub / item.name)
    if not (stub / "METADATA").exists() and (stub / "PKG-INFO").exists():  # an .egg-info: the same fields
        shutil.copyfile(stub / "PKG-INFO", stub / "METADATA")
    if not (stub / "METADATA").exists():
        (stub / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist['name']}\nVersion: {dist['version']}\n")
    (stub / "INSTALLER").write_text("kestrel-release (reused from the host)\n")
    files = sorted(p.name for p in stub.iterdir())
    (stub / "RECORD").write_text("".join(f"{name}/{f},,\n" for f in [*files, "RECORD"]))
