"""The files that hold the version: pyproject.toml's [project].version and the config's version_files.

Read them all, say when they disagree, rewrite each (tomlkit keeps pyproject.toml byte-identical
apart from the value) and write them all-or-nothing.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from kestrel_release import fsutil
from kestrel_release.errors import UsageError
from kestrel_release.stages.version.source import is_static as _static

PYPROJECT = "pyproject.toml"
_VERSION_CHARS = r"([0-9A-Za-z.+!_-]+)"


@dataclass
class _Location:
    """One file that holds the version: its text now and the value(s) found in it."""

    path: Path
    rel: str
    text: str
    value: str
    pattern: str | None = None  # None: pyproject.toml's [project].version


def _read(path: Path, rel: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")  # bytes: keep CRLF line endings as they are
    except FileNotFoundError:
        raise UsageError(f"version file {rel} does not exist", "fix version_files in [tool.kestrel-release]") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read version file {rel}: {exc}") from None


def _regex(pattern: str) -> re.Pattern[str]:
    head, _, tail = pattern.partition("{version}")
    return re.compile(re.escape(head) + _VERSION_CHARS + re.escape(tail))


def _pattern_location(cfg, path_text: str, pattern: str) -> _Location:
    path = (cfg.project_dir / path_text).resolve()
    if not path.is_relative_to(cfg.project_dir.resolve()):
        raise UsageError(
            f"version file {path_text} is outside the project {cfg.project_dir}",
            "version_files paths are relative to the project directory",
        )
    text = _read(path, path_text)
    values = set(_regex(pattern).findall(text))
    if not values:
        raise UsageError(
            f"{path_text} has no line matching {pattern!r}", "fix the pattern in version_files or the file"
        )
    if len(values) > 1:
        raise UsageError(f"{path_text} holds several versions: {', '.join(sorted(values))}", "make them equal by hand")
    return _Location(path, path_text, text, values.pop(), pattern)


def _locations(cfg) -> list[_Location]:
    """pyproject.toml first, then every configured version file (only those without [project].version)."""
    if not _static(cfg):
        if cfg.version_files:
            return [_pattern_location(cfg, vf.path, vf.pattern) for vf in cfg.version_files]
        where = "[project].version" if cfg.metadata_source == "pyproject" else "the version (from setup.py)"
        raise UsageError(
            f"{where} of {cfg.name} is dynamic; kestrel-release cannot own it without version_files",
            'list the files that hold it: version_files = [{path = "pkg/__init__.py", '
            "pattern = '__version__ = \"{version}\"'}] in [tool.kestrel-release]",
        )
    pyproject = cfg.project_dir / PYPROJECT
    locations = [_Location(pyproject, PYPROJECT, _read(pyproject, PYPROJECT), cfg.version)]
    locations += [_pattern_location(cfg, vf.path, vf.pattern) for vf in cfg.version_files]
    return locations


def _disagreement(locations: list[_Location]) -> str | None:
    if len({loc.value for loc in locations}) <= 1:
        return None
    return "versions disagree: " + ", ".join(f"{loc.rel} has {loc.value}" for loc in locations)


def _rewrite(loc: _Location, new: str) -> str:
    if loc.pattern is not None:
        head, _, tail = loc.pattern.partition("{version}")
        return _regex(loc.pattern).sub(lambda _m: head + new + tail, loc.text)
    import tomlkit

    doc = tomlkit.parse(loc.text)
    old = doc["project"]["version"]
    # Same string type (basic/literal) as before; tomlkit keeps the line's comment.
    doc["project"]["version"] = tomlkit.string(new, literal=old.type.is_literal())
    return tomlkit.dumps(doc)


def _write_all(changes: list[tuple[_Location, str]], old: str) -> None:
    """Write every file or none: on a failure, restore the ones already written."""
    written: list[_Location] = []
    try:
        for loc, text in changes:
            fsutil.atomic_write_text(loc.path, text)
            written.append(loc)
    except BaseException as exc:  # Ctrl-C between two files must not leave them disagreeing
        for done in reversed(written):
            fsutil.atomic_write_text(done.path, done.text)
        if not isinstance(exc, OSError):
            raise
        raise UsageError(
            f"cannot write {loc.rel}: {exc.strerror or exc}; "
            f"restored {len(written)} file(s), the version is still {old}",
            "fix the file's permissions and run again",
        ) from None


def _diff(changes: list[tuple[_Location, str]]) -> str:
    return "".join(
        "".join(difflib.unified_diff(loc.text.splitlines(True), text.splitlines(True), f"a/{loc.rel}", f"b/{loc.rel}"))
        for loc, text in changes
    )
