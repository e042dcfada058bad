"""Inflate the wheels named on `verify`'s command line while the CLI is still importing.

Why: before the reader starts, the main thread spends 0.3-0.4 s importing the CLI framework, the
checks and Rich, with the second core idle; inflating is most of reading a big wheel (0.55 s for the
160 MB library in nvidia-curand) and zlib and hashlib release the GIL. So __main__ starts one thread
here before those imports; it inflates and hashes the members in order, and the reader takes each
result (`Taker.take`) instead of inflating that member again. When the reader reaches a member this
thread has not started, the thread stops with that wheel: from there the reader's own threads are ahead.

What a member's bytes are never depends on who inflated them: this thread calls the reader's own
inflating and keeps a result only when it came with no problem at all (a bomb, a bad header, a
truncated stream are left to the reader, which finds and reports them). A result is used only for the
same file: its identity (device, inode, size, mtime and ctime in ns; any write changes the ctime) is
compared when the reader opens it, and for the same member (local header offset, sizes, method).
Stored members are not prefetched (the reader slices them from its map); a wheel the zip bomb rule
refuses is not touched. At most BUDGET declared bytes are inflated here, whatever the reader takes.
"""

from __future__ import annotations

import os
import threading

TYPE_CHECKING = False  # typing is not loaded before the CLI (mypy reads this name as True)
if TYPE_CHECKING:
    import zipfile
    from collections.abc import Callable, Iterable

    Inflate = Callable[[str, int], int]

BUDGET = 512 * 1024 * 1024  # declared member bytes inflated here at most, all wheels together

Identity = tuple  # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)
_Key = tuple  # (identity, header_offset, compress_size, file_size, compress_type)


class _Slot:
    """One member this thread inflates: `result` is (bytes, RECORD digest or None) or None (read it yourself)."""

    __slots__ = ("done", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: tuple | None = None


_lock = threading.Lock()
_slots: dict[_Key, _Slot | None] = {}  # None: claimed by the reader before this thread got to it
_started = False


def identity(fd: int) -> Identity:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _key(ident: Identity, info: zipfile.ZipInfo) -> _Key:
    return (ident, info.header_offset, info.compress_size, info.file_size, info.compress_type)


def verify_wheels(args: list[str]) -> list[str]:
    """The wheel files `kestrel-release verify ...` names in `args` (files ending .whl, and the *.whl of
    directories), in order; [] for any other command. Options' values are not wheels; a name that is one
    anyway only costs this thread some work."""
    words = [a for a in args if a not in ("-v", "--verbose")]
    if not words or words[0] != "verify":
        return []
    end = words.index("--") if "--" in words else len(words)
    found: list[str] = []
    for word in [w for w in words[1:end] if not w.startswith("-")] + words[end + 1 :]:
        try:
            if word.endswith(".whl") and os.path.isfile(word):
                found.append(word)
            elif os.path.isdir(word):
                found += sorted(e.path for e in os.scandir(word) if e.name.endswith(".whl") and e.is_file())
        except OSError:
            continue
    return found


def start(paths: list[str], inflate: Inflate) -> None:
    """Start the thread for `paths` (once per process): `inflate(path, budget)` (wheel.inflate_early) claims
    each member with `claim`, and returns the budget left. It never raises and never blocks the exit."""
    global _started
    if not paths or _started:
        return
    _started = True
    threading.Thread(target=_run, args=(paths, inflate), name="kestrel-early-inflate", daemon=True).start()


def _run(paths: Iterable[str], inflate: Inflate) -> None:
    budget = BUDGET
    for path in paths:
        try:
            budget = inflate(path, budget)
        except Exception:  # a speed-up only: the reader reads and reports the file itself
            continue
        if budget <= 0:
            return


def claim(ident: Identity, info: zipfile.ZipInfo) -> _Slot | None:
    """The slot the early thread fills for this member, or None: the reader got there first (and from then on
    is ahead in this wheel). The thread must set `done` on every slot it got, whatever happens."""
    key = _key(ident, info)
    with _lock:
        if key in _slots:
            return None
        slot = _slots[key] = _Slot()
    return slot


class Taker:
    """What the reader asks for one open file: the members this thread inflated."""

    def __init__(self, ident: Identity) -> None:
        self.ident = ident

    def take(self, info: zipfile.ZipInfo) -> tuple | None:
        """(bytes, RECORD digest or None) of the member, waiting if this thread is inflating it; None: read it
        yourself (and from then on this thread leaves this wheel alone)."""
        key = _key(self.ident, info)
        with _lock:
            slot = _slots.get(key)
            if slot is None:
                _slots[key] = None
                return None
            _slots[key] = None  # taken once: the memory goes with the reader's copy
        slot.done.wait()
        return slot.result


def taker(fd: int) -> Taker | None:
    """A Taker for the file open at `fd`, or None when this process started no early inflating."""
    return Taker(identity(fd)) if _started else None
