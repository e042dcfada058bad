"""What every publish target is: one protocol, the options every target shares, a doctor line.

A target kind is a module of this package (pypi.py, github.py, ...) holding:
- KIND (its name in `kind = "..."`), BUILTIN (the names that exist without a table, with their settings),
  Settings (its config dataclass, with a `verify_rules` class attribute), INSTALLABLE (a release may
  smoke-test it), ENV_HELP, and the functions `describe` (its release steps' lines), `parse`,
  `env_names`, `parse_env_name`, `from_env`, `validate` that read `[tool.kestrel-release.targets.<name>]`
  and its KESTREL_RELEASE_* variables;
- Target, the class the registry instantiates for one configured name: options, preflight,
  rehearsal stand-in, upload, rendering, the release plan's lines.
The registry (__init__.py) lists the kinds; nothing else names a target or a kind.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:  # the model is data; importing it here costs nothing at run time either way
    from kestrel_release.config_model import Config


# The target whose acceptance rules `verify` applies without --target (targets/pypi.py has it built in);
# verify reads each target's rules from its settings (`verify_rules`), never from this registry, since
# every target's publish runs verify.
VERIFY_DEFAULT = "pypi"


@dataclass(frozen=True)
class Options:
    """What a publish to any target may be asked; each kind's options dataclass extends it."""

    dry_run: bool = False
    yes: bool = False
    token_env: str | None = None
    pythons: tuple[str, ...] | None = None  # --python: upload only the wheels that install on these


class Taken(str):
    """A preflight problem that only another version solves: the version is already on the target."""


@dataclass
class Check:
    """One line of doctor's table (doctor.Check has the same fields)."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


class Target(Protocol):
    """One configured target: `name` in `cfg`, read through its kind's module."""

    kind: ClassVar[str]
    # Which of verify's target rules apply: "index" (PyPI's upload rules, the project quota, the
    # 14-day rule), "asset" (a per-asset size limit), "" (none beyond the wheel's own integrity).
    verify_rules: ClassVar[str]
    # A release smoke-tests (installs from) the first target of the plan that can be installed from.
    installable: ClassVar[bool]
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
