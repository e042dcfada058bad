"""The published schemas (docs/reference/schemas/) describe what the tool writes: documents validate."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from kestrel_release.output_dir import manifest
from kestrel_release.records import documents, release_state, serde
from kestrel_release.records.manifest import GitState, Manifest, Verified, Wheel
from kestrel_release.records.release_state import StateFile
from kestrel_release.stages.verify import Finding, VerifyReport, WheelReport
from kestrel_release.targets.github.result import Action, GithubResult
from kestrel_release.targets.pypi.publish import PublishResult

SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "reference" / "schemas"


def _valid(name: str, document: object) -> None:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)


def test_a_written_manifest_fits_its_schema_and_one_with_a_stray_field_does_not(tmp_path: Path) -> None:
    wheel = Wheel("x-1.0-py3-none-any.whl", 3, "ab" * 32, python="3.12", variant={"torch": "2.13"})
    verified = {"pypi": Verified({wheel.filename: "ab"})}
    made = Manifest("x", "1.0", (wheel,), git=GitState(None, True), builder=manifest.builder({}), verified=verified)
    data = json.loads(manifest.save(tmp_path, made).read_text())
    _valid("release-manifest", data)
    with pytest.raises(jsonschema.ValidationError):
        _valid("release-manifest", {**data, "shiny": 1})


def test_the_release_state_fits_its_schema() -> None:
    state = StateFile({"targets": ["pypi"]}, ["build"], {"x.whl": "ab"}, version="1.0", timings={"build": 1.5})
    _valid("release-state", release_state.to_json(state))


def test_verify_and_publish_documents_fit_their_schemas() -> None:
    wheel = WheelReport(Path("/o/x.whl"), "x.whl", "ab", 3, findings=[Finding("abi3", "error", "m", "why")])
    report = VerifyReport("pypi", [wheel], findings=[Finding("abi3", "warning", "m", "why")])
    _valid("verify", documents.stamp(report.to_json()))
    index = PublishResult("pypi", "https://upload", "https://simple", uploaded=[{"filename": "x.whl"}])
    _valid("publish-index", documents.stamp(index.to_json()))
    github = GithubResult("acme/k", "v1", False, "1.0", False, actions=[Action("x.whl", "uploaded", 3, "ab")])
    _valid("publish-github", documents.stamp(github.to_json()))


def test_the_one_serializer_reads_back_what_it_wrote() -> None:
    wheel = Wheel("x.whl", 3, "ab", installs_on=["Debian 12"], torch={"version": "2.13.0"})
    assert serde.from_json(Wheel, serde.to_json(wheel)) == wheel
    with pytest.raises(serde.RecordError, match=r"^Wheel: field 'installs_on\[0\]' is int, not str$"):
        serde.from_json(Wheel, {**serde.to_json(wheel), "installs_on": [1]})
