"""Publish: one command for every kind of target; the target registry (kestrel_release/targets/) picks it.

`targets.get(cfg, name)` gives the target (an index: testpypi, pypi, a .pypirc repository, a
[tool.kestrel-release.targets] entry; the GitHub release; or any other kind the registry lists). Each
target builds its own options from the command's flags, uploads, and renders its result, so the CLI and
the release stage never branch on a target's name (hatch's `publish/` plugins are the model).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release import targets

if TYPE_CHECKING:  # config pulls in more than `--help` needs
    from kestrel_release.config_model import Config


def options(cfg: Config, target: str, **flags: Any) -> targets.Options:
    """`target`'s own options from the publish command's flags (a flag of another kind is not its own)."""
    return targets.get(cfg, target).options(flags)


def run(cfg: Config, paths: list[Path], target: str, options: targets.Options) -> Any:
    """Publish `paths` (or the build output) to `target`; raise PublishError on failure."""
    from kestrel_release import project_meta

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
