"""Release state: which steps of `release` finished, and the hashes of what they made.

It lives in the output directory (`.release-state.json`; `.release-state.<name>.json` for a
project sharing the folder with another's build, see state_path) so `release --resume`
continues after the last finished step, and refuses when the artifacts changed
since (someone rebuilt or edited a wheel between the two runs).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release.errors import UsageError
from kestrel_release.files import safejson
from kestrel_release.files.fsutil import atomic_write_text, sha256_file
from kestrel_release.records import release_state
from kestrel_release.records.release_state import StateFile

STATE_FILE = ".release-state.json"


@dataclass
class ReleaseState:
    """What a release run has done so far; saved after every step."""

    path: Path
    params: dict[str, Any]
    done: list[str] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)  # wheel filename -> sha256
    version: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # {"from": old, "to": new}, saved BEFORE any version file is written: a run killed during
    # or after the bump resumes by finishing that same bump, never by bumping again.
    bump: dict[str, str] | None = None

    def mark(self, step: str, seconds: float) -> None:
        if step not in self.done:
            self.done.append(step)
        self.timings[step] = round(seconds, 2)
        self.save()

    def save(self) -> None:
        record = StateFile(
            self.params, self.done, self.artifacts, version=self.version, timings=self.timings, bump=self.bump
        )
        payload = release_state.to_json(dataclasses.replace(record, saved_at=int(time.time())))
        atomic_write_text(self.path, json.dumps(payload, indent=2, sort_keys=True) + "\n")

    def move_to(self, out_dir: Path) -> None:
        """The build replaced the output directory: keep the state inside the new one."""
        self.path = Path(out_dir) / self.path.name
        self.save()


def state_path(out_dir: Path, package: str | None = None) -> Path:
    """Where `package`'s release state lives in `out_dir`: `.release-state.json`, or in a folder whose
    plain manifest is another project's (a shared folder, manifest.py), `.release-state.<name>.json`,
    so one project's release never reads or replaces another's state."""
    from kestrel_release.output_dir import manifest

    out_dir = Path(out_dir)
    if package:
        own = out_dir / f".release-state.{manifest.norm(package)}.json"
        located = manifest.locate(out_dir, package)
        theirs = located is None and (out_dir / manifest.MANIFEST).is_file()
        if own.is_file() or theirs or (located is not None and located.name != manifest.MANIFEST):
            return own
    return out_dir / STATE_FILE


def load(out_dir: Path, package: str | None = None) -> ReleaseState | None:
    path = state_path(out_dir, package)
    if not path.is_file():
        return None
    try:
        data = safejson.load_file(path, str(path), max_bytes=8 * 1024 * 1024)  # bounded: a copied output
    except (safejson.Unusable, UnicodeDecodeError):
        raise UsageError(f"{path} is damaged", "check the version, then run release --force to start over") from None
    record = release_state.from_json(data, str(path))
    return ReleaseState(
        path,
        record.params,
        list(record.done),
        dict(record.artifacts),
        record.version,
        dict(record.timings),
        record.bump,
    )


def hash_wheels(out_dir: Path, package: str | None = None) -> dict[str, str]:
    """The build's own wheels (those `package`'s manifest names: the folder may be a shared wheelhouse)."""
    from kestrel_release.output_dir import manifest

    if manifest.load(out_dir, package):
        named = manifest.wheel_paths(out_dir, package)
    elif package and manifest.manifest_files(out_dir):  # only other projects' builds: never their wheels
        named = [p for p in sorted(Path(out_dir).glob("*.whl")) if p.name.startswith(manifest.norm(package) + "-")]
    else:
        named = sorted(Path(out_dir).glob("*.whl"))
    return {p.name: sha256_file(p) for p in sorted(named) if p.is_file()}


def unfinished_bump(state: ReleaseState | None, steps: list[str]) -> str | None:
    """The version an unfinished release (of these `steps`) bumped or was bumping to, else None."""
    if state is None or not state.bump or all(step in state.done for step in steps):
        return None
    return state.bump.get("to")


class WheelsChanged(UsageError):
    """The wheels are not those the finished steps used: a rebuild (--resume --force) is the way on."""


def check_artifacts(state: ReleaseState, out_dir: Path, package: str | None = None) -> None:
    """Refuse to resume when the wheels differ from those the finished steps used."""
    if not state.artifacts:
        return
    current = hash_wheels(out_dir, package)
    if current != state.artifacts:
        changed = sorted(set(current.items()) ^ set(state.artifacts.items()))
        names = sorted({name for name, _ in changed})
        raise WheelsChanged(
            f"cannot resume: the wheels in {out_dir} changed since the last run ({', '.join(names)})",
            "run release --resume --force to rebuild from the build step (the version stays; no second bump)",
        )
