"""A build output written by another kestrel-release: an older manifest schema is read, a newer one stops
assemble, verify, publish and `release --from` in one line naming both tools (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kestrel_release import __version__
from kestrel_release.output_dir import manifest
from kestrel_release.records.manifest import SCHEMA_VERSION
from tests.factories import make_dist, make_project
from tests.helpers import assert_one_line_error, python_version, run_cli

NEWER = SCHEMA_VERSION + 1


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = make_project(tmp_path / "kernels", pythons=(python_version(),))
    make_dist(project / "dist-all", pythons=(python_version(),))
    return project


def _rewrite(out: Path, **changes: object) -> None:
    path = out / manifest.MANIFEST
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, **changes}))


def _as_newer(out: Path) -> None:
    _rewrite(out, schema_version=NEWER, tool_version="9.1.0", shiny={"a": 1})


LINE = (
    f"was written by kestrel-release 9.1.0 (manifest schema {NEWER}); this is kestrel-release {__version__} "
    f"(schema {SCHEMA_VERSION})",
    "install kestrel-release 9.1.0",
)


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["publish", "--target", "testpypi", "--dry-run"],
        ["release", "--from", "dist-all", "--rehearse", "--yes", "--targets", "pypi"],
    ],
)
def test_a_newer_manifest_stops_the_command_naming_both_tools(project: Path, command: list[str]) -> None:
    _as_newer(project / "dist-all")
    args = [str(project / a) if a == "dist-all" else a for a in command]
    result = run_cli([*args, "--project", str(project)])
    assert_one_line_error(result, 2, *LINE)


def test_assemble_refuses_a_newer_input_and_writes_nothing(project: Path, tmp_path: Path) -> None:
    _as_newer(project / "dist-all")
    out = tmp_path / "release"
    result = run_cli(["assemble", str(project / "dist-all"), "--out", str(out), "--project", str(project), "--json"])
    assert_one_line_error(result, 2, *LINE)
    assert json.loads(result.stdout)["error"]["kind"] == "incompatible"
    assert not out.exists()


def test_a_schema_1_output_assembles_and_the_result_is_this_tools(project: Path, tmp_path: Path) -> None:
    """What kestrel-release wrote before manifests were versioned: `"schema": 1`, its version in toolchain."""
    dist = project / "dist-all"
    data = json.loads((dist / manifest.MANIFEST).read_text())
    del data["schema_version"], data["tool_version"]
    (dist / manifest.MANIFEST).write_text(json.dumps({**data, "schema": 1, "toolchain": {"kestrel-release": "0.0.9"}}))
    out = tmp_path / "release"
    result = run_cli(["assemble", str(dist), "--out", str(out), "--project", str(project)])
    assert result.code == 0, result.output
    written = json.loads((out / manifest.MANIFEST).read_text())
    assert (written["schema_version"], written["tool_version"]) == (SCHEMA_VERSION, __version__)
    assert written["assembled"]["inputs"][0]["toolchain"] == {"kestrel-release": "0.0.9"}


def test_a_manifest_with_a_field_this_schema_lacks_is_named(project: Path) -> None:
    _rewrite(project / "dist-all", shiny=True)
    result = run_cli(["verify", "--project", str(project)])
    assert_one_line_error(result, 2, "release-manifest.json: unknown field 'shiny'", "rebuild")


def test_assemble_replaces_an_output_a_newer_schema_wrote(project: Path, tmp_path: Path) -> None:
    """The refusal's advice works: this version writes over what the other version wrote."""
    out = tmp_path / "release"
    args = ["assemble", str(project / "dist-all"), "--out", str(out), "--project", str(project)]
    assert run_cli(args).code == 0
    _as_newer(out)
    result = run_cli(args)
    assert result.code == 0, result.output
    assert json.loads((out / manifest.MANIFEST).read_text())["schema_version"] == SCHEMA_VERSION
