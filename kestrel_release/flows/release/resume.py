"""Whether `release --resume` may continue with this run's options, said in one readable line.

A resumed run must be the same release: the same bump, targets, rehearsal mode and `--from`.
`--python` may be narrowed to a subset while the build has not finished (the advice for a
Python that is missing or fails to build is "drop it from --python, then --resume"); after the
build the wheels exist for every Python, so narrowing needs `--force`, which rebuilds only the
narrowed ones and keeps the bump.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kestrel_release.errors import UsageError

if TYPE_CHECKING:
    from kestrel_release.flows.release.state import ReleaseState

_FLAGS = {"bump": "--bump", "targets": "--targets", "rehearse": "--rehearse", "python": "--python", "from": "--from"}


def _show(value: Any) -> str:
    if value is None or value is False:
        return "not given"
    if value is True:
        return "given"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return str(value)


def check_options(previous: ReleaseState, params: dict[str, Any], force: bool) -> None:
    """UsageError (exit 2) naming each option that differs; a narrowed --python is taken into the state."""
    diffs = []
    for key in [k for k in _FLAGS if k in previous.params or k in params]:
        old, new = previous.params.get(key), params.get(key)
        if old == new:
            continue
        if key == "python" and _narrowed(old, new):
            if "build" in previous.done and not force:
                raise UsageError(
                    f"cannot resume with --python {_show(new)}: the build already made wheels for {_show(old)}",
                    f"add --force to rebuild for {_show(new)} only (the version stays; "
                    "no second bump), or repeat --python " + _show(old),
                )
            continue
        diffs.append(f"{_FLAGS[key]} was {_show(old)}, now {_show(new)}")
    if diffs:
        raise UsageError(
            "cannot resume: this run's options differ from the interrupted run's: " + "; ".join(diffs),
            "repeat the interrupted run's options with --resume (--python may name fewer versions), "
            "or drop --resume to start over",
        )
    previous.params = {**previous.params, "python": params.get("python", previous.params.get("python"))}


def _narrowed(old: Any, new: Any) -> bool:
    return bool(old) and bool(new) and set(new) < set(old)
