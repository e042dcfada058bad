"""Finishing a version bump that a killed `release` may have half-written.

`release` records the bump's target in its state before writing any file; a resumed run
calls `complete` with that target instead of bumping again, so a kill at any instant of the
bump never leads to a second bump or to "versions disagree".
"""

from __future__ import annotations

import dataclasses

from kestrel_release import fsutil
from kestrel_release.errors import UsageError
from kestrel_release.stages import version


def complete(cfg, old: str, new: str) -> version.VersionResult:
    """Move every version file still at `old` to `new`; refuse files holding anything else.

    Nothing to write when all hold `new` already. A third value is a person's edit, not ours.
    """
    current = _pyproject_version(cfg) or cfg.version
    locations = version._locations(dataclasses.replace(cfg, version=current))
    strange = [f"{loc.rel} has {loc.value}" for loc in locations if loc.value not in (old, new)]
    if strange:
        raise UsageError(f"cannot finish the bump {old} -> {new}: {', '.join(strange)}",
                         f"set every version file to {new} by hand, then run release --resume")
    changes = [(loc, version._rewrite(loc, new)) for loc in locations if loc.value == old]
    with fsutil.project_lock(cfg.project_dir, "version"):
        version.collect_leftovers(locations)
        version._write_all(changes, old)
    return version.VersionResult("bump", cfg.name, old, new, [loc.rel for loc, _ in changes])


def _pyproject_version(cfg) -> str | None:
    """[project].version as it is on disk now (cfg may predate a half-written bump)."""
    from kestrel_release.config import tomllib

    try:
        with open(cfg.project_dir / version.PYPROJECT, "rb") as fh:
            return str(tomllib.load(fh)["project"]["version"])
    except (OSError, KeyError, TypeError, ValueError):
        return None
