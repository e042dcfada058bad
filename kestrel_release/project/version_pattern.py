"""The patterns of `version_files`: where a version is written and in which shape.

A pattern is the file's text with the version replaced by one placeholder:

- `{version}`: the whole version as a string (`__version__ = "{version}"`, `#define X_VERSION "{version}"`,
  a VERSION file's `{version}`, meson.build's `version: '{version}'`);
- `{version_tuple}`: the release numbers as a tuple's items (`version = ({version_tuple})` for
  `version = (1, 1, 2)`); the separator and the number of items are kept;
- `{release}`: the release numbers joined with dots (CMake's `project(x VERSION {release})`);
- `{major}`, `{minor}`, `{micro}`: one number each, e.g. three lines `MAJOR = {major}` ... . They may also
  be spread over several entries of one file (`#define X_MAJOR {major}`, `#define X_MINOR {minor}`,
  `#define X_PATCH {micro}`, with other lines between them): `group_problem` checks that the entries
  together hold {major} once, and `merge` makes them one pattern whose parts may have text between them.

The last three hold release numbers only: a tuple cannot say `rc1`, so such a file agrees with any
version of the same release (1.2.0rc1 and 1.2.0 both write `(1, 2, 0)`). Pure, below the stages:
config validation, `version` and `init` all read patterns through here.
"""

from __future__ import annotations

import re

_FULL = r"[0-9A-Za-z.+!_-]+"  # what `{version}` has always matched
_PLACEHOLDERS = {
    "version": _FULL,
    "version_tuple": r"[0-9]+(?:[ \t]*,[ \t]*[0-9]+)+",
    "release": r"[0-9]+(?:\.[0-9]+)*",
    "major": r"[0-9]+",
    "minor": r"[0-9]+",
    "micro": r"[0-9]+",
}
_SPLIT = ("major", "minor", "micro")
_TOKEN = re.compile(r"\{(" + "|".join(_PLACEHOLDERS) + r")\}")
EXAMPLE = "'__version__ = \"{version}\"'"


def problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used (None when it can)."""
    names = _TOKEN.findall(pattern)
    if not names:
        return "has no {version} (or {version_tuple}, {release}, {major}/{minor}/{micro})"
    if len(names) != len(set(names)):
        return "names a placeholder twice"
    if len(names) > 1 and not set(names) <= set(_SPLIT):
        return "mixes {version}, {version_tuple} or {release} with other placeholders"
    if set(names) <= set(_SPLIT) and "major" not in names:
        return "has {minor}/{micro} without {major}"
    return None


GAP = "\x00"  # in a merged pattern (merge): any text between two spots of one file


def split_only(pattern: str) -> bool:
    """The pattern holds only {major}/{minor}/{micro}: a part of a version, maybe one of several entries."""
    names = _TOKEN.findall(pattern)
    return bool(names) and set(names) <= set(_SPLIT)


def group_problem(patterns: list[str]) -> str | None:
    """Why the {major}/{minor}/{micro} entries of one file cannot be read together (None when they can)."""
    names = [n for p in patterns for n in _TOKEN.findall(p)]
    if len(names) != len(set(names)):
        return "name a placeholder twice"
    if "major" not in names:
        return "have {minor}/{micro} without {major}"
    return None


def merge(patterns: list[str]) -> str:
    """One pattern of several spots of one file, in the order they appear in it (the caller sorts)."""
    return GAP.join(patterns)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regex of `pattern`: literal text, a newline in it matching LF or CRLF, one group per placeholder."""
    parts, pos = [], 0
    for m in _TOKEN.finditer(pattern):
        parts.append(_literal(pattern[pos : m.start()]))
        parts.append(f"(?P<{m.group(1)}>{_PLACEHOLDERS[m.group(1)]})")
        pos = m.end()
    parts.append(_literal(pattern[pos:]))
    return re.compile("".join(parts))


def _literal(text: str) -> str:
    return r"[\s\S]*?".join(r"\r?\n".join(re.escape(line) for line in part.split("\n")) for part in text.split(GAP))


def release_only(pattern: str) -> bool:
    return "{version}" not in pattern


def value(match: re.Match[str]) -> str:
    """The version a match states, as text: "1.1.2" for `(1, 1, 2)`."""
    groups = match.groupdict()
    if groups.get("version") is not None:
        return groups["version"]
    if groups.get("version_tuple") is not None:
        return ".".join(n.strip() for n in groups["version_tuple"].split(","))
    if groups.get("release") is not None:
        return groups["release"]
    return ".".join(groups[k] for k in _SPLIT if groups.get(k) is not None)


def holds(pattern: str, found: str, version: str) -> bool:
    """Whether a file showing `found` through `pattern` states `version`."""
    if not release_only(pattern):
        return found == version
    from packaging.version import InvalidVersion, Version

    try:
        return _trimmed(Version(found).release) == _trimmed(Version(version).release)
    except InvalidVersion:
        return False


def _trimmed(release: tuple[int, ...]) -> tuple[int, ...]:
    out = list(release)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


def render(match: re.Match[str], new: str) -> str:
    """The matched text with `new` written in place of the version, in the same shape."""
    groups = match.groupdict()
    if groups.get("version") is not None:
        return _replace(match, {"version": new})
    from packaging.version import Version

    release = list(Version(new).release)
    if groups.get("version_tuple") is not None:
        old = groups["version_tuple"]
        sep = re.search(r"[ \t]*,[ \t]*", old)
        count = old.count(",") + 1
        numbers = release + [0] * (count - len(release))
        return _replace(match, {"version_tuple": (sep.group() if sep else ", ").join(map(str, numbers))})
    if groups.get("release") is not None:
        return _replace(match, {"release": ".".join(map(str, release))})
    padded = release + [0] * 3
    return _replace(match, {k: str(padded[i]) for i, k in enumerate(_SPLIT) if groups.get(k) is not None})


def _replace(match: re.Match[str], values: dict[str, str]) -> str:
    text, base, out, pos = match.group(0), match.start(), [], 0
    for name in sorted(values, key=match.start):
        out += [text[pos : match.start(name) - base], values[name]]
        pos = match.end(name) - base
    return "".join(out) + text[pos:]
