"""A content-addressed cache of repaired wheels, for warm rebuilds of unchanged inputs.

Builds are byte-reproducible (fixed SOURCE_DATE_EPOCH, normalised zips), so a wheel built from the
same inputs is the wheel a rebuild would produce: reusing it skips the whole per-Python build. The
key covers every input by name (`inputs`): the project's sources as its clean copy holds them (never
git-ignored files, build outputs, the tool's output and rehearsal dirs or hidden files),
the interpreter binary, cfg.build (not `jobs` or the compile cache), SOURCE_DATE_EPOCH, the tools' versions, and the
toolchain (stages/build_wheels/cachekey.py: compilers and their versions, flags, CUDA paths and arches,
the build requirements' installed versions), and the version: a version from git (setuptools-scm,
hatch-vcs, versioneer) changes with a tag or a commit while no file does, so a dynamic version's
key also holds git's HEAD, branch and tags (what the metadata cache keys on). A build env whose contents cannot be known before the
build (an isolated frontend installs the requirements afresh) is never served from the cache.

`build --no-cache` and both passes of `--check-reproducible` never read it (they really build), but
store what they built. Each project keeps the inputs of its last build per Python in its state dir,
so `-v` can say which input changed when an entry is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release import __version__
from kestrel_release.adapters import git, toolchain
from kestrel_release.config.model import Config
from kestrel_release.files import fsutil, statedir
from kestrel_release.stages.build_wheels import cachekey
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.stages.build_wheels.plan import Plan

_files_of: dict[str, dict[str, str]] = {}  # source digest -> {relative path: sha256}, for -v's reasons


def source_digest(cfg: Config, rules: dict) -> str:
    """sha256 over every source file of the project (relative path + content): the files of its clean
    copy (source_copy.sources; `rules`: the copy's include/exclude), so git-ignored files and the tool's
    own output and rehearsal dirs never count."""
    from kestrel_release.project import source_copy

    digest = hashlib.sha256()
    files: dict[str, str] = {}
    for rel, path in source_copy.sources(cfg.project_dir, **rules).items():
        if path.is_symlink():
            sha = "symlink " + os.readlink(path)
        elif path.is_file():
            sha = fsutil.sha256_file(path)
        else:  # a tracked file deleted in the work tree: the copy lacks it too
            continue
        files[rel] = sha
        digest.update(rel.encode() + b"\0")
        digest.update(sha.encode() + b"\0")
    _files_of[digest.hexdigest()] = files
    return digest.hexdigest()


@dataclass
class Lookup:
    """One wheel's cache key and the named inputs behind it; key None: not cacheable (`why_not`)."""

    key: str | None
    inputs: dict[str, str]
    why_not: str = ""
    facts: dict | None = None  # the build env's requirements and sysconfig CC/CXX, when it could be asked


def lookup(cfg: Config, plan: Plan, py: str, env_python: Path | None, env: dict[str, str]) -> Lookup:
    """The key of Python `py`'s wheel. `env_python`: the interpreter of the env the build runs in
    (the reusable build env, or the interpreter itself with isolation off); None when the frontend
    installs the build requirements afresh, so their versions cannot be known beforehand."""
    facts = (
        cachekey.build_env_facts(env_python, cfg.project_dir, env, cfg.build.requires)
        if env_python is not None
        else None
    )
    values = inputs(cfg, plan, py, env, facts)
    if env_python is None:
        why = "an isolated frontend installs the build requirements afresh, so their versions are unknown"
        return Lookup(None, values, why)
    if facts is None:
        return Lookup(None, values, f"{env_python} did not say which build requirements it has installed")
    return Lookup(key_of(values), values, facts=facts)


def inputs(cfg: Config, plan: Plan, py: str, env: dict[str, str], facts: dict | None) -> dict[str, str]:
    """Every input of the wheel, by name ("env CXX", "compiler CC", "requirement torch", ...)."""
    python = plan.pythons[py]
    st = python.resolve().stat()
    out = {
        "sources": plan.source,
        "python": f"{python} ({st.st_size} bytes, mtime {st.st_mtime_ns})",
        "SOURCE_DATE_EPOCH": str(plan.source_date_epoch),
        "kestrel-release": __version__,
    }
    if cfg.version_dynamic:  # not cfg.version: only some commands ask the backend, and they share entries
        out.update(_vcs_inputs(cfg.project_dir))
    for f in fields(cfg.build):
        value = getattr(cfg.build, f.name)
        if f.name == "env":
            out.update({f"build.env {k}": cachekey.short(v) for k, v in sorted(value.items())})
        elif f.name not in cachekey.NOT_KEYED_SETTINGS:  # parallelism, the compile cache: how fast, not what
            out[f"build.{f.name}"] = json.dumps(value, default=str)
    out.update({f"tool {k}": str(v) for k, v in sorted(plan.tool_versions.items()) if k != "torch"})
    out.update({f"env {k}": v for k, v in cachekey.keyed_env(env).items() if k not in cfg.build.env})
    sysconfig = (facts or {}).get("sysconfig") or {}
    out.update({f"compiler {k}": v for k, v in cachekey.compilers(env, sysconfig).items()})
    for name, version in sorted(((facts or {}).get("requirements") or {}).items()):
        out[f"requirement {name}"] = str(version or "not installed")
    return out


def _vcs_inputs(project: Path) -> dict[str, str]:
    """What a version from git is computed from: a tag at HEAD turns 5.11.1.dev1 into 5.11.1, an empty
    commit 1.2.4 into 1.2.5.dev1, and neither changes a file. Uncommitted edits are in `sources`."""
    state = git.version_state(project)
    if state is None:
        return {}
    at_head = [t.split(" ")[0] for t in state.tags if state.commit and t.endswith(" " + state.commit)]
    return {
        "git HEAD": state.commit or "no commit",
        "git branch": state.branch or "detached",
        "git tags at HEAD": " ".join(at_head) or "none",
        "git tags": hashlib.sha256("\n".join(state.tags).encode()).hexdigest()[:16],
    }


def key_of(values: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:32]


def _entry(key: str) -> Path:
    return toolchain.cache_dir() / "wheels" / key


def get(key: str, dest_dir: Path) -> Path | None:
    """Copy the cached wheel for `key` into dest_dir; None on a miss."""
    wheels = sorted(_entry(key).glob("*.whl"))
    if len(wheels) != 1:
        return None
    dest_dir.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy2(wheels[0], dest_dir / wheels[0].name))


def put(key: str, wheel: Path, values: dict[str, str] | None = None) -> None:
    """Store `wheel` under `key` (replacing an entry a --no-cache build refreshes)."""
    entry = _entry(key)
    # Staged (and the replaced entry parked) in an owned dir beside the entries: a build killed
    # mid-store leaves no wheel copy that the next store there does not collect.
    with fsutil.staging_dir(entry, kind="store") as tmp:
        shutil.copy2(wheel, tmp / wheel.name)
        if values is not None:
            fsutil.atomic_write_text(tmp / "inputs.json", json.dumps(values, indent=1, sort_keys=True) + "\n")
        with contextlib.suppress(OSError):
            os.replace(entry, tmp.parent / "old")  # a refreshed entry: the rename below needs the name free
        with contextlib.suppress(OSError):  # stored by a concurrent build already: same bytes by construction
            os.replace(tmp, entry)


def drop(wheels: dict[str, str]) -> list[str]:
    """Remove the entries holding these wheels ({filename: sha256}): a wheel verify rejected for what it
    says inside (another version) must not come back from the cache on the rebuild that fixes it.
    Returns the removed wheels' names."""
    removed = []
    for cached in sorted((toolchain.cache_dir() / "wheels").glob("*/*.whl")):
        if cached.name in wheels and wheels[cached.name] == fsutil.sha256_file(cached):
            shutil.rmtree(cached.parent, ignore_errors=True)
            removed.append(cached.name)
    return removed


# --- why an entry was or was not used (-v) ------------------------------------------------------


def _record_path(cfg: Config, py: str) -> Path:
    return statedir.project(cfg.project_dir) / f"wheel-inputs-{py}.json"


def remember(cfg: Config, py: str, found: Lookup) -> None:
    """Keep this build's inputs for Python `py`, so the next one can say what changed."""
    record = {"key": found.key, "inputs": found.inputs, "files": _files_of.get(found.inputs["sources"], {})}
    with contextlib.suppress(OSError):
        fsutil.atomic_write_text(_record_path(cfg, py), json.dumps(record, sort_keys=True) + "\n")


def explain(cfg: Config, py: str, found: Lookup, *, hit: bool, skipped: str = "") -> None:
    """One -v line: whether Python `py`'s wheel came from the cache, and why (or why not)."""
    if not console.verbose():
        return
    head = f"wheel cache, Python {py}:"
    if found.key is None:
        console.debug(f"{head} not used: {found.why_not}")
        return
    changed = _changes(cfg, py, found)
    if hit:
        since = f" (an earlier entry; the last build differed in {changed})" if changed else ""
        console.debug(f"{head} used entry {found.key}: every input as when it was stored{since}")
    elif skipped:
        console.debug(f"{head} not read ({skipped}); building, then refreshing entry {found.key}")
    elif changed:
        console.debug(f"{head} no entry {found.key}; changed since the last build: {changed}")
    else:
        console.debug(f"{head} no entry {found.key} (no earlier build of this project for Python {py} in the cache)")


def _changes(cfg: Config, py: str, found: Lookup) -> str:
    try:
        last = json.loads(_record_path(cfg, py).read_text(encoding="utf-8"))
        before, files = dict(last["inputs"]), dict(last.get("files") or {})
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if last.get("key") == found.key:
        return ""
    now = found.inputs
    parts = []
    for name in sorted(set(before) | set(now)):
        old, new = before.get(name), now.get(name)
        if old == new:
            continue
        if name == "sources":
            parts.append(_source_changes(files, _files_of.get(str(new), {})))
        else:
            parts.append(f"{name}: {_cut(old)} -> {_cut(new)}")
    return "; ".join(parts)


def _source_changes(before: dict[str, str], now: dict[str, str]) -> str:
    names = sorted(n for n in set(before) | set(now) if before.get(n) != now.get(n))
    if not names:
        return "sources changed"
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return "sources changed: " + ", ".join(names[:3]) + more


def _cut(value: str | None) -> str:
    if value is None:
        return "unset"
    return value if len(value) <= 160 else value[:157] + "..."
