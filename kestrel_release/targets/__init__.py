"""Publish targets: the registry, the one place that lists the kinds of target (and, through them, the names).

A target is a name (`testpypi`, `pypi`, `github`, or a `[tool.kestrel-release.targets.<name>]` table) of a
kind: the table's `kind = "..."`, else the kind that has the name built in, else the index kind. Each kind
is one package of this folder whose `__init__` satisfies base.TargetKind (mypy checks it through KINDS's
type); config_parse, publish, release, doctor, ci, explain and the CLI ask this module and a target's
capabilities, and never branch on a name or a kind. Adding a kind: write its package, add it to KINDS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kestrel_release.config.values import env_word, suggest
from kestrel_release.targets import github, pypi, static_index
from kestrel_release.targets.base import Options, Target, TargetKind, VariantIndex

if TYPE_CHECKING:
    from kestrel_release.config.model import Config
    from kestrel_release.config.settings import Setting

# kind name -> its package, in the order a release publishes to their built-in targets.
KINDS: dict[str, TargetKind] = {k.KIND: k for k in (pypi, github, static_index)}
DEFAULT_KIND = pypi.KIND  # the kind of a name no kind has built in (a .pypirc repository, a custom index)

DEFAULT_PUBLISH = pypi.DEFAULT  # publish's target without --target (or twine's variables)
# The target whose acceptance rules `verify` applies without --target; the callers above the registry
# (the verify command, the release) pass it: verify sits below the targets (every target's publish runs it).
VERIFY_DEFAULT = pypi.VERIFY_DEFAULT

__all__ = ["KINDS", "Options", "Target", "TargetKind", "get", "names", "parse"]


def builtin() -> dict[str, Any]:
    """Every built-in target name -> its default settings, in release order."""
    return {name: settings for kind in KINDS.values() for name, settings in kind.BUILTIN.items()}


def _kind_of(name: str, body: Any) -> str:
    declared = body.get("kind") if isinstance(body, dict) else None
    if declared is not None:
        return str(declared)
    return next((k for k, m in KINDS.items() if name in m.BUILTIN), DEFAULT_KIND)


def _kind_of_settings(settings: Any) -> TargetKind:
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
    for owner in KINDS.values():  # each kind's variables, over its tables and built-in names
        elsewhere = {
            env_word(n): str(_kind_of_settings(s).ENV_HELP)
            for n, s in targets.items()
            if _kind_of_settings(s) is not owner
        }
        owner.from_env(targets, errors, env, elsewhere)
    return targets


def env_names() -> dict[str, str]:
    """Every fixed variable name of a target's key -> the key's dotted path."""
    return {var: key for kind in KINDS.values() for var, key in kind.env_names().items()}


def needs_kind(kind: TargetKind) -> bool:
    """A table of this kind must say `kind = "..."`: its name tells neither (not the default kind, no built-in name)."""
    return kind.KIND != DEFAULT_KIND and not kind.BUILTIN


def in_order() -> list[TargetKind]:
    """The kinds as the configuration reference lists them: those of one fixed table first, then registry order."""
    return sorted(KINDS.values(), key=lambda k: "<" in k.TABLE.table)


def settings_of(kind: TargetKind, table: str | None = None) -> list[Setting]:
    """A kind's settings as rows keyed under `table` (default: its own, e.g. "targets.<name>"; "" for keys
    relative to the table), sub-table fields (`github_repo`) as their keys (`github.repo`)."""
    from kestrel_release.config import settings as config_settings  # only the reference and schema ask

    prefix = kind.TABLE.table if table is None else table
    head = f"{prefix}." if prefix else ""
    rows = config_settings.declared(kind.Settings, prefix, kind.TABLE.env)
    for sub in kind.TABLE.nested:
        rows = [
            dataclasses.replace(s, key=f"{head}{sub}.{s.key.removeprefix(f'{head}{sub}_')}")
            if s.key.startswith(f"{head}{sub}_")
            else s
            for s in rows
        ]
    return rows


def settings() -> list[Setting]:
    """Every target kind's settings (config.settings has the rest), in the reference's order."""
    return [s for kind in in_order() for s in settings_of(kind)]


def is_env(var: str) -> bool:
    """A variable some kind reads (fixed, or open-ended like KESTREL_RELEASE_TARGETS_<NAME>_<KEY>)."""
    return var in env_names() or any(k.parse_env_name(var) is not None for k in KINDS.values())


def validate(cfg: Config, errors: list[str], at: Any) -> None:
    for name, settings in cfg.targets.items():
        _kind_of_settings(settings).validate(name, settings, errors, at)


def names(cfg: Config) -> list[str]:
    """The targets this project has: the built-in ones, then the configured ones, in that order."""
    return known(cfg.targets)


def known(configured: dict[str, Any]) -> list[str]:
    """names() from the configured targets' settings alone (the release plan has no Config)."""
    return list(dict.fromkeys([*builtin(), *configured]))


def kind_of(name: str, configured: dict[str, Any]) -> TargetKind:
    """The kind of target `name` (a name nothing configures is an index: a .pypirc repository)."""
    settings = configured.get(name, builtin().get(name))
    return _kind_of_settings(settings) if settings is not None else KINDS[DEFAULT_KIND]


def get(cfg: Config, name: str) -> Target:
    """The target `name` of `cfg`."""
    settings = cfg.targets.get(name, builtin().get(name))
    return kind_of(name, cfg.targets).Target(name, cfg, settings)


def default_publish_target(repository_url: str | None = None) -> str:
    """`publish`'s target when --target is not given (twine's TWINE_REPOSITORY, else an index)."""
    return pypi.default_target(repository_url=repository_url)


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


def variant_indexes(cfg: Config) -> dict[str, VariantIndex]:
    """The project's targets that serve every variant (`serves_variants`) -> where they put them, in the
    order of cfg.targets (ci writes a job for each, explain --torch names the first, a release verifies
    each variant for them)."""
    out = {}
    for name in cfg.targets:
        target = get(cfg, name)
        index = target.variant_index() if target.serves_variants else None
        if index is not None:
            out[name] = index
    return out


@dataclass(frozen=True)
class Flag:
    """One publish command-line flag a kind declares (a field of its OPTIONS with `base.flag` metadata)."""

    name: str  # the Options field, and the command function's parameter
    type: Any
    default: Any
    help: str
    spelling: str  # "--repository-url", "--prune/--no-prune"


def publish_flags() -> list[Flag]:
    """The flags the kinds add to `publish`, in registry order, each once (two kinds may take one flag)."""
    import typing

    found: dict[str, Flag] = {}
    for kind in KINDS.values():
        hints = typing.get_type_hints(kind.OPTIONS)
        for f in dataclasses.fields(kind.OPTIONS):
            if "flag" in f.metadata and f.name not in found:
                spelling = f.metadata["flag"] or f"--{f.name.replace('_', '-')}"
                found[f.name] = Flag(f.name, hints[f.name], f.default, f.metadata["help"], spelling)
    return list(found.values())
