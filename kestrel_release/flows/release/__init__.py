"""`release`: the whole pipeline in one command, in order, resumable, rehearsable.

preflight -> bump -> build -> verify -> publish testpypi -> smoke test -> publish pypi
-> publish github (steps.STEPS, the one list). It prints the plan, asks once, stops at the first
failure with that step's exit code, and records finished steps so `--resume` continues there.
`--rehearse` runs the same steps against local stand-ins (see rehearsal.py).

run = plan (the steps these options take) -> prepare (refuse what cannot work, the saved state,
the plan printed and confirmed) -> execute (each step in turn, inside the endpoints).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

from kestrel_release import run_context
from kestrel_release.config.model import Config
from kestrel_release.errors import KestrelError, UsageError
from kestrel_release.files import safepaths
from kestrel_release.files.fsutil import project_lock
from kestrel_release.flows.release import advice as release_advice
from kestrel_release.flows.release import display, drill, rehearsal_bump
from kestrel_release.flows.release import preflight as release_preflight
from kestrel_release.flows.release import resume as release_resume
from kestrel_release.flows.release import state as release_state
from kestrel_release.flows.release import steps as release_steps
from kestrel_release.flows.release.context import TARGETS, Context, Options
from kestrel_release.flows.release.rehearsal import real_endpoints, stand_ins
from kestrel_release.flows.release.result import ReleaseResult, StepResult
from kestrel_release.flows.release.steps import Step
from kestrel_release.output_dir import manifest
from kestrel_release.run_context import RunContext
from kestrel_release.ui import console

render = display.render

__all__ = ["TARGETS", "Options", "ReleaseResult", "StepResult", "plan", "render", "run"]


def run(cfg: Config, options: Options, *, run: RunContext | None = None) -> ReleaseResult:
    """Run the release pipeline; raises the failing step's error (and its exit code).

    `options.prebuilt` (release --from OUT): cfg.out_path already holds a build or assembled output;
    the build step is skipped and preflight checks that output instead of the build machine.
    `run`: the invocation's policy (--allow-insecure-http, --json, -v), else the caller's (run_context).
    """
    from kestrel_release.project import meta as project_meta

    with run_context.using(run):
        # no [project]: --from's manifest names the project, else the backend (cached)
        cfg = project_meta.resolve(cfg, [cfg.out_path] if options.prebuilt else None)
        options = dataclasses.replace(options, configured=tuple(cfg.targets.items()))  # what each target is
        steps = plan(options)
        cfg, skipped = _admit(cfg, options)
        with project_lock(cfg.project_dir, "release"):
            cfg, state, result = _prepare(cfg, options, steps, skipped)
            return _execute(cfg, state, options, steps, result)


def plan(options: Options) -> list[Step]:
    """The steps these options take, in order (the failure drill armed); UsageError for options that never work."""
    steps = release_steps.plan(options)  # an unknown target is refused there, first
    if options.prebuilt and options.bump:
        raise UsageError(
            "--bump cannot be used with --from: those wheels are already built",
            "bump, rebuild and assemble first, or drop --bump",
        )
    return drill.arm(steps)


def _admit(cfg: Config, options: Options) -> tuple[Config, list[str]]:
    """Refuse what cannot work before the lock or any write: (cfg with its version, Pythons a rehearsal skips)."""
    if options.bump:  # a version from git tags is bumped by tagging: refuse before anything runs
        from kestrel_release.stages.version.source import check_bumpable

        check_bumpable(cfg, options.bump)
    if not options.prebuilt:  # before any bump: a release is every configured platform, not this machine's share
        from kestrel_release.stages.build_wheels.platforms import check_release_here

        check_release_here(cfg)
    if cfg.version is None and not options.prebuilt:  # [project] dynamic = ["version"]: the backend says (cached)
        from kestrel_release.stages.version.source import backend_version

        cfg = dataclasses.replace(cfg, version=backend_version(cfg))
    skipped: list[str] = []
    if options.rehearse:  # the Pythons this machine has; a real release needs every configured one (doctor)
        cfg, skipped = release_preflight.available_pythons(cfg)
    if options.prebuilt and manifest.locate(cfg.out_path, cfg.name) is None:  # before the state file is written
        raise UsageError(
            f"--from {cfg.out_path} holds no release-manifest.json of {cfg.name}",
            "pass the output of kestrel-release build or assemble",
        )
    safepaths.check_target(cfg.out_path, cfg.project_dir, "output directory")  # it holds the release state
    return cfg, skipped


def _prepare(
    cfg: Config, options: Options, steps: list[Step], skipped: list[str]
) -> tuple[Config, release_state.ReleaseState, ReleaseResult]:
    """Under the project lock: the state to run from, the plan printed and confirmed."""
    safepaths.collect_leftovers(cfg.out_path)  # temp files of a killed run's state writes
    if options.rehearse:
        cfg = rehearsal_bump.heal(cfg)
    try:
        state = _start_state(cfg, options, [step.name for step in steps])
    except release_state.WheelsChanged as exc:
        exc.hint = release_advice.for_failure("resume", exc, options.advice(cfg), cfg.version)
        raise
    display.print_plan(cfg, steps, state, options.rehearse, skipped)
    if not options.rehearse:
        console.confirm(
            "Proceed with this release?",
            yes=options.yes,
            refused=("release needs confirmation but stdin is not a terminal", "pass --yes to proceed"),
            cancelled=("release cancelled", "nothing was changed"),
        )
    state.save()
    result = ReleaseResult(
        state.version or cfg.version,
        options.rehearse,
        options.targets,
        pythons=list(cfg.python),
        skipped_pythons=skipped,
    )
    return cfg, state, result


def _execute(
    cfg: Config, state: release_state.ReleaseState, options: Options, steps: list[Step], result: ReleaseResult
) -> ReleaseResult:
    """Each step in turn, inside the endpoints (a rehearsal's stand-ins, its bump undone at the end)."""
    # A rehearsal's stand-ins hold only its own uploads: a new rehearsal, or a rebuild (--resume --force),
    # starts them empty, so rebuilt wheels never meet the earlier ones' bytes there.
    fresh = not options.resume or options.force
    endpoints = (
        stand_ins(cfg, fresh=fresh, chosen=options.targets)
        if options.rehearse
        else contextlib.nullcontext(real_endpoints(cfg, options.targets))
    )
    advice = options.advice(cfg)
    with endpoints as ends, rehearsal_bump.restoring(cfg, state, result, options.rehearse):
        ctx = Context(dataclasses.replace(cfg, version=state.version or cfg.version), state, ends, options)
        for step in steps:
            _run_step(step, ctx, result, advice)
    result.version = ctx.cfg.version
    if options.rehearse:
        result.not_checked = list(release_preflight.REAL_WORLD_ONLY)
    return result


def _start_state(cfg: Config, options: Options, steps: list[str]) -> release_state.ReleaseState:
    params = options.params(cfg)
    resume, force = options.resume, options.force
    previous = None if force and not resume else release_state.load(cfg.out_path, cfg.name)
    pending = release_state.unfinished_bump(previous, steps)
    if (
        pending
        and previous
        and previous.params.get("rehearse")
        and params.get("rehearse")
        and str(cfg.version) == (previous.bump or {}).get("from")
    ):
        pending = None  # a rehearsal restored its bump: a new one bumps from the same version, once
    if pending and not resume:  # starting over would bump a second time
        raise UsageError(
            f"an interrupted release already bumped (or was bumping) {cfg.name} to {pending}",
            "run the same release with --resume to finish it without a second bump, "
            "or add --force to start a new release (it bumps again)",
        )
    if resume:
        if previous is None:
            raise UsageError(f"nothing to resume in {cfg.out_path}", "run release without --resume")
        release_resume.check_options(previous, params, force)
        if force:  # the wheels changed (or are in doubt): build again from here, keep the bump
            kept = release_steps.before("build")
            previous.done = [s for s in previous.done if s in kept]
            previous.artifacts = {}
        release_state.check_artifacts(previous, cfg.out_path, cfg.name)
        return previous
    return release_state.ReleaseState(release_state.state_path(cfg.out_path, cfg.name), params, version=cfg.version)


def _run_step(step: Step, ctx: Context, result: ReleaseResult, advice: release_advice.RunOptions) -> None:
    name, state = step.name, ctx.state
    if name in state.done:
        result.steps.append(StepResult(name, "resumed", state.timings.get(name, 0.0), "finished earlier"))
        console.info(f"  {name:<17} resumed (finished earlier)")
        return
    console.step(name)
    version = ctx.cfg.version  # the version the step started from: its failure's advice names it
    started = time.monotonic()
    try:
        detail = step.func(ctx)
    except (KestrelError, KeyboardInterrupt) as exc:
        seconds = time.monotonic() - started
        result.steps.append(StepResult(name, "failed", round(seconds, 2), str(exc)))
        if isinstance(exc, KestrelError):
            exc.message = f"release stopped at step '{name}': {exc.message}"
            exc.hint = release_advice.for_failure(name, exc, advice, version)  # a command that gets on
        raise
    seconds = time.monotonic() - started
    state.mark(name, seconds)
    result.steps.append(StepResult(name, "done", round(seconds, 2), detail))
    console.ok(f"{name} ({seconds:.1f} s){': ' + detail if detail else ''}")
