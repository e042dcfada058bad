"""A rehearsal's `--bump` is for the rehearsal only: the project's version files are restored at the end.

The build reads the version from the project, so the bump is written for the length of the
rehearsal and undone afterwards (success, failure or Ctrl-C) by moving every version file back
from the new version to the old one: the same style-preserving rewrite as the bump, so the
files are byte-identical to before. A resumed rehearsal applies the recorded bump again before
its steps. Only a SIGKILL can leave the tree bumped; the next rehearsal (with --resume) restores it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.flows.release.result import ReleaseResult
    from kestrel_release.flows.release.state import ReleaseState


@contextlib.contextmanager
def restoring(cfg: Config, state: ReleaseState, result: ReleaseResult, rehearse: bool) -> Iterator[None]:
    if not rehearse:
        yield
        return
    from kestrel_release.stages.version import resume as version_resume

    if state.bump and "bump" in state.done:  # a resumed rehearsal builds the version it bumped to
        version_resume.complete(cfg, state.bump["from"], state.bump["to"])
    try:
        yield
    finally:
        if state.bump:
            _restore(cfg, state.bump["from"], state.bump["to"], result)


def _restore(cfg: Config, old: str, new: str, result: ReleaseResult) -> None:
    from kestrel_release.errors import KestrelError
    from kestrel_release.stages.version import resume as version_resume

    try:
        changed = version_resume.complete(cfg, new, old)
    except KestrelError as exc:
        console.warn(
            f"the rehearsal's bump {old} -> {new} could not be undone ({exc.message}): the project is left "
            f"at {new}; undo it with: kestrel-release version set {old} --force"
        )
        return
    result.restored = f"{old} -> {new} restored to {old}"
    files = ", ".join(changed.files) or "no file needed it"
    console.info(
        f"rehearsal: the bump {old} -> {new} was for the rehearsal only; version files restored to {old} "
        f"({files}); the rehearsed wheels of {new} stay in {cfg.out_path}"
    )


def heal(cfg: Config) -> Config:
    """A rehearsal killed while writing its bump or its restore leaves files at both versions: restore them.

    Only a mix is healed; all files at the new version is the "bumped, not yet recorded" case,
    which `release --resume` finishes (the plain re-run says so)."""
    import dataclasses

    from kestrel_release.errors import KestrelError
    from kestrel_release.flows.release import state as release_state
    from kestrel_release.stages.version import files as version_files
    from kestrel_release.stages.version import resume as version_resume

    try:
        previous = release_state.load(cfg.out_path, cfg.name)
        if not previous or not previous.params.get("rehearse") or not previous.bump:
            return cfg
        old, new = previous.bump["from"], previous.bump["to"]
        current = version_resume.pyproject_version(cfg) or cfg.version
        locations = version_files.version_locations(dataclasses.replace(cfg, version=current))
        at_old = [loc for loc in locations if loc.states(old) and not loc.states(new)]
        at_new = [loc for loc in locations if loc.states(new) and not loc.states(old)]
        if not at_old or not at_new or any(not (loc.states(old) or loc.states(new)) for loc in locations):
            return cfg
        version_resume.complete(cfg, new, old)
    except KestrelError:
        return cfg  # the run itself reports what is wrong
    console.info(f"rehearsal: finished restoring the version files to {old} (an earlier rehearsal was killed)")
    return dataclasses.replace(cfg, version=old)
