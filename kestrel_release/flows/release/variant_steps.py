"""The build and verify steps of a release of a project with [tool.kestrel-release.variants]: the whole matrix.

build: every variant this machine can build (stages/build_wheels: run_variants; `<out>/variants/<name>/` each, the
default's wheels also in `<out>/`), the rest listed with the command that builds them elsewhere (then
`assemble` and `release --from`). Targets other than static indexes publish `<out>/`, the default variant's
wheels: a run with such a target stops here when the default is not among the built ones.
verify: `<out>/` under PyPI's rules, and each variant's folder as a release of its own under the static-index
target's rules (its `+cu130` local version is what a static index serves: PyPI's rules do not apply to it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release.errors import BuildError
from kestrel_release.flows.release import state as release_state
from kestrel_release.output_dir import manifest
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.flows.release.context import Context


def build(ctx: Context) -> str:
    from kestrel_release.stages import build_wheels as build_stage

    cfg = ctx.cfg
    matrix = build_stage.run_variants(cfg, (), gpu_check=ctx.options.gpu_check)
    built = [o for o in matrix.outcomes if o.status == "built"]
    left = [o for o in matrix.outcomes if o.status != "built"]
    for o in left:
        console.info(f"  left for another machine: {o.variant.name} ({o.why}); there: {o.command}")
    if not built:
        raise BuildError(
            f"no variant of {cfg.name} can be built on this machine: {left[0].why if left else 'the matrix is empty'}",
            "build each variant where its torch is reachable (build --json lists the commands), assemble the "
            "outputs, then release --from the assembled folder",
        )
    default = next((o for o in matrix.outcomes if o.default), None)
    needs_default = [t for t in ctx.options.targets if t not in _static_targets(ctx)]
    if needs_default and (default is None or default.status != "built"):
        why = f"{default.variant.name} was left ({default.why})" if default else "the matrix has no default"
        raise BuildError(
            f"{', '.join(needs_default)} get the default variant's wheels and {why}",
            (f"build it where it can be built ({default.command}), " if default and default.command else "")
            + "assemble the outputs and release --from them; or release only to static-index targets",
        )
    ctx.state.artifacts = release_state.hash_wheels(cfg.out_path, cfg.name)
    ctx.state.move_to(cfg.out_path)
    names = ", ".join(o.variant.name for o in built)
    later = f"; {len(left)} left for other machines ({', '.join(o.variant.name for o in left)})" if left else ""
    return f"{len(built)} variants built ({names}){later}"


def verify(ctx: Context) -> str:
    from kestrel_release.stages import verify as verify_stage

    cfg = ctx.cfg
    counted = 0
    if manifest.locate(cfg.out_path, cfg.name) is not None:  # the default variant: what PyPI-like targets get
        report = verify_stage.run(cfg, [])
        verify_stage.raise_for(report, show=True)
        counted += len(report.wheels)
    # Each variant's folder under the rules of the static index that serves it (no PyPI rules: a local
    # version is the point); a run without a static-index target publishes only <out>/.
    static = sorted(_static_targets(ctx))
    folders = _variant_folders(cfg.out_path) if static else []
    for folder in folders:
        report = verify_stage.run(cfg, [folder], target=static[0])
        verify_stage.raise_for(report, show=True)
        counted += len(report.wheels)
    release_state.check_artifacts(ctx.state, cfg.out_path, cfg.name)
    return f"{counted} wheels clean ({len(folders)} variants, each a release of its own)"


def _variant_folders(out: Path) -> list[Path]:
    return [p for p in sorted((out / "variants").glob("*")) if p.is_dir() and manifest.locate(p) is not None]


def _static_targets(ctx: Context) -> set[str]:
    from kestrel_release import targets

    return {t for t in ctx.options.targets if targets.get(ctx.cfg, t).serves_variants}
