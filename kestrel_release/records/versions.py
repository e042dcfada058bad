"""Which kestrel-release wrote a record, and whether this one can read it.

Every record file carries `schema_version` (an int, raised whenever a field is added, removed or
changes meaning) and `tool_version` (the kestrel-release that wrote it). A reader takes its own
schema and the older ones it migrates; a newer one is refused in one line naming both tools, since
guessing at fields it does not know could publish what the newer tool would have refused.
"""

from __future__ import annotations

from kestrel_release import __version__
from kestrel_release.errors import IncompatibleRecordError, UsageError


def check(version: object, writer: object, *, kind: str, current: int, oldest: int, where: str, redo: str) -> int:
    """`version` as an int this tool reads (`oldest`..`current`); IncompatibleRecordError (exit 2) when
    it is another one, UsageError when it is not a schema version at all. `redo`: what else the user
    may do ("rebuild with this version")."""
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"{where} has an unknown schema", redo)
    if oldest <= version <= current:
        return version
    wrote = f"kestrel-release {writer}" if isinstance(writer, str) and writer else "an unknown kestrel-release"
    install = f"install kestrel-release {writer}" if isinstance(writer, str) and writer else "install that version"
    raise IncompatibleRecordError(
        f"{where} was written by {wrote} ({kind} schema {version}); "
        f"this is kestrel-release {__version__} (schema {current})",
        f"{redo} or {install}",
    )
