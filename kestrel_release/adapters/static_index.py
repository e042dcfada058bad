"""Writing a static package index into a directory (the pages come from simple_pages.py).

`<root>/<flavour>/<project>/` holds the project's wheels (unless they are linked from elsewhere, as
GitHub release assets), a PEP 658 `<wheel>.metadata` file each, and `index.html` + `index.json`;
`<root>/<flavour>/index.html` + `index.json` list the projects. Every file is written to a temp file
and renamed, and only when its content changes: a second run with the same wheels changes nothing.
A new version adds to the pages, never drops what they list; a file this tool did not write is never
replaced or removed, and a listed filename never gets other bytes (both refused before anything is
written, exit 6).

One index may be shared by several projects publishing at once (each CI job its own): a publish holds
an exclusive lock (flock on `<root>/.kestrel-release.lock`) from reading the pages to writing the last
of them, and the project lists are rebuilt from what is on disk then, so no writer drops another's project.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.artifacts import simple_pages
from kestrel_release.artifacts.simple_pages import IndexFile
from kestrel_release.errors import PublishError
from kestrel_release.files import safepaths
from kestrel_release.files.fsutil import atomic_write_bytes, sha256_file

METADATA_LIMIT = 4 * 1024 * 1024  # a METADATA file is a few KiB; a bigger one is not ours to serve
LOCK_NAME = ".kestrel-release.lock"  # in the index's root: every publisher to that dir takes it
LOCK_WAIT = 600.0  # seconds; another publish holds it while it copies its wheels


@dataclass
class PageResult:
    flavour: str
    project: str
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # files this run created or changed, relative to the root

    def to_json(self) -> dict[str, Any]:
        from kestrel_release.records import documents

        return documents.to_json(self)


def core_metadata(wheel: Path) -> bytes:
    """The wheel's `*.dist-info/METADATA` (PEP 658 serves it beside the wheel)."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(names) != 1 or zf.getinfo(names[0]).file_size > METADATA_LIMIT:
            raise PublishError(f"{wheel.name} has no readable METADATA", "rebuild it with kestrel-release build")
        return zf.read(names[0])


def requires_python(metadata: bytes) -> str:
    from kestrel_release.artifacts import core_metadata

    return str(core_metadata.headers(metadata).get("Requires-Python") or "").strip()


def entry(wheel: Path, url: str) -> tuple[IndexFile, bytes]:
    """The index record of `wheel` linked as `url`, and its METADATA bytes."""
    import hashlib

    meta = core_metadata(wheel)
    record = IndexFile(
        filename=wheel.name,
        url=url,
        sha256=sha256_file(wheel),
        size=wheel.stat().st_size,
        requires_python=requires_python(meta),
        core_metadata=hashlib.sha256(meta).hexdigest(),
    )
    return record, meta


def publish(
    root: Path, groups: dict[str, list[Path]], *, base_urls: dict[str, str] | None = None, dry_run: bool = False
) -> list[PageResult]:
    """Add `groups` (flavour, e.g. "cu130" -> wheels) to the index in `root`.

    `base_urls[filename]`: where a wheel is linked from instead of a copy beside its page (a release
    asset's download URL); the copy is skipped for those. Every check runs before the first write.
    """
    base_urls = base_urls or {}
    if dry_run:  # reads only: every page is replaced whole by a rename, never seen half-written
        return _publish(root, groups, base_urls, dry_run)
    with index_lock(root):
        return _publish(root, groups, base_urls, dry_run)


@contextlib.contextmanager
def index_lock(root: Path) -> Iterator[None]:
    """Exclusive use of the index in `root` across processes, threads and machines sharing the folder;
    waits up to LOCK_WAIT for another publish, saying so once."""
    from filelock import FileLock, Timeout

    from kestrel_release.ui import console

    root.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(root / LOCK_NAME), thread_local=False, mode=0o644)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        console.info(f"waiting for another kestrel-release run that is publishing to {root}")
        try:
            lock.acquire(timeout=LOCK_WAIT)
        except Timeout:
            raise PublishError(
                f"another kestrel-release run has been publishing to {root} for {LOCK_WAIT:.0f} s; nothing was written",
                f"wait for it to finish, then publish again (lock: {root / LOCK_NAME})",
            ) from None
    try:
        yield
    finally:
        lock.release()


def _publish(root: Path, groups: dict[str, list[Path]], base_urls: dict[str, str], dry_run: bool) -> list[PageResult]:
    plans = [_plan(root, flavour, project, wheels, base_urls) for flavour, project, wheels in _by_page(groups)]
    for flavour in sorted({p.flavour for p in plans}):
        _listed_projects(root / flavour)  # refuses a project list another tool wrote
    results = []
    for plan in plans:
        result = PageResult(plan.flavour, plan.project, plan.merged.added, plan.merged.kept)
        if not dry_run:
            _write_page(root, plan, result)
        results.append(result)
    if not dry_run:
        for flavour in sorted({p.flavour for p in plans}):
            _write_root(root, flavour, [p.project for p in plans if p.flavour == flavour], results)
    return results


@dataclass
class _Plan:
    flavour: str
    project: str
    folder: Path
    wheels: list[tuple[Path, IndexFile, bytes]]
    merged: simple_pages.Merged


def _by_page(groups: dict[str, list[Path]]) -> list[tuple[str, str, list[Path]]]:
    pages: dict[tuple[str, str], list[Path]] = {}
    for flavour, wheels in groups.items():
        for wheel in wheels:
            project = simple_pages.normalize(simple_pages.project_of(wheel.name))
            pages.setdefault((flavour, project), []).append(wheel)
    return [(f, p, sorted(w)) for (f, p), w in sorted(pages.items())]


def _plan(root: Path, flavour: str, project: str, wheels: list[Path], base_urls: dict[str, str]) -> _Plan:
    folder = root / flavour / project
    existing = _listed(folder)
    rows = []
    for wheel in wheels:
        url = base_urls.get(wheel.name, wheel.name)
        record, meta = entry(wheel, url)
        if wheel.name in base_urls:  # PEP 658 serves METADATA at `<url>.metadata`: only beside our own copies
            record, meta = dataclasses.replace(record, core_metadata=""), b""
        else:
            _check_foreign(folder / wheel.name, record.sha256, existing)
        rows.append((wheel, record, meta))
    merged = simple_pages.merge(existing, [r for _, r, _ in rows])
    if merged.conflicts:
        name, listed, given = merged.conflicts[0]
        raise PublishError(
            f"{folder / simple_pages.HTML_PAGE} already lists {name} with sha256 {listed}, not {given}",
            "a published file never changes: bump the version and rebuild (the index keeps the old file)",
        )
    return _Plan(flavour, project, folder, rows, merged)


def _listed(folder: Path) -> list[IndexFile]:
    page, record = folder / simple_pages.HTML_PAGE, folder / simple_pages.JSON_PAGE
    if not page.exists() and not record.exists():
        return []
    files = simple_pages.files_from_json(_read_json(record)) if record.is_file() else None
    if files is None:
        raise PublishError(
            f"{folder} holds an index page kestrel-release did not write",
            "move it away or choose another dir for this target; nothing was changed",
        )
    return files


def _listed_projects(folder: Path) -> list[str]:
    page, record = folder / simple_pages.HTML_PAGE, folder / simple_pages.JSON_PAGE
    if not page.exists() and not record.exists():
        return []
    names = simple_pages.projects_from_json(_read_json(record)) if record.is_file() else None
    if names is None:
        raise PublishError(
            f"{page} is a project list kestrel-release did not write",
            "move it away or choose another dir for this target; nothing was changed",
        )
    return names


def _check_foreign(dest: Path, sha256: str, listed: list[IndexFile]) -> None:
    if dest.exists() and not any(f.filename == dest.name for f in listed) and sha256_file(dest) != sha256:
        raise PublishError(
            f"{dest} exists with other bytes and no page of ours lists it",
            "move it away (kestrel-release never replaces a file it did not write); nothing was changed",
        )


def _write_page(root: Path, plan: _Plan, result: PageResult) -> None:
    for wheel, record, meta in plan.wheels:
        if record.url == wheel.name:  # served from beside the page
            dest = plan.folder / wheel.name
            if not (dest.exists() and sha256_file(dest) == record.sha256):
                _copy(wheel, dest)
                result.written.append(_rel(root, dest))
        if meta and _put(plan.folder / f"{wheel.name}.metadata", meta):
            result.written.append(_rel(root, plan.folder / f"{wheel.name}.metadata"))
    files = plan.merged.files
    doc = simple_pages.project_json(plan.project, files)
    # JSON first: it is the record a resumed run merges with; the HTML follows it.
    for name, data in (
        (simple_pages.JSON_PAGE, _json_bytes(doc)),
        (simple_pages.HTML_PAGE, simple_pages.project_html(plan.project, files).encode()),
    ):
        if _put(plan.folder / name, data):
            result.written.append(_rel(root, plan.folder / name))


def _write_root(root: Path, flavour: str, projects: list[str], results: list[PageResult]) -> None:
    folder = root / flavour
    known = _listed_projects(folder)
    # Every project folder with a page is listed, ours or not: a shared index keeps its other projects.
    present = [p.name for p in folder.iterdir() if (p / simple_pages.HTML_PAGE).is_file()]
    names = sorted(set(known) | set(present) | set(projects))
    pages = (
        (simple_pages.JSON_PAGE, _json_bytes(simple_pages.root_json(names))),
        (simple_pages.HTML_PAGE, simple_pages.root_html(names).encode()),
    )
    for name, data in pages:
        if _put(folder / name, data):
            next(r for r in results if r.flavour == flavour).written.append(_rel(root, folder / name))


def _put(path: Path, data: bytes) -> bool:
    """Write `path` (temp + rename) unless it already holds `data`; True when it was written."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    atomic_write_bytes(path, data)
    return True


def _copy(src: Path, dest: Path) -> None:
    """A wheel copied beside its page: streamed to a temp file in the same folder, then renamed."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=safepaths.temp_prefix(dest.name), suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as fh:
            shutil.copyfileobj(fh, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_json(path: Path) -> Any:
    from kestrel_release.files import safejson

    try:
        return safejson.load_file(path, str(path), max_bytes=64 * 1024 * 1024)
    except (OSError, ValueError):
        return None


def _json_bytes(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def foreign_pages(root: Path, project: str) -> list[Path]:
    """Pages under `root` a publish of `project` would write but no JSON record of ours vouches for (a publish
    refuses them): the CUDA flavours' project lists and `project`'s own pages (`<project>-cu13` included)."""
    import re

    name = simple_pages.normalize(project)
    ours = [p for p in root.glob(f"*/{simple_pages.HTML_PAGE}") if re.fullmatch(r"cu\d+|cpu", p.parent.name)]
    ours += [p for p in root.glob(f"*/*/{simple_pages.HTML_PAGE}") if p.parent.name.startswith(name)]
    ours += [p for p in root.glob(f"{name}*/{simple_pages.HTML_PAGE}")]
    found = []
    for page in sorted(set(ours)):
        doc = _read_json(page.with_name(simple_pages.JSON_PAGE))
        if simple_pages.files_from_json(doc) is None and simple_pages.projects_from_json(doc) is None:
            found.append(page)
    return found
