"""PEP 440 arithmetic for `version bump`: parse a version and compute the next one of a kind.

Pure (no files, no I/O), so the bump table in version/__init__.py's docstring is tested here alone.
"""

from __future__ import annotations

import difflib
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError

if TYPE_CHECKING:
    from packaging.version import Version

KINDS = ("major", "minor", "patch", "pre", "rc", "post", "dev", "nightly")
_NEXT_PHASE = {"a": "b", "b": "rc"}


def parse(text: str, what: str = "version") -> Version:
    """A public PEP 440 `Version`; UsageError for invalid strings and local versions."""
    from packaging.version import InvalidVersion, Version

    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise UsageError(
            f"{what} '{text}' is not a valid PEP 440 version", "use e.g. 1.2.3, 1.2.3rc1, 1.2.3.post1 or 1.2.3.dev4"
        ) from None
    if version.local is not None:
        raise UsageError(
            f"{what} '{text}' is a local version (+{version.local}); PyPI refuses local versions",
            f"drop the '+{version.local}' part (nightlies use .devN)",
        )
    return version


def _fmt(
    v: Version,
    release: tuple[int, ...],
    pre: tuple[str, int] | None = None,
    post: int | None = None,
    dev: int | None = None,
) -> str:
    from packaging.version import Version

    text = (f"{v.epoch}!" if v.epoch else "") + ".".join(map(str, release))
    text += f"{pre[0]}{pre[1]}" if pre else ""
    text += f".post{post}" if post is not None else ""
    text += f".dev{dev}" if dev is not None else ""
    return str(Version(text))


def _release3(v: Version) -> tuple[int, int, int]:
    major, minor, micro = (*v.release, 0, 0)[:3]
    return major, minor, micro


def _unreleased(v: Version) -> bool:
    """A pre or dev release of a final that is not out yet (sorts before it)."""
    return v.post is None and (v.pre is not None or v.dev is not None)


def _level(v: Version, kind: str) -> str:
    major, minor, micro = _release3(v)
    # Finalize X.Y.Z-to-be when it already is at that level (npm semantics).
    if kind == "major":
        done = _unreleased(v) and minor == 0 and micro == 0
        return _fmt(v, v.release if done else (major + 1, 0, 0))
    if kind == "minor":
        done = _unreleased(v) and micro == 0
        return _fmt(v, v.release if done else (major, minor + 1, 0))
    return _fmt(v, v.release if _unreleased(v) else (major, minor, micro + 1))


def _next_patch(v: Version) -> tuple[int, int, int]:
    major, minor, micro = _release3(v)
    return major, minor, micro + 1


def _pre(v: Version, rc_only: bool) -> str:
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


def _post(v: Version) -> str:
    if v.pre is not None or v.dev is not None:
        raise UsageError(
            f"cannot bump post on {v}: post releases follow a final release",
            "finalize it first (bump patch) or use 'version set'",
        )
    return _fmt(v, v.release, post=(v.post or 0) + 1)


def _dev(v: Version, number: int | None) -> str:
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
    raise UsageError(
        f"unknown bump kind '{kind}'" + (f" (did you mean '{match[0]}'?)" if match else ""),
        "use one of " + ", ".join(KINDS),
    )
