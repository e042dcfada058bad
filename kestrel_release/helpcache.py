"""Replay of `--help` and `--version` output without importing the CLI (start-up under 0.12 s).

Why: rendering help needs Typer, Click and the whole command table, about nine tenths of the
start-up time of `kestrel-release --help`; the answer only changes when the code, the arguments
or the terminal change. A normal (slow) help run records what it printed; the next identical
request prints the recorded text before anything heavy is imported.

The entry is keyed on everything that can change the text: the arguments and program name, the
interpreter, the terminal (isatty, size, COLUMNS/LINES, TERM, NO_COLOR, FORCE_COLOR, encoding),
the variables Typer, Click and the tool read, and the identity (path, mtime, size) of every module
file the slow run had loaded, this package's sources, Typer and Click included. Any doubt (a
missing, unreadable, foreign or stale entry, a changed file) means the normal path. Only this
module, `os`, `sys`, `marshal` and `zlib` are imported on the fast path (all but this module are
built in or already loaded by the interpreter).

Entries live in `<cache dir>/help/`, one file per argument list (so their number stays bounded by
the commands), each replaced atomically (a temp file in the same folder, then os.replace).
"""

from __future__ import annotations

import marshal
import os
import sys
import zlib

TYPE_CHECKING = False  # typing itself is not loaded on the fast path (mypy reads this name as True)
if TYPE_CHECKING:
    from typing import Any, TextIO

FORMAT = 3  # bump when the entry layout or the key changes
_FLAGS = frozenset({"--help", "--version", "-v", "--verbose"})
_ENV_NAMES = ("COLUMNS", "LINES", "TERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERMINAL_WIDTH")
_ENV_PREFIXES = ("KESTREL_RELEASE_", "_KESTREL_RELEASE", "TYPER_", "_TYPER_", "CLICK_", "PYTHON", "LC_", "LANG")


def wanted(args: list[str]) -> bool:
    """Help or version asked with nothing but command names and global flags (no values, no paths),
    so one entry per command path: the cache cannot grow with what users type."""
    if "--help" not in args and "--version" not in args:
        return False
    if sys.stdout is None or sys.stderr is None:  # a closed stream: the normal path's own handling
        return False
    return all(a in _FLAGS or (a[:1].isalpha() and a.replace("-", "").isalpha()) for a in args)


def _cache_root() -> str | None:
    """statedir.cache_dir's location, computed without importing it (the slow path validates it)."""
    env = os.environ
    if env.get("KESTREL_RELEASE_CACHE_DIR"):
        return env["KESTREL_RELEASE_CACHE_DIR"]
    if env.get("XDG_CACHE_HOME"):
        return os.path.join(env["XDG_CACHE_HOME"], "kestrel-release")
    home = os.path.expanduser("~")
    return None if home == "~" else os.path.join(home, ".cache", "kestrel-release")


def _entry_path(root: str, args: list[str]) -> str:
    name = "\0".join([sys.argv[0], *args]).encode("utf-8", "surrogateescape")
    return os.path.join(root, "help", f"{zlib.crc32(name):08x}.bin")


def _terminal() -> tuple:
    out = sys.stdout
    try:
        size: tuple | None = tuple(os.get_terminal_size(sys.__stdout__.fileno()))  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        size = None
    ttys: list[bool | None] = []
    for stream in (sys.stdout, sys.stderr, sys.stdin):
        try:
            ttys.append(bool(stream and stream.isatty()))
        except (ValueError, OSError):
            ttys.append(None)
    return (size, tuple(ttys), getattr(out, "encoding", None), getattr(out, "errors", None))


def key(args: list[str]) -> tuple:
    """Everything besides the loaded files' identity that can change the printed text."""
    env = os.environ
    names = sorted(n for n in env if n in _ENV_NAMES or n.startswith(_ENV_PREFIXES))
    main = sys.modules.get("__main__")
    return (
        FORMAT,
        sys.executable,
        sys.version,
        sys.argv[0],
        getattr(main, "__package__", None),
        tuple(args),
        _terminal(),
        tuple((n, env[n]) for n in names),
    )


def replay(args: list[str]) -> bool:
    """Print the recorded answer to `args` and return True, or return False (take the normal path)."""
    root = _cache_root()
    if root is None:
        return False
    try:
        with open(_entry_path(root, args), "rb") as f:
            entry = marshal.loads(f.read())
        fmt, entry_key, files, text = entry
        if fmt != FORMAT or entry_key != key(args) or not isinstance(text, str) or not text:
            return False
        for path, mtime_ns, size in files:
            st = os.stat(path)
            if st.st_mtime_ns != mtime_ns or st.st_size != size:
                return False
    except (OSError, ValueError, EOFError, TypeError):
        return False
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError:  # disk full, closed pipe: the normal path says so in its one line (and exit code)
        discard_pending(sys.stdout)
        return False
    return True


def discard_pending(stream: Any) -> None:
    """Drop what `stream` holds unwritten after a failed write: flushed into /dev/null through its own
    descriptor, which then points where it did. Else the normal path's help would follow the replayed text,
    and the interpreter would try the write again at exit ("Exception ignored", status 120)."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return
    saved, null = os.dup(fd), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(null)


class _Tee:
    """sys.stdout as it was, noting what was written through it (help and version are text)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.written: list[str] = []
        self.bypassed = False

    def write(self, text: str) -> int:
        if isinstance(text, str):
            self.written.append(text)
        elif text:  # Click probes with b"" to tell a binary writer; real bytes cannot be replayed
            self.bypassed = True
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":  # a writer that goes around the text stream: cannot be recorded
            self.bypassed = True
        return getattr(self._stream, name)


class Recorder:
    """Installed before the CLI is imported; `save()` after a clean exit stores the answer."""

    def __init__(self, args: list[str]) -> None:
        self.args = list(args)
        self.key = key(args)  # the terminal as the request saw it, before any stream is wrapped
        self._out = _Tee(sys.stdout)
        self._err = _Tee(sys.stderr)
        sys.stdout, sys.stderr = self._out, self._err

    def stop(self) -> None:
        if sys.stdout is self._out:
            sys.stdout = self._out._stream
        if sys.stderr is self._err:
            sys.stderr = self._err._stream

    def save(self) -> None:
        """Store what was printed, when it is exactly the help or version and nothing else happened
        (no stderr line, no write around the text stream). Never fails the command."""
        self.stop()
        try:
            text = "".join(self._out.written)
            if not text or self._err.written or self._out.bypassed or self._err.bypassed:
                return
            from kestrel_release.files import statedir

            root = str(statedir.cache_dir())  # validates a configured dir; an unusable one: no entry
            if root != _cache_root():
                return
            files = _loaded_files()
            if files is None:
                return
            data = marshal.dumps((FORMAT, self.key, files, text))
            path = _entry_path(root, self.args)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except Exception:  # a cache that cannot be written is only a slower next --help
            return


def _loaded_files() -> tuple | None:
    """(path, mtime_ns, size) of the source of every module loaded now: the code that rendered."""
    files = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            return None  # a module whose file vanished: do not trust a key without it
        files.add((path, st.st_mtime_ns, st.st_size))
    return tuple(sorted(files))
