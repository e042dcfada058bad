"""Publish targets: the registry, the one place that lists the kinds of target (and, through them, the names).

A target is a name (`testpypi`, `pypi`, `github`, or a `[tool.kestrel-release.targets.<name>]` table) of a
kind: the table's `kind = "..."`, else the kind that has the name built in, else the index kind. Each kind
is one module of this package (base.py says what it holds); config_parse, publish, release, verify, doctor
and the CLI ask this module and never branch on a name. Adding a kind: write its module, add it to KINDS.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from kestrel_release.config_values import env_word, suggest
from kestrel_release.targets import base, github, pypi, static_index
from kestrel_release.targets.base import Options, Target

if TYPE_CHECKING:
    from kestrel_release.config_model import Config

# kind -> its module, in the order a release publishes to their built-in targets.
KINDS: dict[str, ModuleType] = {m.KIND: m for m in (pypi, github, static_index)}
DEFAULT_KIND = pypi.KIND  # the kind of a name no kind has built in (a .pypirc repository, a custom index)

DEFAULT_PUBLISH = pypi.DEFAULT  # publish's target without --target (or twine's variables)
VERIFY_DEFAULT = base.VERIFY_DEFAULT

__all__ = ["KINDS", "Options", "Target", "get", "names", "parse"]


def builtin() -> dict[str, Any]:
    """Every built-in target name -> its default settings, in release order."""
    return {name: settings for module in KINDS.values() for name, settings in module.BUILTIN.items()}


def _kind_of(name: str, body: Any) -> str:
    declared = body.get("kind") if isinstance(body, dict) else None
    if declared is not None:
        return str(declared)
    return next((k for k, m in KINDS.items() if name in m.BUILTIN), DEFAULT_KIND)


def _module_of(settings: Any) -> ModuleType:
    return next((m for m in KINDS.values() if isinstance(settings, m.Settings)), KINDS[DEFAULT_KIND])


def parse(table: Any, errors: list[str], env: dict[str, str]) -> dict[str, Any]:
    """`[tool.kestrel-release.targets]` and the targets' variables -> name -> settings (built-ins included)."""
    targets: dict[str, Any] = builtin()
    if not isinstance(table, dict):
        errors.append("[tool.kestrel-release].targets: expected a table")
        table = {}
    for name, body in table.items():
        where = f"[tool.kestrel-release.targets.{name}]"
        kind = _kind_of(name, body)
        if kind not in KINDS:
            errors.append(
                f"{where}.kind: unknown target kind '{kind}'{suggest(kind, KINDS)}; known kinds: {', '.join(KINDS)}"
            )
            continue
        own = {k: v for k, v in body.items() if k != "kind"} if isinstance(body, dict) else body
        settings = KINDS[kind].parse(name, own, where, errors, env)
        if settings is not None:
            targets[name] = settings
    for module in KINDS.values():  # each kind's variables, over its tables and built-in names
        elsewhere = {
            env_word(n): str(_module_of(s).ENV_HELP) for n, s in targets.items() if _module_of(s) is not module
        }
        module.from_env(targets, errors, env, elsewhere)
    return targets


def env_names() -> dict[str, str]:
    """Every fixed variable name of a target's key -> the key's dotted path."""
    return {var: key for module in KINDS.values() for var, key in module.env_names().items()}


def is_env(var: str) -> bool:
    """A variable some kind reads (fixed, or open-ended like KESTREL_RELEASE_TARGETS_<NAME>_<KEY>)."""
    return var in env_names() or any(m.parse_env_name(var) is not None for m in KINDS.values())


def validate(cfg: Config, errors: list[str], at: Any) -> None:
    for name, settings in cfg.targets.items():
        _module_of(settings).validate(name, settings, errors, at)


def names(cfg: Config) -> list[str]:
    """The targets this project has: the built-in ones, then the configured ones, in that order."""
    return known(cfg.targets)


def known(configured: dict[str, Any]) -> list[str]:
    """names() from the configured targets' settings alone (the release plan has no Config)."""
    return list(dict.fromkeys([*builtin(), *configured]))


def module_of(name: str, configured: dict[str, Any]) -> ModuleType:
    """The kind module of target `name` (a name nothing configures is an index: a .pypirc repository)."""
    settings = configured.get(name, builtin().get(name))
    return _module_of(settings) if settings is not None else KINDS[DEFAULT_KIND]


def get(cfg: Config, name: str) -> Target:
    """The target `name` of `cfg`."""
    settings = cfg.targets.get(name, builtin().get(name))
    return module_of(name, cfg.targets).Target(name, cfg, settings)


def default_publish_target(repository_url: str | None = None) -> str:
    """`publish`'s target when --target is not given (twine's TWINE_REPOSITORY, else an index)."""
    return str(KINDS[DEFAULT_KIND].default_target(repository_url=repository_url))


def help_names(first: str = "", last: str = ", ", sep: str = ", ") -> str:
    """The built-in target names for a flag's help (`first` first), e.g. "pypi, testpypi or github"."""
    listed = list(dict.fromkeys([first, *builtin()] if first else builtin()))
    return sep.join(listed[:-1]) + last + listed[-1]


def check(configured: dict[str, Any], wanted: tuple[str, ...], what: str) -> list[str]:
    """`wanted` in release order (the built-in ones first); UsageError (exit 2) naming every unknown one
    and the known ones."""
    from kestrel_release.errors import UsageError

    listed = known(configured)
    bad = [t for t in wanted if t not in listed]
    if bad or not wanted:
        raise UsageError(
            f"unknown {what} target(s): {', '.join(bad) or '(none)'}",
            f"choose from {', '.join(listed)}, or add a [tool.kestrel-release.targets.NAME] table "
            f"(kind = {' | '.join(KINDS)})",
        )
    return [n for n in listed if n in wanted]
