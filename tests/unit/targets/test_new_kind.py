"""Adding a target kind is one package and one registry line: the throwaway `shelf` kind (the package
throwaway_kind/, registered by the line in the fixture) is read from the configuration, has its table in the
JSON Schema and the configuration reference, adds its own flag to `publish` and has another kind's flag
refused, and is published to and verified under its own rules, with no other code of the tool knowing its name."""

from __future__ import annotations

import inspect

import pytest
from jsonschema import Draft7Validator
from typer.testing import CliRunner

from kestrel_release import cli, targets
from kestrel_release.config_loader import load as config
from kestrel_release.config_loader import schema
from kestrel_release.errors import ConfigError, UsageError, VerifyError
from kestrel_release.stages import verify
from kestrel_release.targets import publishing
from kestrel_release.targets.base import TargetKind
from tests.factories import make_verify_project, make_wheel
from tests.unit.targets import throwaway_kind

PLAIN_LINUX = "cp311-cp311-linux_x86_64"  # a tag PyPI refuses, any folder takes


@pytest.fixture
def shelf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(targets.KINDS, throwaway_kind.KIND, throwaway_kind)  # the one registry line


def _project(tmp_path, table: str = 'path = "shelved"'):
    project = make_verify_project(tmp_path / "proj")
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[tool.kestrel-release.targets.box]\nkind = "shelf"\n{table}\n')
    return project


def test_the_package_has_every_member_the_protocol_asks():
    members = {n for n, _ in inspect.getmembers(TargetKind) if not n.startswith("_")}
    assert members <= set(dir(throwaway_kind))


def test_unregistered_its_table_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown target kind 'shelf'"):
        config.load(_project(tmp_path), env={})


def test_registered_the_configuration_reads_its_table_and_its_checks(tmp_path, shelf):
    cfg = config.load(_project(tmp_path), env={})
    assert cfg.targets["box"] == throwaway_kind.Settings("shelved")
    assert "box" in targets.names(cfg) and targets.get(cfg, "box").kind == "shelf"
    with pytest.raises(ConfigError) as info:
        config.load(_project(tmp_path / "typo", 'paht = "x"'), env={})
    assert "[tool.kestrel-release.targets.box].paht: unknown key (did you mean 'path'?)" in info.value.message
    assert "targets.box.path: missing (the folder to copy the wheels into)" in info.value.message  # its validate


def _schema_errors(table: dict) -> list[str]:
    return [e.message for e in Draft7Validator(schema.json_schema()).iter_errors(table)]


def test_registered_its_setting_lands_in_the_schema_and_the_reference(shelf):
    kinds = schema.json_schema()["properties"]["targets"]["additionalProperties"]["anyOf"]
    table = next(t for t in kinds if t["properties"]["kind"]["const"] == "shelf")
    assert table["properties"]["path"] == {
        "description": "The folder the wheels are copied into.",
        "type": "string",
        "default": "",
    }
    assert table["required"] == ["kind"]  # its name does not tell its kind
    assert _schema_errors({"targets": {"box": {"kind": "shelf", "path": "shelved"}}}) == []
    text = schema.configuration_markdown()
    assert '## `[tool.kestrel-release.targets.<name>] kind = "shelf"`' in text
    assert (
        '| `path` | string | `""` | `KESTREL_RELEASE_SHELF_<NAME>_PATH` | The folder the wheels are copied into |'
        in text
    )


def test_unregistered_the_schema_refuses_its_table():
    assert _schema_errors({"targets": {"box": {"kind": "shelf", "path": "shelved"}}}) != []
    assert "shelf" not in schema.configuration_markdown()


def test_registered_publish_takes_its_flag_and_refuses_it_elsewhere(tmp_path, shelf):
    app = cli.with_commands(["publish", "--help"])
    shown = CliRunner().invoke(app, ["publish", "--help"], env={"COLUMNS": "200"})
    assert "--folder" in shown.output and "The folder a shelf target copies the wheels into." in shown.output
    project = str(_project(tmp_path))
    refused = CliRunner().invoke(app, ["publish", "--project", project, "--target", "pypi", "--folder", "x"])
    assert isinstance(refused.exception, UsageError) and refused.exception.exit_code == 2
    assert refused.exception.message == "--folder does not apply to target 'pypi' (kind index)"
    assert refused.exception.hint == "--folder applies to box: drop it, or choose such a target with --target"
    other = CliRunner().invoke(app, ["publish", "--project", project, "--target", "box", "--repo", "a/b"])
    assert isinstance(other.exception, UsageError)
    assert other.exception.message == "--repo does not apply to target 'box' (kind shelf)"


def test_registered_publish_and_verify_apply_its_own_rules(tmp_path, shelf):
    cfg = config.load(_project(tmp_path), env={})
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = make_wheel(dist, tag=PLAIN_LINUX)
    assert not verify.run(cfg, [wheel], record=False).ok  # without --target: PyPI's rules refuse the tag
    assert verify.run(cfg, [wheel], target="box", record=False).ok
    with pytest.raises(VerifyError):
        publishing.run(cfg, [wheel], "pypi", publishing.options(cfg, "pypi", dry_run=True))
    folder = tmp_path / "shelf"
    copied = publishing.run(cfg, [wheel], "box", publishing.options(cfg, "box", folder=str(folder)))
    assert copied.files == [wheel.name] and (folder / wheel.name).read_bytes() == wheel.read_bytes()
