"""The files that hold the version: pyproject.toml's [project].version and the config's version_files.

Read them all, say when they disagree, rewrite each (tomlkit keeps pyproject.toml byte-identical
apart from the value; a pattern keeps its shape: a tuple stays a tuple, a header define a define,
see version_pattern.py) and write them all-or-nothing. Several patterns may name one file
(msgpack's `version = (1, 1, 2)` beside `__version__ = "1.1.2"`): it is rewritten once, with all.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError
from kestrel_release.files import fsutil
from kestrel_release.project import version_pattern
from kestrel_release.stages.version.source import is_static as _static

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

PYPROJECT = "pyproject.toml"


@dataclass
class Location:
    """One file that holds the version: its text now and the value(s) found in it."""

    path: Path
    rel: str
    text: str
    value: str
    pattern: str | None = None  # None: pyproject.toml's [project].version

    def states(self, version: str) -> bool:
        """Whether this file says `version` (a tuple says 1.2.0 for 1.2.0rc1 too: it has no room for rc1)."""
        return version_pattern.holds(self.pattern or "{version}", self.value, version)

    @property
    def release_only(self) -> bool:
        return self.pattern is not None and version_pattern.release_only(self.pattern)


def _read(path: Path, rel: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")  # bytes: keep CRLF line endings as they are
    except FileNotFoundError:
        raise UsageError(f"version file {rel} does not exist", "fix version_files in [tool.kestrel-release]") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read version file {rel}: {exc}") from None


def _regex(pattern: str) -> re.Pattern[str]:
    return version_pattern.compile_pattern(pattern)


def _pattern_location(cfg: Config, path_text: str, pattern: str) -> Location:
    path = (cfg.project_dir / path_text).resolve()
    if not path.is_relative_to(cfg.project_dir.resolve()):
        raise UsageError(
            f"version file {path_text} is outside the project {cfg.project_dir}",
            "version_files paths are relative to the project directory",
        )
    text = _read(path, path_text)
    values = {version_pattern.value(m) for m in _regex(pattern).finditer(text)}
    if not values:
        raise UsageError(
            f"{path_text} has no line matching {pattern!r}", "fix the pattern in version_files or the file"
        )
    if len(values) > 1:
        raise UsageError(f"{path_text} holds several versions: {', '.join(sorted(values))}", "make them equal by hand")
    return Location(path, path_text, text, values.pop(), pattern)


def _locations(cfg: Config) -> list[Location]:
    """One location per entry, except the {major}/{minor}/{micro} spots of one file: one location holding
    them all, in the file's order (they are one version, read and rewritten together)."""
    out: list[Location] = []
    done: set[str] = set()
    for vf in cfg.version_files:
        if not version_pattern.split_only(vf.pattern):
            out.append(_pattern_location(cfg, vf.path, vf.pattern))
            continue
        if vf.path in done:
            continue
        done.add(vf.path)
        parts = [v.pattern for v in cfg.version_files if v.path == vf.path and version_pattern.split_only(v.pattern)]
        if len(parts) == 1:
            out.append(_pattern_location(cfg, vf.path, parts[0]))
            continue
        text = _read((cfg.project_dir / vf.path).resolve(), vf.path)
        for part in parts:
            if not _regex(part).search(text):
                raise UsageError(
                    f"{vf.path} has no line matching {part!r}", "fix the pattern in version_files or the file"
                )
        parts.sort(key=lambda p: _regex(p).search(text).start())  # type: ignore[union-attr]
        out.append(_pattern_location(cfg, vf.path, version_pattern.merge(parts)))
    return out


def version_locations(cfg: Config) -> list[Location]:
    """pyproject.toml first, then every configured version file (only those without [project].version)."""
    if cfg.version is None or not _static(cfg):  # (a static version is never None: is_static)
        if cfg.version_files:
            return _locations(cfg)
        where = "[project].version" if cfg.metadata_source == "pyproject" else "the version (from setup.py)"
        raise UsageError(
            f"{where} of {cfg.name} is dynamic; kestrel-release cannot own it without version_files",
            'list the files that hold it: version_files = [{path = "pkg/__init__.py", '
            "pattern = '__version__ = \"{version}\"'}] in [tool.kestrel-release]",
        )
    pyproject = cfg.project_dir / PYPROJECT
    locations = [Location(pyproject, PYPROJECT, _read(pyproject, PYPROJECT), cfg.version)]
    locations += _locations(cfg)
    return locations


def stated_version(locations: list[Location]) -> str:
    """The version the files state: the first one that can hold a whole version (pyproject.toml when static)."""
    return next((loc.value for loc in locations if not loc.release_only), locations[0].value)


def disagreement(locations: list[Location]) -> str | None:
    if not disagreeing(locations):
        return None
    return "versions disagree: " + ", ".join(f"{loc.rel} has {loc.value}" for loc in locations)


def disagreeing(locations: list[Location]) -> list[str]:
    """One line per file that does not state the version the others do (what `version` warns)."""
    if not locations:
        return []
    now = stated_version(locations)
    ref = next(loc for loc in locations if loc.value == now)
    return [
        f"versions disagree: {loc.rel} has {loc.value}, {ref.rel} has {now}" for loc in locations if not loc.states(now)
    ]


def rewrite_all(locations: list[Location], new: str) -> list[tuple[Location, str]]:
    """The new text of every file that changes: a file named by several locations gets all of them."""
    by_path: dict[Path, tuple[Location, str]] = {}
    for loc in locations:
        first, text = by_path.get(loc.path, (loc, loc.text))
        by_path[loc.path] = (first, _rewrite(loc, new, text))
    return [(loc, text) for loc, text in by_path.values() if text != loc.text]


def _rewrite(loc: Location, new: str, text: str | None = None) -> str:
    text = loc.text if text is None else text
    if loc.pattern is not None:
        return _regex(loc.pattern).sub(lambda m: version_pattern.render(m, new), text)
    import tomlkit

    doc = tomlkit.parse(text)
    old = doc["project"]["version"]
    # Same string type (basic/literal) as before; tomlkit keeps the line's comment.
    doc["project"]["version"] = tomlkit.string(new, literal=old.type.is_literal())
    return tomlkit.dumps(doc)


def write_all(changes: list[tuple[Location, str]], old: str) -> None:
    """Write every file or none: on a failure, restore the ones already written."""
    written: list[Location] = []
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


def diff_of(changes: list[tuple[Location, str]]) -> str:
    return "".join(
        "".join(difflib.unified_diff(loc.text.splitlines(True), text.splitlines(True), f"a/{loc.rel}", f"b/{loc.rel}"))
        for loc, text in changes
    )
