"""Every error a user can see, each with its documented exit code.

The CLI catches `KestrelError` at the top and prints `message` (one line) plus
`hint` (what to do); anything else is a bug (exit 1). Keep this table in sync
with the generated docs/reference/exit-codes.md (kestrel_release/reference.py; tests/unit/test_docs_reference.py).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BUG = 1
EXIT_USAGE = 2
EXIT_PREFLIGHT = 3
EXIT_BUILD = 4
EXIT_VERIFY = 5
EXIT_PUBLISH = 6
EXIT_INTERRUPTED = 130


class KestrelError(Exception):
    """Root of every expected failure. `hint` says what to do about it."""

    exit_code = EXIT_BUG
    kind = "error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # one line, always
        text = self.message if not self.hint else f"{self.message} — {self.hint}"
        return " ".join(text.split())


class UsageError(KestrelError):
    """Bad flags, bad configuration, bad version strings, refused operations."""

    exit_code = EXIT_USAGE
    kind = "usage"


class ConfigError(UsageError):
    kind = "config"


class IncompatibleRecordError(UsageError):
    """A manifest or release state written by a kestrel-release whose record schema this one cannot read."""

    kind = "incompatible"


class PreflightError(KestrelError):
    """The machine is not fit for the command (missing GPU, tool, interpreter)."""

    exit_code = EXIT_PREFLIGHT
    kind = "preflight"


class BuildError(KestrelError):
    exit_code = EXIT_BUILD
    kind = "build"


class VerifyError(KestrelError):
    exit_code = EXIT_VERIFY
    kind = "verify"


class PublishError(KestrelError):
    exit_code = EXIT_PUBLISH
    kind = "publish"


class FilesystemError(UsageError):
    """The OS refused a file operation the user can fix: disk full, read-only, permissions."""

    kind = "filesystem"


_OS_HINTS = {
    "ENOSPC": "the disk is full: free some space, then run the command again",
    "EDQUOT": "the disk quota is exhausted: free some space, then run the command again",
    "EROFS": "the filesystem is read-only: choose a writable directory",
    "EACCES": "permission denied: check the directory's owner and permissions",
    "EPERM": "operation not permitted: check the directory's owner and permissions",
    "ENOTDIR": "a path component is a file, not a directory: check the path",
    "EISDIR": "the path is a directory, not a file: check the path",
    "ENAMETOOLONG": "the path is too long: choose a shorter one",
    "ELOOP": "the path has a symlink loop: fix the link",
    "EMFILE": "too many open files: raise the limit (ulimit -n)",
    "EIO": "the disk reported an I/O error: check the device",
}


def from_os_error(exc: OSError) -> FilesystemError | None:
    """One line for an OS-level failure (the one place they are mapped); None if not the user's to fix."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    if name not in _OS_HINTS:
        return None
    where = f" {exc.filename}" if exc.filename else ""
    return FilesystemError(f"cannot write{where}: {exc.strerror or name}", _OS_HINTS[name])


class Interrupted(KestrelError):
    exit_code = EXIT_INTERRUPTED
    kind = "interrupted"


#: (exit code, meaning) rows, documented in README.md.
EXIT_CODES: list[tuple[int, str]] = [
    (EXIT_OK, "success"),
    (EXIT_BUG, "internal error (a bug: please report it with the -v output)"),
    (
        EXIT_USAGE,
        "usage or configuration error, refused operation; a build output or release state written by a "
        "kestrel-release whose manifest or state schema this one cannot read",
    ),
    (
        EXIT_PREFLIGHT,
        "preflight: the machine lacks something the configuration requires, or (release) a target "
        "would refuse the release: credentials, the version already on the index, no GitHub repository, "
        "a dirty tree",
    ),
    (EXIT_BUILD, "build failed"),
    (
        EXIT_VERIFY,
        "verify found errors in the wheels; explain: the wheels cannot serve the machine (no wheel for its "
        "Python/platform, or a binary with nothing its GPU and driver load)",
    ),
    (EXIT_PUBLISH, "publish failed (index, GitHub, credentials, network)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C / SIGTERM); nothing half-written"),
]
