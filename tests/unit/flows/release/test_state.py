"""The release state in a folder shared by projects: each project its own state and its own wheels."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kestrel_release.flows.release import state as release_state
from kestrel_release.output_dir import manifest
from tests.factories import save_manifest


def _output(out: Path, package: str, name: str = manifest.MANIFEST, sums: str = manifest.SUMS) -> str:
    out.mkdir(exist_ok=True)
    wheel = f"{manifest.norm(package)}-1.0-py3-none-any.whl"
    (out / wheel).write_bytes(package.encode())
    rows = [{"filename": wheel, "sha256": hashlib.sha256(package.encode()).hexdigest()}]
    record = save_manifest(out, {"package": package, "version": "1.0", "wheels": rows}, name)
    manifest.write_sums(out, record.wheels, sums)
    return wheel


def test_each_project_in_a_shared_folder_has_its_own_release_state_and_wheels(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _output(out, "mini-ext")
    assert release_state.state_path(out, "mini-ext") == out / ".release-state.json"
    assert release_state.state_path(out, "other-ext") == out / ".release-state.other_ext.json"
    second = _output(out, "other-ext", *manifest.project_names("other-ext"))
    release_state.ReleaseState(release_state.state_path(out, "mini-ext"), {"bump": None}).save()
    theirs = release_state.ReleaseState(release_state.state_path(out, "other-ext"), {"bump": "patch"})
    theirs.save()
    assert release_state.load(out, "other-ext").params == {"bump": "patch"}
    assert release_state.load(out, "mini-ext").params == {"bump": None}
    assert list(release_state.hash_wheels(out, "other-ext")) == [second]
    assert list(release_state.hash_wheels(out, "mini-ext")) == [first]
    # A project with no build in the folder yet never takes another project's wheels.
    assert release_state.hash_wheels(out, "third") == {}
