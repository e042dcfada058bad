"""outputs.install in a folder shared by projects and versions: own manifest and sums per project,
superseded wheels of the project removed (only those it wrote), nothing else touched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kestrel_release.errors import PublishError
from kestrel_release.output_dir import manifest, outputs
from tests.factories import save_manifest


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _staged(root: Path, package: str, version: str) -> tuple[Path, str]:
    """A build's staging dir as build._collect leaves it: one wheel, the plain manifest and sums."""
    staged = root / f"stage-{package}-{version}"
    staged.mkdir(exist_ok=True)  # install moves its files out: empty again
    name = f"{manifest.norm(package)}-{version}-cp312-cp312-manylinux_2_34_x86_64.whl"
    data = f"{package} {version}".encode()
    (staged / name).write_bytes(data)
    rows = [{"filename": name, "sha256": _sha(data)}]
    record = save_manifest(staged, {"package": package, "version": version, "wheels": rows})
    manifest.write_sums(staged, record.wheels)
    return staged, name


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_superseded_wheel_goes_only_when_the_tool_wrote_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    staged, _old = _staged(tmp_path, "mini-ext", "0.1.0")
    outputs.install(staged, out, "mini-ext")
    user_old = "mini_ext-0.0.9-cp312-cp312-manylinux_2_34_x86_64.whl"  # never written by the tool
    (out / user_old).write_bytes(b"the user's")
    staged, new = _staged(tmp_path, "mini-ext", "0.1.1")
    outputs.install(staged, out, "mini-ext")
    wheels = sorted(p.name for p in out.glob("*.whl"))
    assert wheels == sorted([user_old, new])
    assert manifest.load(out, "mini-ext").filenames() == [new]
    assert not list(out.glob(".kestrel-install*"))

    # A wheel the manifest names but whose bytes someone changed is no longer the tool's: it stays.
    (out / new).write_bytes(b"edited by hand")
    staged, newer = _staged(tmp_path, "mini-ext", "0.1.2")
    outputs.install(staged, out, "mini-ext")
    assert (out / new).read_bytes() == b"edited by hand" and (out / newer).is_file()


def test_a_killed_install_leaves_a_journal_and_the_next_one_removes_what_it_superseded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    staged, old = _staged(tmp_path, "mini-ext", "0.1.0")
    outputs.install(staged, out, "mini-ext")
    old_sha = _sha((out / old).read_bytes())
    staged, new = _staged(tmp_path, "mini-ext", "0.1.1")
    outputs.install(staged, out, "mini-ext")
    # As if killed after the manifest moved in, before the superseded wheel went.
    (out / old).write_bytes(b"mini-ext 0.1.0")
    journal = out / outputs.journal_name("mini-ext")
    journal.write_text(json.dumps({"files": [new], "superseded": {old: old_sha}}))
    staged, _ = _staged(tmp_path, "mini-ext", "0.1.1")
    outputs.install(staged, out, "mini-ext")
    assert not (out / old).exists() and not journal.exists()


def test_two_projects_in_one_folder_keep_their_own_manifest_and_sums(tmp_path: Path) -> None:
    out = tmp_path / "out"
    outputs.install(_staged(tmp_path, "mini-ext", "0.1.0")[0], out, "mini-ext")
    staged, theirs = _staged(tmp_path, "other-ext", "2.0.0")
    outputs.install(staged, out, "other-ext")
    assert (out / "release-manifest.json").is_file() and (out / "SHA256SUMS").is_file()
    assert (out / "other_ext.release-manifest.json").is_file() and (out / "other_ext.SHA256SUMS").is_file()
    assert manifest.load(out, "mini-ext").package == "mini-ext"
    assert manifest.load(out, "Other_Ext").package == "other-ext"
    before = {k: v for k, v in _tree(out).items() if k.startswith("other_ext")}

    staged, ours = _staged(tmp_path, "mini-ext", "0.2.0")  # a rebuild of the first project: not refused
    outputs.install(staged, out, "mini-ext")
    assert {k: v for k, v in _tree(out).items() if k.startswith("other_ext")} == before
    assert manifest.wheel_paths(out, "mini-ext") == [out / ours]
    assert manifest.wheel_paths(out, "other-ext") == [out / theirs]
    assert (out / "SHA256SUMS").read_text().split() == [_sha(b"mini-ext 0.2.0"), ours]
    # The publish gate finds each wheel's own manifest; a wheel no manifest names is refused.
    manifest.check_unchanged([out / ours, out / theirs], None)
    stray = out / "third-1.0-py3-none-any.whl"
    stray.write_bytes(b"x")
    with pytest.raises(PublishError, match="not in any manifest"):
        manifest.check_unchanged([stray], None)


def test_verify_records_in_each_projects_own_manifest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    staged, _ours = _staged(tmp_path, "mini-ext", "0.1.0")
    outputs.install(staged, out, "mini-ext")
    staged, theirs = _staged(tmp_path, "other-ext", "2.0.0")
    outputs.install(staged, out, "other-ext")
    manifest.record_verified(out, "pypi", {theirs: _sha(b"other-ext 2.0.0")})
    assert manifest.load(out, "other-ext").verified_hashes("pypi") == {theirs: _sha(b"other-ext 2.0.0")}
    assert manifest.load(out, "mini-ext").verified is None
    assert "verified" not in json.loads((out / manifest.MANIFEST).read_text())


def test_a_build_replaces_an_output_a_newer_schema_wrote(tmp_path: Path) -> None:
    """What the refusal advises ("rebuild with this version") works: build installs over the newer manifest."""
    out = tmp_path / "out"
    staged, _old = _staged(tmp_path, "mini-ext", "0.1.0")
    outputs.install(staged, out, "mini-ext")
    data = json.loads((out / manifest.MANIFEST).read_text())
    (out / manifest.MANIFEST).write_text(json.dumps({**data, "schema_version": 99, "tool_version": "9.0"}))
    staged, new = _staged(tmp_path, "mini-ext", "0.1.1")
    outputs.install(staged, out, "mini-ext")
    assert manifest.load(out, "mini-ext").filenames() == [new]


def test_the_sums_signature_moves_with_its_sums_and_goes_when_the_next_build_is_unsigned(tmp_path: Path) -> None:
    """sign_key's SHA256SUMS.sig: renamed like its sums in a shared folder, and never left beside sums it
    did not sign (a user's own file of that name is not touched)."""
    out = tmp_path / "out"
    staged, _ = _staged(tmp_path, "mini-ext", "0.1.0")
    (staged / "SHA256SUMS.sig").write_text("sig 1")
    outputs.install(staged, out, "mini-ext")
    assert (out / "SHA256SUMS.sig").read_text() == "sig 1"
    staged, _ = _staged(tmp_path, "other-ext", "0.2.0")  # a second project: its own names
    (staged / "SHA256SUMS.sig").write_text("sig 2")
    outputs.install(staged, out, "other-ext")
    assert (out / "other_ext.SHA256SUMS.sig").read_text() == "sig 2" and (out / "SHA256SUMS.sig").read_text() == "sig 1"
    staged, _ = _staged(tmp_path, "mini-ext", "0.1.1")  # unsigned
    outputs.install(staged, out, "mini-ext")
    assert not (out / "SHA256SUMS.sig").exists() and (out / "other_ext.SHA256SUMS.sig").is_file()
