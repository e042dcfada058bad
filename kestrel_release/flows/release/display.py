"""What `release` prints: the plan before anything runs, and the final table."""

from __future__ import annotations

from kestrel_release import targets as registry
from kestrel_release.config.model import Config
from kestrel_release.flows.release.result import ReleaseResult
from kestrel_release.flows.release.state import ReleaseState
from kestrel_release.flows.release.steps import Step
from kestrel_release.ui import console


def print_plan(cfg: Config, steps: list[Step], state: ReleaseState, rehearse: bool, skipped: list[str]) -> None:
    from rich.table import Table

    chosen = [registry.get(cfg, s.name.removeprefix("publish-")) for s in steps if s.name.startswith("publish-")]
    where = (
        "local stand-ins (rehearsal: strict sandbox PyPI, GitHub emulator)"
        if rehearse
        else ", ".join(w for w in (t.plan_where() for t in chosen) if w) or ", ".join(t.label for t in chosen)
    )
    table = Table(title=f"release plan: {cfg.name} {state.version or cfg.version} -> {where}")
    table.add_column("#", justify="right")
    table.add_column("step")
    table.add_column("status")
    for i, step in enumerate(steps, 1):
        table.add_row(str(i), step.name, "finished earlier" if step.name in state.done else "to do")
    console.console.print(table)
    for i, step in enumerate(steps, 1):
        console.debug(f"  {i}. {step.name}: {step.does}")
    console.info(f"Pythons: {', '.join(cfg.python)}; output: {cfg.out_path}")
    for target in chosen:  # where each target publishes, and why (never a silent default)
        for line in target.plan_lines(rehearse):
            console.info(line)
    if skipped:
        console.warn(
            f"rehearsal without Python {', '.join(skipped)} (configured, not on this machine); a real "
            "release needs every configured Python, or narrow it with --python"
        )


def render(result: ReleaseResult) -> None:
    """Final table: every step with its status and timing."""
    from rich.table import Table

    table = Table(title=f"release {result.version}{' (rehearsal)' if result.rehearse else ''}")
    for col in ("step", "status", "seconds", "detail"):
        table.add_column(col)
    for s in result.steps:
        table.add_row(s.name, s.status, f"{s.seconds:.1f}", s.detail)
    console.console.print(table)
    console.ok(f"release {result.version} complete{' (rehearsed against local stand-ins)' if result.rehearse else ''}")
    if result.rehearse:
        skipped = result.skipped_pythons and f"; skipped {', '.join(result.skipped_pythons)} (not on this machine)"
        console.info(f"rehearsed on Python {', '.join(result.pythons)}{skipped or ''}")
        console.info("not checked by a rehearsal (only a real release can):")
        for line in result.not_checked:
            console.info(f"  - {line}")
