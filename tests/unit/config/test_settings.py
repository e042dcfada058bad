"""Each setting is declared once (config_model's fields and their `doc(...)` metadata); the table derived
from the declarations agrees with the parser, and a field without a doc fails here."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

from kestrel_release.config import model as config_model
from kestrel_release.config import settings as config_settings
from kestrel_release.config import tables as config_tables
from kestrel_release.config.model import BuildConfig, GithubTarget, doc
from kestrel_release.config_loader import parse as config_parse
from kestrel_release.config_loader import schema
from kestrel_release.targets.static_index import settings as static_target

# Every dataclass config_model and config_tables define, and the static-index target's settings (targets/static_index/settings.py).
CLASSES = (
    *(
        c
        for module in (config_model, config_tables)
        for _, c in inspect.getmembers(module, dataclasses.is_dataclass)
        if c.__module__ == module.__name__
    ),
    static_target.StaticIndexTarget,
)


def test_every_field_of_every_config_dataclass_is_declared_with_a_doc():
    assert len(CLASSES) >= 10
    assert list(config_settings.undocumented(CLASSES)) == [], "declare it with field(..., metadata=doc('...'))"


def test_a_setting_added_without_a_doc_is_found():
    @dataclass(frozen=True)
    class Section:
        documented: str = field(default="", metadata=doc("Says what it does."))
        new_key: int = 0

    assert list(config_settings.undocumented((Section,))) == ["Section.new_key"]


def test_every_fixed_setting_has_the_variable_the_parser_reads():
    table = config_parse.env_table()
    fixed = [s for s in schema.settings() if "<" not in s.key]
    assert {s.env: s.key for s in fixed}.items() <= table.items()
    assert len(fixed) == len({s.key for s in fixed})


def test_the_sections_and_non_keys_come_from_the_declarations():
    assert set(config_settings.SECTIONS) == {"build", "verify", "publish", "smoke_test", "ci"}
    assert {"project_dir", "name", "version", "targets", "variants", "build"} <= config_settings.TOP_SKIP
    assert "python" not in config_settings.TOP_SKIP


def test_choice_problems_name_the_declared_values():
    at = str
    engine = dataclasses.replace(BuildConfig(), container_engine="podmn", frontend="buidl")
    assert config_settings.choice_problems(engine, "build", at) == [
        "build.frontend: 'buidl' is not 'uv' or 'build' (did you mean 'build'?)",
        "build.container_engine: 'podmn' is not one of docker, podman, chroot (did you mean 'podman'?)",
    ]
    assert config_settings.choice_problems(BuildConfig(), "build", at) == []  # "" (automatic) is the default
    nightly = GithubTarget(nightly="weekly")
    assert config_settings.choice_problems(nightly, "targets.github", at) == [
        "targets.github.nightly: 'weekly' is not 'rolling' or 'dated'"
    ]


def test_the_allowed_values_are_one_constant():
    from kestrel_release.adapters import container

    declared = {f.name: f.metadata["choices"] for f in dataclasses.fields(BuildConfig)}
    assert declared["container_engine"] is config_model.CONTAINER_ENGINES
    assert container.CONTAINER_ENGINES is config_model.CONTAINER_ENGINES
