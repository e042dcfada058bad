"""A throwaway target kind, `shelf`: the whole of it is this package (test_new_kind.py registers it).

It copies the verified wheels into a folder. Its settings are `[tool.kestrel-release.targets.<name>]
kind = "shelf"` with `path` (TABLE: where the schema and the reference list it); its own publish flag is
`--folder`; it applies no index or asset rules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kestrel_release.config.model import doc
from kestrel_release.config.values import PREFIX, env_word, section
from kestrel_release.targets.base import Check, Options, SettingsTable, VariantIndex, flag, options_from

KIND = "shelf"
BUILTIN: dict[str, Any] = {}
INSTALLABLE = False
ENV_HELP = f"a shelf target's variables are {PREFIX}SHELF_<NAME>_<KEY>"
TABLE = SettingsTable("targets.<name>", f"{PREFIX}SHELF_<NAME>_")


@dataclass(frozen=True)
class Settings:
    verify_rules: ClassVar[str] = ""  # a folder takes any wheel: no index or asset rules
    path: str = field(default="", metadata=doc("The folder the wheels are copied into."))


@dataclass(frozen=True)
class ShelfOptions(Options):
    folder: str | None = field(default=None, metadata=flag("The folder a shelf target copies the wheels into."))


OPTIONS = ShelfOptions


@dataclass
class Copied:
    folder: str
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def describe(name: str) -> tuple[str, str]:
    return f"copy the wheels onto the shelf {name}", ""


def parse(name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Settings:
    return section(Settings, body, where, errors, env, f"{PREFIX}SHELF_{env_word(name)}_")


def env_names() -> dict[str, str]:
    return {}


def parse_env_name(var: str) -> tuple[str, str] | None:
    return None  # parse() reads each table's variables itself


def from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]) -> None:
    """parse() already read them."""


def validate(name: str, settings: Settings, errors: list[str], at: Any) -> None:
    if not settings.path:
        errors.append(f"{at(f'targets.{name}.path')}: missing (the folder to copy the wheels into)")


class Target:
    kind = KIND
    verify_rules = Settings.verify_rules
    installable = INSTALLABLE
    serves_variants = False

    def __init__(self, name: str, cfg: Any, settings: Settings | None) -> None:
        self.name, self.cfg, self.settings = name, cfg, settings or Settings()
        self.label = name

    def options(self, flags: dict[str, Any]) -> ShelfOptions:
        return options_from(ShelfOptions, flags)

    def publish(self, paths: list[Path], options: ShelfOptions) -> Copied:
        from kestrel_release.stages import verify

        report = verify.run(self.cfg, list(paths), target=self.name, record=False)
        verify.raise_for(report, show=True)
        folder = Path(options.folder or self.cfg.project_dir / self.settings.path)
        folder.mkdir(parents=True, exist_ok=True)
        for wheel in report.wheels:
            shutil.copy2(wheel.path, folder / wheel.filename)
        return Copied(str(folder), sorted(w.filename for w in report.wheels))

    def render(self, result: Copied) -> None:
        """Nothing to add to the console."""

    def endpoint(self) -> str:
        return self.settings.path

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> str:
        return str(base / self.name)

    def release_publish(self, endpoint: str) -> str:
        return f"{len(self.publish([], ShelfOptions(folder=endpoint, yes=True)).files)} copied"

    def preflight(self, endpoint: str, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        return []

    def plan_where(self) -> str:
        return f"{self.name} ({self.settings.path})"

    def plan_lines(self, rehearse: bool) -> list[str]:
        return [f"{self.name}: copies the wheels into {self.settings.path}"]

    def doctor_checks(self) -> list[Check]:
        return []

    def variant_index(self) -> VariantIndex | None:
        return None
