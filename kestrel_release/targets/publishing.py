"""Publish to one target by name: the publish command's stage; the registry (targets/__init__.py) picks the kind.

`targets.get(cfg, name)` gives the target (an index: testpypi, pypi, a .pypirc repository, a
[tool.kestrel-release.targets] entry; the GitHub release; or any other kind the registry lists). Each
target builds its own options from the command's flags, uploads, and renders its result, so the CLI and
the release stage never branch on a target's name (hatch's `publish/` plugins are the model).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release import targets
from kestrel_release.errors import UsageError
from kestrel_release.targets.base import Options

if TYPE_CHECKING:  # config pulls in more than `--help` needs
    from kestrel_release.config.model import Config


def options(cfg: Config, target: str, **flags: Any) -> Options:
    """`target`'s own options from the publish command's flags. A flag given that is another kind's (`--repo`
    with an index) is a UsageError (exit 2) naming the targets it applies to: never dropped silently."""
    chosen = targets.get(cfg, target)
    own = chosen.options(flags)
    mine = {f.name for f in dataclasses.fields(own)}
    takers = _takers(cfg)
    stray = {n: v for n, v in flags.items() if n not in mine and n in takers and v != takers[n][0]}
    if stray:
        spelled = [_spelling(n, v) for n, v in stray.items()]
        where = [f"{s} applies to {', '.join(takers[n][1])}" for s, n in zip(spelled, stray, strict=True)]
        one = len(stray) == 1
        raise UsageError(
            f"{', '.join(spelled)} {'does' if one else 'do'} not apply to target '{target}' (kind {chosen.kind})",
            f"{'; '.join(where)}: drop {'it' if one else 'them'}, or choose such a target with --target",
        )
    return own


def _takers(cfg: Config) -> dict[str, tuple[Any, list[str]]]:
    """Each publish option of the project's targets -> (its default: left at it, a flag was not given; the
    targets whose kind takes it)."""
    found: dict[str, tuple[Any, list[str]]] = {}
    for name in targets.names(cfg):
        for field in dataclasses.fields(targets.get(cfg, name).options({})):
            found.setdefault(field.name, (field.default, []))[1].append(name)
    return found


def _spelling(name: str, value: Any) -> str:
    """The command line's spelling of option `name` (`--no-prune` for prune=False)."""
    return f"--{'no-' if value is False else ''}{name.replace('_', '-')}"


def run(cfg: Config, paths: list[Path], target: str, options: Options) -> Any:
    """Publish `paths` (or the build output) to `target`; raise PublishError on failure."""
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg, paths)  # no [project]: named by the wheels' manifest, else the backend
    left: list[Path] = []
    if options.pythons:
        from kestrel_release.stages.publish import python_select
        from kestrel_release.stages.verify import resolve_wheels

        paths, left = python_select.for_pythons(resolve_wheels(cfg, list(paths)), options.pythons)
    result = targets.get(cfg, target).publish(paths, options)
    if left and hasattr(result, "left_out"):
        result.left_out = [{"filename": p.name, "reason": "not for the selected Pythons"} for p in left]
    from kestrel_release.stages.publish import summary as ci_summary

    ci_summary.publish(target, result)  # a CI job's summary page (nothing elsewhere)
    return result


def render(cfg: Config, target: str, result: Any) -> None:
    """Show a publish result: the target that made it renders it."""
    targets.get(cfg, target).render(result)
