"""`kestrel-release version`: print, bump or set the version everywhere it is written.

The version lives in `[project].version` of the kernel package's pyproject.toml
(rewritten with tomlkit, so comments, ordering and quoting stay byte-identical)
and in every `version_files` entry of the config (a path relative to the project
and a pattern containing `{version}`). All files must agree before a change; the
change is all-or-nothing: every file is written to a temp file and renamed, and
if any write fails the files already written are restored.

Bump kinds (PEP 440 via `packaging`; never a local `+...` version, which PyPI refuses):

=========  ===========================================================================
kind       result (examples from 0.1.0 unless noted)
=========  ===========================================================================
major      1.0.0; a pre/dev release of X.0.0 is finalized: 1.0.0rc1 -> 1.0.0
minor      0.2.0; a pre/dev release of X.Y.0 is finalized: 0.2.0b1 -> 0.2.0
patch      0.1.1; a pre/dev release is finalized: 0.1.1rc2 -> 0.1.1, 0.1.1.dev3 -> 0.1.1
pre        cycles the phase a -> b -> rc: a final starts 0.1.1a1; 0.1.1a2 -> 0.1.1b1;
           0.1.1b1 -> 0.1.1rc1; 0.1.1rc1 -> 0.1.1rc2; 0.1.1.dev3 -> 0.1.1a1;
           0.1.1a1.dev2 -> 0.1.1a1
rc         0.1.1rc1; 0.1.1a2 -> 0.1.1rc1; 0.1.1rc1 -> 0.1.1rc2; 0.1.1rc2.dev1 -> 0.1.1rc2
post       0.1.0.post1; 0.1.0.post1 -> 0.1.0.post2 (refused on pre and dev releases)
dev        0.1.1.dev1; 0.1.1.dev1 -> 0.1.1.dev2; 0.1.1a1 -> 0.1.1a2.dev1;
           0.1.0.post1 -> 0.1.0.post2.dev1
nightly    0.1.1.devYYYYMMDDHHMM (UTC) of the next patch: sortable, accepted by PyPI.
           A version that already has a .devN keeps its base (0.1.1.dev202611221530
           -> 0.1.1.dev202611230300); 0.1.1rc1 -> 0.1.1rc2.devYYYYMMDDHHMM
=========  ===========================================================================

Refused with exit 2: a dynamic version, an invalid or local version, a version that
does not go forward (unless --force), files that disagree (unless --force, which
overwrites them all), a dirty tree with --commit/--tag (unless --allow-dirty), an
existing tag. `--tag` implies `--commit` (a tag must point at the version change).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kestrel_release import console, fsutil
from kestrel_release.errors import UsageError
from kestrel_release.stages.version.source import backend_version as _backend_version
from kestrel_release.stages.version.source import check_bumpable
from kestrel_release.stages.version.source import is_static as _static

KINDS = ("major", "minor", "patch", "pre", "rc", "post", "dev", "nightly")
PYPROJECT = "pyproject.toml"
_VERSION_CHARS = r"([0-9A-Za-z.+!_-]+)"
_NEXT_PHASE = {"a": "b", "b": "rc"}


@dataclass
class VersionResult:
    """What `show`/`change` did: `old` -> `new` in `files` (relative to the project)."""

    action: str  # show | bump | set
    name: str
    old: str
    new: str
    files: list[str] = field(default_factory=list)
    dry_run: bool = False
    diff: str = ""
    commit: str | None = None
    tag: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"action": self.action, "name": self.name, "old": self.old, "new": self.new,
                "files": self.files, "dry_run": self.dry_run, "diff": self.diff,
                "commit": self.commit, "tag": self.tag, "warnings": self.warnings}


# ---------------------------------------------------------------- pure version arithmetic

def parse(text: str, what: str = "version"):
    """A public PEP 440 `Version`; UsageError for invalid strings and local versions."""
    from packaging.version import InvalidVersion, Version

    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise UsageError(f"{what} '{text}' is not a valid PEP 440 version",
                         "use e.g. 1.2.3, 1.2.3rc1, 1.2.3.post1 or 1.2.3.dev4") from None
    if version.local is not None:
        raise UsageError(f"{what} '{text}' is a local version (+{version.local}); PyPI refuses local versions",
                         f"drop the '+{version.local}' part (nightlies use .devN)")
    return version


def _fmt(v, release, pre=None, post=None, dev=None) -> str:
    from packaging.version import Version

    text = (f"{v.epoch}!" if v.epoch else "") + ".".join(map(str, release))
    text += f"{pre[0]}{pre[1]}" if pre else ""
    text += f".post{post}" if post is not None else ""
    text += f".dev{dev}" if dev is not None else ""
    return str(Version(text))


def _release3(v) -> tuple[int, int, int]:
    major, minor, micro = (tuple(v.release) + (0, 0))[:3]
    return major, minor, micro


def _unreleased(v) -> bool:
    """A pre or dev release of a final that is not out yet (sorts before it)."""
    return v.post is None and (v.pre is not None or v.dev is not None)


def _level(v, kind: str) -> str:
    major, minor, micro = _release3(v)
    # Finalize X.Y.Z-to-be when it already is at that level (npm semantics).
    if kind == "major":
        done = _unreleased(v) and minor == 0 and micro == 0
        return _fmt(v, v.release if done else (major + 1, 0, 0))
    if kind == "minor":
        done = _unreleased(v) and micro == 0
        return _fmt(v, v.release if done else (major, minor + 1, 0))
    return _fmt(v, v.release if _unreleased(v) else (major, minor, micro + 1))


def _next_patch(v) -> tuple[int, int, int]:
    major, minor, micro = _release3(v)
    return major, minor, micro + 1


def _pre(v, rc_only: bool) -> str:
    if not _unreleased(v):  # final or post: start the next patch
        return _fmt(v, _next_patch(v), pre=("rc" if rc_only else "a", 1))
    if v.pre is None:  # X.devN: the first pre-release of X
        return _fmt(v, v.release, pre=("rc" if rc_only else "a", 1))
    phase, number = v.pre
    if v.dev is not None and (not rc_only or phase == "rc"):
        return _fmt(v, v.release, pre=v.pre)  # XaN.devM -> XaN
    if rc_only:
        return _fmt(v, v.release, pre=("rc", number + 1 if phase == "rc" else 1))
    if phase == "rc":
        return _fmt(v, v.release, pre=("rc", number + 1))
    return _fmt(v, v.release, pre=(_NEXT_PHASE[phase], 1))


def _post(v) -> str:
    if v.pre is not None or v.dev is not None:
        raise UsageError(f"cannot bump post on {v}: post releases follow a final release",
                         "finalize it first (bump patch) or use 'version set'")
    return _fmt(v, v.release, post=(v.post or 0) + 1)


def _dev(v, number: int | None) -> str:
    """`dev` (number None: increment) and `nightly` (number: a timestamp)."""
    if v.dev is not None:
        return _fmt(v, v.release, v.pre, v.post, number if number is not None else v.dev + 1)
    first = number if number is not None else 1
    if v.pre is not None:
        return _fmt(v, v.release, pre=(v.pre[0], v.pre[1] + 1), dev=first)
    if v.post is not None and number is None:
        return _fmt(v, v.release, post=v.post + 1, dev=first)
    return _fmt(v, _next_patch(v), dev=first)


def next_version(current: str, kind: str, now: datetime | None = None) -> str:
    """The version after `current` for a bump `kind` (see the module docstring)."""
    v = parse(current, "current version")
    if kind in ("major", "minor", "patch"):
        return _level(v, kind)
    if kind in ("pre", "rc"):
        return _pre(v, rc_only=kind == "rc")
    if kind == "post":
        return _post(v)
    if kind == "dev":
        return _dev(v, None)
    if kind == "nightly":
        now = now or datetime.now(timezone.utc)
        if now.tzinfo is None:
            now = now.replace(tzinfo=timezone.utc)
        return _dev(v, int(now.astimezone(timezone.utc).strftime("%Y%m%d%H%M")))
    match = difflib.get_close_matches(kind, KINDS, n=1)
    raise UsageError(f"unknown bump kind '{kind}'" + (f" (did you mean '{match[0]}'?)" if match else ""),
                     "use one of " + ", ".join(KINDS))


# ---------------------------------------------------------------- the files that hold it

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
        raise UsageError(f"version file {rel} does not exist",
                         "fix version_files in [tool.kestrel-release]") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read version file {rel}: {exc}") from None


def _regex(pattern: str) -> re.Pattern[str]:
    head, _, tail = pattern.partition("{version}")
    return re.compile(re.escape(head) + _VERSION_CHARS + re.escape(tail))


def _pattern_location(cfg, path_text: str, pattern: str) -> _Location:
    path = (cfg.project_dir / path_text).resolve()
    if not path.is_relative_to(cfg.project_dir.resolve()):
        raise UsageError(f"version file {path_text} is outside the project {cfg.project_dir}",
                         "version_files paths are relative to the project directory")
    text = _read(path, path_text)
    values = set(_regex(pattern).findall(text))
    if not values:
        raise UsageError(f"{path_text} has no line matching {pattern!r}",
                         "fix the pattern in version_files or the file")
    if len(values) > 1:
        raise UsageError(f"{path_text} holds several versions: {', '.join(sorted(values))}",
                         "make them equal by hand")
    return _Location(path, path_text, text, values.pop(), pattern)


def _locations(cfg) -> list[_Location]:
    """pyproject.toml first, then every configured version file (only those without [project].version)."""
    if not _static(cfg):
        if cfg.version_files:
            return [_pattern_location(cfg, vf.path, vf.pattern) for vf in cfg.version_files]
        where = "[project].version" if cfg.metadata_source == "pyproject" else "the version (from setup.py)"
        raise UsageError(f"{where} of {cfg.name} is dynamic; kestrel-release cannot own it without version_files",
                         "list the files that hold it: version_files = [{path = \"pkg/__init__.py\", "
                         "pattern = '__version__ = \"{version}\"'}] in [tool.kestrel-release]")
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
        raise UsageError(f"cannot write {loc.rel}: {exc.strerror or exc}; "
                         f"restored {len(written)} file(s), the version is still {old}",
                         "fix the file's permissions and run again") from None


def _diff(changes: list[tuple[_Location, str]]) -> str:
    return "".join("".join(difflib.unified_diff(loc.text.splitlines(True), text.splitlines(True),
                                                f"a/{loc.rel}", f"b/{loc.rel}"))
                   for loc, text in changes)


# ---------------------------------------------------------------- show / change

def run(cfg, action: str | None, value: str | None = None, **options) -> VersionResult:
    """`version` (action None: show), `version bump KIND` or `version set X`; options as for `change`."""
    if action is None:
        return show(cfg)
    if action not in ("bump", "set"):
        raise UsageError(f"unknown version action '{action}'", "use 'bump KIND' or 'set X'")
    if value is None:
        raise UsageError(f"version {action} needs an argument", "see kestrel-release version --help")
    return change(cfg, action, value, **options)


def show(cfg) -> VersionResult:
    """The current version (warns, without refusing, when the files disagree)."""
    from kestrel_release.stages.version import source as version_source

    tool = None if _static(cfg) else version_source.vcs_tool(cfg.project_dir)
    if tool:
        current = _backend_version(cfg)
        return VersionResult("show", cfg.name, current, current, [],
                             warnings=[f"the version comes from git tags ({tool})"])
    if cfg.metadata_source == "backend" and not cfg.version_files and cfg.version is not None:
        return VersionResult("show", cfg.name, cfg.version, cfg.version, [], warnings=[
            "the build backend reports this version; list the files that hold it in version_files to bump it"])
    locations = _locations(cfg)
    problem = _disagreement(locations)
    current = cfg.version if _static(cfg) else locations[0].value
    return VersionResult("show", cfg.name, current, current,
                         [loc.rel for loc in locations], warnings=[problem] if problem else [])


def _target(current: str, action: str, value: str, force: bool) -> str:
    if action == "bump":
        new = next_version(current, value)
    elif action == "set":
        new = str(parse(value))
    else:
        raise UsageError(f"unknown version action '{action}'", "use 'bump KIND' or 'set X'")
    if not force and parse(new) <= parse(current):
        word = "is already" if parse(new) == parse(current) else "would go backwards from"
        raise UsageError(f"version {new} {word} the current version {current}",
                         "pass --force to write it anyway")
    return new


def change(cfg, action: str, value: str, *, dry_run: bool = False, commit: bool = False,
           tag: bool = False, allow_dirty: bool = False, force: bool = False) -> VersionResult:
    """Bump or set the version in pyproject.toml and every configured version file.

    `action` is "bump" (value: one of KINDS) or "set" (value: a PEP 440 version).
    With `dry_run` nothing is written; the result's `diff` shows every change.
    `tag` implies `commit`; both refuse a dirty tree unless `allow_dirty`.
    """
    if action == "bump":
        check_bumpable(cfg, value)
    elif action == "set":
        check_bumpable(cfg, "patch", str(parse(value)))
    from kestrel_release.stages.version import resume as version_resume

    recovered = None if dry_run else version_resume.recover(cfg, action, value)  # a killed run's change
    if recovered is not None:
        if recovered[1]:
            return recovered[0]
        cfg = dataclasses.replace(cfg, version=recovered[0].new) if _static(cfg) else cfg
    locations = _locations(cfg)
    problem = _disagreement(locations)
    if problem and not force:
        raise UsageError(problem, "make them agree, or pass --force to overwrite them all")
    current = cfg.version if _static(cfg) else locations[0].value
    new = _target(current, action, value, force)
    changes = [(loc, _rewrite(loc, new)) for loc in locations]
    changes = [(loc, text) for loc, text in changes if text != loc.text]
    result = VersionResult(action, cfg.name, current, new, [loc.rel for loc, _ in changes],
                           dry_run=dry_run, diff=_diff(changes))
    commit = commit or tag
    root = _git_preflight(cfg, f"v{new}" if tag else None, allow_dirty) if commit else None
    if dry_run:
        return result
    with fsutil.project_lock(cfg.project_dir, "version"):
        version_resume.collect_leftovers(locations)
        with version_resume.journal(cfg, action, value, current, new):
            _write_all(changes, current)
        if root is not None:
            _git_record(cfg, result, changes, tag)
    return result


def _git_preflight(cfg, tag_name: str | None, allow_dirty: bool) -> Path:
    """Refuse before writing anything: not a repository, a dirty tree, an existing tag."""
    from kestrel_release.adapters import git

    st = git.state(cfg.project_dir)
    if st.root is None or st.commit is None:
        raise UsageError(f"{cfg.project_dir} is not in a git repository with a commit",
                         "drop --commit/--tag or run 'git init' and commit first")
    if st.dirty and not allow_dirty:
        raise UsageError(f"the git tree under {cfg.project_dir} has uncommitted changes",
                         "commit or stash them, or pass --allow-dirty")
    if tag_name and _tag_exists(st.root, tag_name):
        raise UsageError(f"git tag {tag_name} already exists", "delete it or choose another version")
    return st.root


def _tag_exists(root: Path, name: str) -> bool:
    from kestrel_release import proc

    found = proc.run(["git", "rev-parse", "-q", "--verify", f"refs/tags/{name}"], cwd=root, check=False)
    return found.returncode == 0


def _git_record(cfg, result: VersionResult, changes, tag: bool) -> None:
    """Commit the changed files (restoring them if the commit fails), then tag."""
    from kestrel_release.adapters import git

    message = f"{cfg.name} {result.new}"
    try:
        git.commit_files(cfg.project_dir, [loc.path for loc, _ in changes], f"Bump {message}")
    except UsageError:
        for loc, _ in changes:
            fsutil.atomic_write_text(loc.path, loc.text)
        raise
    result.commit = git.state(cfg.project_dir).commit
    if tag:
        git.tag(cfg.project_dir, f"v{result.new}", message)
        result.tag = f"v{result.new}"


def render(result: VersionResult) -> None:
    """Human output: the version, or what changed (the diff with --dry-run)."""
    for warning in result.warnings:
        console.warn(warning)
    if result.action == "show":
        console.answer(result.new)  # stdout, alone: v=$(kestrel-release version)
        return
    if result.dry_run:
        console.info(result.diff.rstrip("\n"))
        console.ok(f"dry run: would change {result.old} -> {result.new} in {', '.join(result.files)}")
        return
    console.ok(f"{result.name} {result.old} -> {result.new} in {', '.join(result.files)}")
    if result.commit:
        console.ok(f"committed {result.commit[:12]}" + (f", tagged {result.tag}" if result.tag else ""))
