"""The release manifest as a typed, versioned record: what a reader accepts, refuses, and says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kestrel_release import __version__
from kestrel_release.errors import EXIT_USAGE, IncompatibleRecordError, UsageError
from kestrel_release.output_dir import manifest
from kestrel_release.records import manifest as record
from kestrel_release.records.manifest import GitState, Manifest, Wheel

ROW = {"filename": "x-1.0-py3-none-any.whl", "size": 3, "sha256": "ab" * 32, "python": "3.12"}


def _write(folder: Path, data: dict) -> Path:
    path = folder / manifest.MANIFEST
    path.write_text(json.dumps(data))
    return path


def test_a_saved_manifest_says_its_schema_and_tool_and_reads_back_equal(tmp_path: Path) -> None:
    made = Manifest("x", "1.0", (Wheel(**ROW),), git=GitState("c" * 40, False), toolchain={"nvcc": "13.0"})
    manifest.save(tmp_path, made)
    data = json.loads((tmp_path / manifest.MANIFEST).read_text())
    assert data["schema_version"] == record.SCHEMA_VERSION and data["tool_version"] == __version__
    assert "variant" not in data and "python_tag" not in data["wheels"][0]  # None fields are left out
    assert manifest.read(tmp_path / manifest.MANIFEST) == made


def test_a_schema_1_manifest_is_read_with_its_writer_from_the_toolchain(tmp_path: Path) -> None:
    old = {"schema": 1, "package": "x", "version": "1.0", "wheels": [{**ROW, "dropped_later": 1}]}
    old["toolchain"] = {"kestrel-release": "0.0.9"}
    old["compiled"] = []  # a key an older tool wrote, since dropped
    read = manifest.read(_write(tmp_path, old))
    assert (read.schema_version, read.tool_version, read.wheels[0].python) == (1, "0.0.9", "3.12")
    manifest.save(tmp_path, read)  # verify rewrites it: now in this tool's schema
    assert json.loads((tmp_path / manifest.MANIFEST).read_text())["schema_version"] == record.SCHEMA_VERSION


def test_a_manifest_of_a_newer_schema_is_refused_naming_both_tools(tmp_path: Path) -> None:
    newer = {"schema_version": record.SCHEMA_VERSION + 1, "tool_version": "9.0.0", "package": "x", "version": "1"}
    with pytest.raises(IncompatibleRecordError) as err:
        manifest.read(_write(tmp_path, {**newer, "wheels": [], "shiny": True}))
    assert err.value.exit_code == EXIT_USAGE
    assert str(err.value) == (
        f"{tmp_path / manifest.MANIFEST} was written by kestrel-release 9.0.0 (manifest schema "
        f"{record.SCHEMA_VERSION + 1}); this is kestrel-release {__version__} (schema {record.SCHEMA_VERSION}) "
        "— rebuild with this version of kestrel-release build or install kestrel-release 9.0.0"
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"extra": 1}, "release-manifest.json: unknown field 'extra'"),
        ({"wheels": [{"filename": "x.whl", "size": 1}]}, "release-manifest.json: missing field 'wheels[0].sha256'"),
        ({"wheels": [{**ROW, "size": "3"}]}, "release-manifest.json: field 'wheels[0].size' is str, not int"),
        ({"tool_version": None, "schema_version": None}, "release-manifest.json has an unknown schema"),
        ({"git": {"commit": 1}}, "release-manifest.json: field 'git.commit' is int, not str"),
    ],
)
def test_a_manifest_that_does_not_fit_is_one_line_naming_the_field(tmp_path: Path, change: dict, words: str) -> None:
    data = {"schema_version": record.SCHEMA_VERSION, "tool_version": __version__, "package": "x", "version": "1.0"}
    with pytest.raises(UsageError) as err:
        manifest.read(_write(tmp_path, {**data, "wheels": [ROW], **change}))
    assert words in str(err.value) and "\n" not in str(err.value)
    assert not isinstance(err.value, IncompatibleRecordError)


def test_a_manifest_without_its_schema_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown schema"):
        manifest.read(_write(tmp_path, {"package": "x", "version": "1", "wheels": []}))


def test_the_published_schema_requires_what_the_reader_requires() -> None:
    schema = record.json_schema()
    assert schema["required"] == ["package", "version", "wheels", "schema_version"]
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Wheel"]["required"] == ["filename", "size", "sha256"]
