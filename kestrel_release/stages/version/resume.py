"""Finishing a version bump that a killed `release` may have half-written.

`release` records the bump's target in its state before writing any file; a resumed run
calls `complete` with that target instead of bumping again, so a kill at any instant of the
bump never leads to a second bump or to "versions disagree".
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
from kestrel_release.stages.version import files as version_files
from kestrel_release.stages.version.result import VersionResult

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


def complete(cfg: Config, old: str, new: str) -> VersionResult:
    """Move every version file still at `old` to `new`; refuse files holding anything else.

    Nothing to write when all hold `new` already. A third value is a person's edit, not ours.
    """
    current = pyproject_version(cfg) or cfg.version
    locations = version_files.version_locations(dataclasses.replace(cfg, version=current))
    strange = [f"{loc.rel} has {loc.value}" for loc in locations if not (loc.states(old) or loc.states(new))]
    if strange:
        raise UsageError(
            f"cannot finish the bump {old} -> {new}: {', '.join(strange)}",
            f"set every version file to {new} by hand, then run release --resume",
        )
    changes = version_files.rewrite_all([loc for loc in locations if not loc.states(new)], new)
    with fsutil.project_lock(cfg.project_dir, "version"):
        collect_leftovers(locations)
        version_files.write_all(changes, old)
    return VersionResult("bump", cfg.name, old, new, [loc.rel for loc, _ in changes])


def collect_leftovers(locations: list[version_files.Location]) -> None:
    """Temp files of an earlier run killed mid-write, beside the version files it was writing."""
    from kestrel_release.files import safepaths

    safepaths.collect_leftovers(*{loc.path.resolve().parent for loc in locations})


def pyproject_version(cfg: Config) -> str | None:
    """[project].version as it is on disk now (cfg may predate a half-written bump)."""
    from kestrel_release._compat import tomllib

    try:
        with open(cfg.project_dir / version_files.PYPROJECT, "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    except (OSError, KeyError, TypeError, ValueError):
        return None


# ---------------------------------------------------------------- plain `version bump|set`

JOURNAL = ".kestrel-version.json"


@contextlib.contextmanager
def journal(cfg: Config, action: str, value: str, old: str, new: str) -> Iterator[None]:
    """Record a change before its first write; remove the record once every file is written.

    A run killed in between leaves the record, and the next `version` command finishes that
    change first (see `recover`): the files never stay disagreeing and a retried bump is not
    applied twice.
    """
    path = cfg.project_dir / JOURNAL
    record = {"action": action, "value": value, "from": old, "to": new}
    fsutil.atomic_write_bytes(path, (json.dumps(record) + "\n").encode())  # not a version file: bytes API
    try:
        yield
    except BaseException:
        path.unlink(missing_ok=True)  # write_all restored every file: nothing is pending
        raise
    path.unlink(missing_ok=True)


def recover(cfg: Config, action: str, value: str) -> tuple[VersionResult, bool] | None:
    """Finish the change a killed run recorded: (its result, whether it was this same command).

    None when nothing is pending. When it was the same command the caller is done (that bump
    happens once); otherwise the caller goes on from the recovered version.
    """
    path = cfg.project_dir / JOURNAL
    with fsutil.project_lock(cfg.project_dir, "version"):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            old, new = str(record["from"]), str(record["to"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # unreadable: the files themselves say what happened
            return None
        result = complete(cfg, old, new)
        path.unlink(missing_ok=True)
    result.action = str(record.get("action", "bump"))
    same = (record.get("action"), record.get("value")) == (action, value)
    result.warnings.append(
        f"finished an interrupted change {old} -> {new}" + ("" if same else f" before this {action} {value}")
    )
    return result, same
