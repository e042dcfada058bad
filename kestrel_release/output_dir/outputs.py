"""Moving a build's files into the output directory without touching anything else in it.

The output directory may be a shared wheelhouse holding other projects' and other versions'
wheels and the user's own files. A build is written in staging first; then only its own files
(wheels, its SHA256SUMS and release manifest) move in. A file already there is replaced only
when the tool wrote it (the project's earlier manifest, or an unfinished install's journal, names
it) or it holds the same bytes; otherwise the build refuses before moving anything.

Several projects may share the folder: each keeps its own manifest and sums (manifest.py says how
they are named), and the installs are serialised by a lock on the folder (folder_lock), so two
projects building into one folder never interleave.

A superseded wheel (one the project's previous manifest names, the new build does not, and whose
bytes are still what the tool wrote) is removed once the new set is in: the folder holds the
release, not every version ever built. Wheels no manifest of the project names are never touched.

Crash consistency: the journal naming the incoming files and the superseded ones is written first,
the manifest moves last (it is the commit point readers trust), the superseded wheels go, then the
journal. A run killed in between leaves a journal, so the next build recognises those files as its
own and finishes the job.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import json
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from kestrel_release.errors import IncompatibleRecordError, UsageError
from kestrel_release.files import safejson, safepaths, statedir
from kestrel_release.files.fsutil import atomic_write_text, sha256_file
from kestrel_release.output_dir import manifest
from kestrel_release.ui import console

JOURNAL = ".kestrel-install.json"  # a project-less install's (and older versions') journal
LOCK_WAIT = 600.0  # seconds; an install holds it for a few renames


def journal_name(package: str | None) -> str:
    return f".kestrel-install.{manifest.norm(package)}.json" if package else JOURNAL


def _journal(final: Path, package: str | None) -> dict:
    """The leftover journal of an unfinished install of `package` (and an older version's), merged."""
    merged: dict = {"files": [], "superseded": {}}
    for name in dict.fromkeys((journal_name(package), JOURNAL)):
        try:
            data = safejson.load_file(final / name, name, max_bytes=manifest.MAX_BYTES)
            merged["files"] += [str(n) for n in data["files"]]
            if isinstance(data.get("superseded"), dict):
                merged["superseded"].update({str(k): str(v) for k, v in data["superseded"].items()})
        except (OSError, ValueError, KeyError, TypeError):  # safejson.Unusable is a ValueError
            pass
    return merged


def owned(final: Path, package: str | None = None) -> set[str]:
    """Names in `final` the tool wrote for `package` (every project's when None): its manifest's wheels
    and files, a leftover journal's, and our `*` .gitignore."""
    names: set[str] = set()
    located = manifest.locate(final, package) if package else None
    for path in [located] if package else manifest.manifest_files(final):
        if path is None:
            continue
        names.add(path.name)  # a damaged manifest names nothing; it is still ours to replace
        try:
            names |= set(manifest.read(path).filenames())
            names.add(manifest.sums_for(path).name)
            names.add(manifest.sums_for(path).name + manifest.SIG)  # sign_key's signature of the sums
        except IncompatibleRecordError:  # another kestrel-release's output: what it names is still ours
            names |= manifest.names_in(path)
            names.add(manifest.sums_for(path).name)
            names.add(manifest.sums_for(path).name + manifest.SIG)
        except UsageError:
            pass
    with contextlib.suppress(OSError):  # our `*` .gitignore; a user's own one is never ours
        if (final / statedir.GITIGNORE).read_text(encoding="utf-8") == statedir.GITIGNORE_TEXT:
            names.add(statedir.GITIGNORE)
    names |= set(_journal(final, package)["files"])
    return names


def target_names(final: Path, package: str | None) -> tuple[str, str]:
    """(manifest, sums) names `package` writes in `final`: the plain ones unless the folder's plain
    manifest is another project's (or this project already has its own per-project files there)."""
    if not package:
        return manifest.MANIFEST, manifest.SUMS
    own = manifest.project_names(package)
    located = manifest.locate(final, package)
    if located is not None and located.name == own[0]:
        return own
    if located is None and (final / manifest.MANIFEST).is_file():
        return own  # the plain manifest belongs to another project
    return manifest.MANIFEST, manifest.SUMS


def _order(names: list[str], last: str = manifest.MANIFEST, sums: str = manifest.SUMS) -> list[str]:
    """Wheels first, the sums next, the manifest last: it commits the set."""
    rank = {sums: 1, last: 2}
    return sorted(names, key=lambda n: (rank.get(n, 0), n))


def _superseded(final: Path, package: str | None, incoming: list[str]) -> dict[str, str]:
    """{wheel: sha256} the project's current manifest (or an unfinished install) names, the new set
    does not, and that still hold the bytes the tool wrote."""
    recorded = dict(_journal(final, package)["superseded"])
    path = manifest.locate(final, package)
    with contextlib.suppress(UsageError):
        rows = manifest.read(path).wheels if path is not None else ()
        recorded.update({r.filename: r.sha256 for r in rows})
    out = {}
    for name, sha in recorded.items():
        wheel = final / name
        if name in incoming or Path(name).name != name or not name.endswith(".whl") or not wheel.is_file():
            continue
        with contextlib.suppress(OSError):
            if not wheel.is_symlink() and sha256_file(wheel) == sha:
                out[name] = sha
    return out


def install(staged: Path, final: Path, package: str | None = None) -> list[str]:
    """Move every file of `staged` into `final` (see the module doc); returns the names moved."""
    final = Path(final)
    final.mkdir(parents=True, exist_ok=True)
    with folder_lock(final):
        return _install(Path(staged), final, package)


def _install(staged: Path, final: Path, package: str | None) -> list[str]:
    if not (final / statedir.GITIGNORE).exists():  # keeps the output out of `git status`, as venv does
        (staged / statedir.GITIGNORE).write_text(statedir.GITIGNORE_TEXT, encoding="utf-8")
    manifest_name, sums_name = target_names(final, package)
    sig = (manifest.SUMS + manifest.SIG, sums_name + manifest.SIG)
    for plain, name in ((manifest.MANIFEST, manifest_name), (manifest.SUMS, sums_name), sig):
        if name != plain and (staged / plain).exists():
            os.replace(staged / plain, staged / name)  # another project's manifest is in the folder
    names = _order([p.name for p in staged.iterdir()], manifest_name, sums_name)
    ours = owned(final, package)
    clash = [
        n
        for n in names
        if (final / n).exists()
        and n not in ours
        and not ((final / n).is_file() and filecmp.cmp(staged / n, final / n, shallow=False))
    ]
    if clash:
        raise UsageError(
            f"{final} already holds {', '.join(clash)}, which kestrel-release did not write",
            "move it away or choose another --out; nothing was changed",
        )
    superseded = _superseded(final, package, names)
    journal = final / journal_name(package)
    atomic_write_text(journal, json.dumps({"files": names, "superseded": superseded}) + "\n")
    with _signals_deferred():  # Ctrl-C waits the few renames out: the set is never left half-moved
        for name in names:
            _move(staged / name, final / name)
        # After the commit point: readers never miss a wheel the manifest names. A signature of the
        # previous sums that this build did not sign again no longer matches them.
        stale_sig = [sig[1]] if sig[1] not in names and sig[1] in ours else []
        for name in [*superseded, *stale_sig]:
            with contextlib.suppress(FileNotFoundError):
                (final / name).unlink()
        journal.unlink()
        if journal.name != JOURNAL:
            with contextlib.suppress(FileNotFoundError):
                (final / JOURNAL).unlink()  # an older version's, finished by this install
    return names


_held: dict[str, int] = {}


@contextlib.contextmanager
def folder_lock(final: Path) -> Iterator[None]:
    """Exclusive use of the output folder `final` for one install at a time (every project, every
    process); waits up to LOCK_WAIT for another, saying so once. Re-entrant within a process.

    The lock is flock(2) on the folder itself: nothing is written into it (a refused build leaves
    the folder exactly as it was) and it holds for every run whatever its cache dir. Where a
    directory cannot be flocked (Windows, some network filesystems) a lock file in the tool's state
    dir, keyed by the folder's path, stands in."""
    key = str(Path(final).resolve())
    if _held.get(key):
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    release = _acquire(Path(final))
    _held[key] = 1
    try:
        yield
    finally:
        _held.pop(key, None)
        release()


def _acquire(final: Path) -> Callable[[], None]:
    """Take the folder's lock (see folder_lock); returns the function that releases it."""
    import time

    try:
        import fcntl
    except ImportError:  # Windows
        return _state_lock(final)
    fd = os.open(final, os.O_RDONLY)

    def attempt() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        if not attempt():
            console.info(f"waiting for another kestrel-release run that is writing to {final}")
            deadline = time.monotonic() + LOCK_WAIT
            while not attempt():
                if time.monotonic() > deadline:
                    raise UsageError(
                        f"another kestrel-release run has been writing to {final} for {LOCK_WAIT:.0f} s",
                        "wait for it to finish, then run again",
                    )
                time.sleep(0.2)
    except OSError:  # no flock on this filesystem's directories
        os.close(fd)
        return _state_lock(final)
    except BaseException:
        os.close(fd)
        raise
    return lambda: os.close(fd)  # closing the descriptor releases the lock


def _state_lock(final: Path) -> Callable[[], None]:
    import hashlib

    from filelock import FileLock, Timeout

    digest = hashlib.sha256(os.fsencode(final.resolve())).hexdigest()[:16]
    path = statedir.root() / "output-locks" / f"{digest}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        console.info(f"waiting for another kestrel-release run that is writing to {final}")
        try:
            lock.acquire(timeout=LOCK_WAIT)
        except Timeout:
            raise UsageError(
                f"another kestrel-release run has been writing to {final} for {LOCK_WAIT:.0f} s",
                f"wait for it to finish, then run again (lock: {path})",
            ) from None
    return lock.release


def _move(src: Path, dest: Path) -> None:
    try:
        os.replace(src, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        # The output is another filesystem (a mount point): copy beside it, then rename.
        tmp = dest.with_name(safepaths.temp_prefix(dest.name) + "tmp")
        try:
            shutil.copy2(src, tmp)
            os.replace(tmp, dest)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
