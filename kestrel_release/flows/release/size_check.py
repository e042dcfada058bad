"""release's size gate: the release's wheels against the limits of the targets it publishes to.

With `--from` the wheels exist before the first change, so preflight measures them (size_plan.py) and a
release that does not fit is one of preflight's problems (exit 3, nothing bumped or uploaded). A release
that builds learns its sizes only from the build: the same check then runs right after the build step,
before verify and any upload, and stops with the same exit code and numbers.
"""

from __future__ import annotations

from pathlib import Path

from kestrel_release.config.model import Config
from kestrel_release.errors import PreflightError
from kestrel_release.stages.build_wheels import size_plan, size_plan_text
from kestrel_release.ui import console


def limits(cfg: Config, targets: tuple[str, ...]) -> list[size_plan.Limit]:
    """An index target brings the per-file and project limits; a target with an asset limit (GitHub) its own."""
    chosen = [cfg.targets[name] for name in targets if name in cfg.targets]
    index = any(getattr(t, "verify_rules", "") == "index" for t in chosen)
    github = any(getattr(t, "max_asset_size", None) for t in chosen)
    return size_plan.limits_for(cfg.verify.max_file_size, cfg.verify.project_size_budget, index=index, github=github)


def problems(cfg: Config, targets: tuple[str, ...], wheels: list[Path]) -> list[str]:
    """Preflight's problem when these wheels do not fit the targets' limits (empty: they fit)."""
    found = size_plan.plan(wheels, limits(cfg, targets))
    if not console.json_mode():
        size_plan_text.render(found)
    return [] if found.fits else [size_plan_text.problem(found)]


def after_build(cfg: Config, targets: tuple[str, ...], built: size_plan.SizePlan | None, wheels: list[Path]) -> None:
    """PreflightError (exit 3) when the wheels just built do not fit; `built`: build's plan (re-judged, not re-read)."""
    found = size_plan.rejudge(built, limits(cfg, targets)) if built is not None else None
    found = found or size_plan.plan(wheels, limits(cfg, targets))
    if not console.json_mode():  # what the release weighs against each target's limits, and each lever measured
        size_plan_text.render(found)
    if not found.fits:
        raise PreflightError(
            size_plan_text.problem(found),
            "nothing was uploaded; pull one of the levers it names, or set verify.max_file_size / "
            "verify.project_size_budget to the limit the index granted, and release again",
        )
