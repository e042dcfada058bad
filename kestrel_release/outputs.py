"""Moving a build's files into the output directory without touching anything else in it.

The output directory may be a shared wheelhouse holding other projects' and other versions'
wheels and the user's own files. A build is written in staging first; then only its own files
(wheels, SHA256SUMS, release-manifest.json) move in. A file already there is replaced only
when the tool wrote it (the earlier manifest, or an unfinished install's journal, names it) or
it holds the same bytes; otherwise the build refuses before moving anything.

Crash consistency: the journal naming the incoming files is written first, the manifest moves
last (it is the commit point readers trust), then the journal goes. A run killed in between
leaves a journal, so the next build recognises those files as its own and finishes the job.
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
from collections.abc import Iterator
from pathlib import Path

from kestrel_release import manifest, safepaths, statedir
from kestrel_release.errors import UsageError
from kestrel_release.fsutil import atomic_write_text

JOURNAL = ".kestrel-install.json"


def owned(final: Path) -> set[str]:
    """Names in `final` the tool wrote: the manifest's wheels and files, and a leftover journal's."""
    names: set[str] = set()
    with contextlib.suppress(UsageError):  # a damaged manifest names nothing; it is still ours to replace
        data = manifest.load(final)
        if data is not None:
            names |= {str(w.get("filename")) for w in data.get("wheels", []) if isinstance(w, dict)}
            names |= {manifest.SUMS, manifest.MANIFEST}
    if (final / manifest.MANIFEST).is_file():
        names.add(manifest.MANIFEST)
    with contextlib.suppress(OSError):  # our `*` .gitignore; a user's own one is never ours
        if (final / statedir.GITIGNORE).read_text(encoding="utf-8") == statedir.GITIGNORE_TEXT:
            names.add(statedir.GITIGNORE)
    try:
        names |= set(json.loads((final / JOURNAL).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return names


def _order(names: list[str]) -> list[str]:
    """Wheels first, SHA256SUMS next, the manifest last: it commits the set."""
    rank = {manifest.SUMS: 1, manifest.MANIFEST: 2}
    return sorted(names, key=lambda n: (rank.get(n, 0), n))


def install(staged: Path, final: Path) -> list[str]:
    """Move every file of `staged` into `final` (see the module doc); returns the names moved."""
    final = Path(final)
    final.mkdir(parents=True, exist_ok=True)
    if not (final / statedir.GITIGNORE).exists():  # keeps the output out of `git status`, as venv does
        (Path(staged) / statedir.GITIGNORE).write_text(statedir.GITIGNORE_TEXT, encoding="utf-8")
    names = _order([p.name for p in Path(staged).iterdir()])
    ours = owned(final)
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
    atomic_write_text(final / JOURNAL, json.dumps({"files": names}) + "\n")
    with _signals_deferred():  # Ctrl-C waits the few renames out: the set is never left half-moved
        for name in names:
            _move(staged / name, final / name)
        (final / JOURNAL).unlink()
    return names


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
