"""A build output's project name and version, from the release-manifest.json that build wrote.

Why: a setup.py project's name and version come from its build backend, which (isolated) must
install the build requirements: on an offline host that fails although the wheels were built
there with --no-isolation. build checked the wheels' METADATA against the backend before it
wrote the manifest, so commands that work on that output (verify, publish, assemble,
release --from) take the identity from it and ask the backend only when there is none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kestrel_release.errors import IncompatibleRecordError, KestrelError
from kestrel_release.output_dir import manifest
from kestrel_release.records.manifest import Manifest


def _manifest(path: Path) -> Manifest | None:
    """The manifest behind a given path: the one naming a wheel; a folder's only one (a folder that
    several projects share says nothing about which of them this is)."""
    if not path.is_dir():
        found = manifest.for_wheel(path)
        return found[1] if found else None
    files = manifest.manifest_files(path)
    return manifest.read(files[0]) if len(files) == 1 else None


def from_outputs(paths: Sequence[Path], default: Path) -> tuple[str, str] | None:
    """(name, version) from the first manifest among the outputs, or None (then ask the backend)."""
    for out in [Path(p) for p in paths] or [default]:
        try:
            data = _manifest(out)
        except IncompatibleRecordError:
            raise  # another tool version's output: asking the backend would only delay that line
        except KestrelError:
            continue  # an unreadable manifest: verify reports it on its own; the backend answers here
        if data and data.package and data.version:
            return data.package, data.version
    return None
