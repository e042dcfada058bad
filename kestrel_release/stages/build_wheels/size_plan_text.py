"""The size plan in words: lines for the terminal and an error, a Markdown section for a CI job summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kestrel_release.config.model import Config
from kestrel_release.stages.build_wheels import size_plan
from kestrel_release.stages.build_wheels.size_plan import Lever, SizePlan
from kestrel_release.ui import ci_output, console, sizes

SHOWN_LEVERS = 3  # per kind: the largest (toolkit, arch) pairs; --json lists every one


def for_build(cfg: Config, out_dir: Path, wheels: list[dict[str, Any]]) -> SizePlan:
    """build's wheels against every limit a release of them meets; into a CI job's summary too."""
    limits = size_plan.limits_for(cfg.verify.max_file_size, cfg.verify.project_size_budget)
    found = size_plan.plan([out_dir / w["filename"] for w in wheels], limits)
    ci_output.summary(markdown(found))
    return found


def render(plan: SizePlan) -> None:
    for line in lines(plan):
        console.info(line)


def lines(plan: SizePlan) -> list[str]:
    """The limits (each with its room or what breaks it), then the levers with what they give."""
    out = [
        f"size plan: {len(plan.wheels)} wheel(s), {sizes.size(plan.total)} in all, largest {sizes.size(plan.largest)}"
    ]
    for lim in plan.limits:
        used = plan.largest if lim.scope == "file" else plan.total
        state = "OVER" if used > lim.limit else f"{sizes.size(lim.limit - used)} to spare"
        what = "largest wheel" if lim.scope == "file" else "release"
        out.append(f"  {lim.name} {sizes.size(lim.limit)}: {what} {sizes.size(used)}, {state}")
    for lever in shown(plan.levers):
        out.append("  lever: " + lever_text(plan, lever))
    return out


def shown(levers: list[Lever]) -> list[Lever]:
    count: dict[str, int] = {}
    out = []
    for lever in levers:
        count[lever.kind] = count.get(lever.kind, 0) + 1
        if count[lever.kind] <= SHOWN_LEVERS:
            out.append(lever)
    return out


def lever_text(plan: SizePlan, lever: Lever) -> str:
    after = f"release {sizes.size(plan.total - lever.release_saving)}"
    if lever.file_saving:
        after += f", largest wheel {sizes.size(plan.largest - lever.file_saving)}"
    fits = "; fits" if lever.fits and not plan.fits else ""
    detail = f" ({lever.detail})" if lever.detail else ""
    return f"{lever.name}: saves {sizes.size(lever.release_saving)} [{lever.basis}] -> {after}{fits}{detail}"


def problem(plan: SizePlan) -> str:
    """One preflight problem: what breaks, and what each lever would give (the numbers to decide on)."""
    levers = "; ".join(lever_text(plan, lever) for lever in shown(plan.levers)) or "no lever measured"
    return f"the release does not fit: {'; '.join(plan.over())}. Levers: {levers}"


def markdown(plan: SizePlan) -> str:
    head = f"### kestrel-release size plan: {'fits' if plan.fits else 'does NOT fit'}"
    rows = []
    for lim in plan.limits:
        used = plan.largest if lim.scope == "file" else plan.total
        rows.append((lim.name, sizes.size(lim.limit), sizes.size(used), "over" if used > lim.limit else "ok"))
    limits = ci_output.table(("limit", "size", "largest wheel / release", "state"), rows)
    levers = ci_output.table(
        ("lever", "saves (release)", "saves (largest wheel)", "basis", "fits alone"),
        [
            (
                lv.name,
                sizes.size(lv.release_saving),
                sizes.size(lv.file_saving),
                lv.basis,
                "yes" if lv.fits else "no",
            )
            for lv in shown(plan.levers)
        ],
    )
    wheels = ci_output.table(("wheel", "size"), [(w["filename"], sizes.size(w["size"])) for w in plan.wheels])
    return "\n\n".join([head, limits, levers if plan.levers else "No lever measured.", wheels])
