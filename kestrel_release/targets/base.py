"""What every publish target kind is: two protocols, the options every target shares, a doctor line.

A target kind is one package of this folder (pypi/, github/, static_index/) whose `__init__` is a module that
satisfies TargetKind (checked by mypy through the registry's type, as cibuildwheel's platform modules): its
name, its settings class, its table's parser and variables, the release plan's lines, its Options class (the
publish flags it accepts: any other kind's flag is refused, exit 2) and its Target class, which the registry
instantiates for one configured name (preflight, rehearsal stand-in, publish, read-back, rendering). Its own
publishing code lives beside it in the package and uses the shared publish library (stages/publish:
snapshot, uploads, confirm, summary, smoke), never the reverse. Stages ask a target's capabilities
(`installable`, `serves_variants`, `verify_rules`), never its class or its kind's name.
The registry (__init__.py) lists the kinds; nothing else names a target or a kind.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


@dataclass(frozen=True)
class Options:
    """What a publish to any target may be asked; each kind's options dataclass extends it."""

    dry_run: bool = False
    yes: bool = False
    token_env: str | None = None
    pythons: tuple[str, ...] | None = None  # --python: upload only the wheels that install on these


def flag(help: str, spelling: str = "") -> dict[str, str]:
    """A kind's Options field that is a publish command-line flag (its field metadata): the command
    (commands/publish.py) adds the flag from it; a field without it is set only by a release's step.
    `spelling`: the flag's declaration when it is not `--<name>` ("--prune/--no-prune")."""
    return {"help": help, "flag": spelling}


OptionsT = TypeVar("OptionsT", bound="Options")


def options_from(cls: type[OptionsT], flags: dict[str, Any]) -> OptionsT:
    """A kind's options (`cls`) from the publish command's flags: those of its fields that were passed."""
    return cls(**{f.name: flags[f.name] for f in dataclasses.fields(cls) if f.name in flags})


@dataclass(frozen=True)
class SettingsTable:
    """Where a kind's settings are written: what the configuration reference and the JSON Schema
    (config_loader/schema.py, through the registry's `settings`) read from each kind, so neither names one."""

    table: str  # the dotted path of its table: "targets.<name>" (any name) or one fixed name ("targets.github")
    env: str = ""  # the prefix of its keys' variables, "" when they have none (it may hold <NAME>)
    # Sub-tables: name -> its doc; the settings' fields `<name>_<key>` are written `<name>.<key>`.
    nested: Mapping[str, str] = dataclasses.field(default_factory=dict)


class Taken(str):
    """A preflight problem that only another version solves: the version is already on the target."""


@dataclass
class Check:
    """One line of doctor's table (doctor.Check has the same fields)."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class VariantIndex:
    """Where a target that serves every variant (`serves_variants`) puts them: what ci, explain and the
    release ask of it."""

    dir: str  # the index's root, relative to the project
    base_url: str  # where a static host serves it ("" = not said)
    holds_assets: bool  # its wheels are a GitHub release's assets (the pages link to them)


class Target(Protocol):
    """One configured target: `name` in `cfg`, read through its kind's module."""

    kind: ClassVar[str]
    # Which of verify's target rules apply: "index" (PyPI's upload rules, the project quota, the
    # 14-day rule), "asset" (a per-asset size limit), "" (none beyond the wheel's own integrity).
    verify_rules: ClassVar[str]
    # A release smoke-tests (installs from) the first target of the plan that can be installed from.
    installable: ClassVar[bool]
    # A release publishes every torch x CUDA variant to it (each into its own index), not only the default one.
    serves_variants: ClassVar[bool]
    label: str  # the release plan's title word when no target of the plan names a URL
    name: str
    cfg: Config
    settings: Any

    def options(self, flags: dict[str, Any]) -> Options:
        """This kind's options from the publish command's flags (the others are not its own)."""
        ...

    def publish(self, paths: list[Path], options: Any) -> Any:
        """Upload `paths` (or the build output); a result with to_json(); raise PublishError."""
        ...

    def render(self, result: Any) -> None: ...

    def endpoint(self) -> Any:
        """Where a real release publishes (credentials come from the usual sources at publish time)."""
        ...

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> Any:
        """Start this target's local stand-in for a rehearsal (stopped with `stack`); its endpoint."""
        ...

    def release_publish(self, endpoint: Any) -> str:
        """Publish as a release's step does, to `endpoint` (a real one or a stand-in); the step's detail line."""
        ...

    def preflight(self, endpoint: Any, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        """Every problem that would make publishing `version` to this target fail later."""
        ...

    def plan_where(self) -> str:
        """The release plan title's word for where this target publishes ("" to say nothing)."""
        ...

    def plan_lines(self, rehearse: bool) -> list[str]:
        """The release plan's lines about this target (where it publishes, and why); a rehearsal's
        stand-in says where it is when it starts."""
        ...

    def doctor_checks(self) -> list[Check]:
        """Presence (never values) of what publishing to this target needs."""
        ...

    def variant_index(self) -> VariantIndex | None:
        """Where its variants go (None for a kind that does not serve variants)."""
        ...


# The names TargetKind's members shadow inside its body.
OneTarget = Target
SharedOptions = Options


class TargetKind(Protocol):
    """A kind's package (its `__init__` module): what the registry, config loading and the release plan ask.
    Read-only members (properties), so a module's narrower types satisfy them."""

    @property
    def KIND(self) -> str:
        """Its word in `kind = "..."`."""
        ...

    @property
    def BUILTIN(self) -> Mapping[str, Any]:
        """The names that exist without a table, with their settings, in release order."""
        ...

    @property
    def INSTALLABLE(self) -> bool:
        """A release may smoke-test (install from) its targets."""
        ...

    @property
    def ENV_HELP(self) -> str:
        """Where its variables are (said when a variable of another kind names one of its targets)."""
        ...

    @property
    def TABLE(self) -> SettingsTable:
        """Where its settings are written (its table, its variables' prefix, its sub-tables)."""
        ...

    @property
    def Settings(self) -> type[Any]:
        """Its settings dataclass (with a `verify_rules` class attribute)."""
        ...

    @property
    def OPTIONS(self) -> type[SharedOptions]:
        """Its publish options: the shared ones plus the command-line flags it accepts (others are refused)."""
        ...

    def Target(self, name: str, cfg: Config, settings: Any) -> OneTarget:
        """Its Target class: one configured name."""
        ...

    def describe(self, name: str) -> tuple[str, str]:
        """(what its publish step does, what its smoke-test step does: "" for none) for the release plan."""
        ...

    def parse(self, name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Any:
        """Its table -> its settings (None after appending to `errors`)."""
        ...

    def env_names(self) -> dict[str, str]:
        """Its fixed variable names -> the keys' dotted paths."""
        ...

    def parse_env_name(self, var: str) -> tuple[str, str] | None:
        """An open-ended variable of its: (NAME as written, key); else None."""
        ...

    def from_env(
        self, targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]
    ) -> None:
        """Apply its variables to `targets` (name -> settings)."""
        ...

    def validate(self, name: str, settings: Any, errors: list[str], at: Any) -> None:
        """Checks across its keys, after loading."""
        ...
