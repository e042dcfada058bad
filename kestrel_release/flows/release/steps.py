"""The release's steps, as data: plan(options) is the one list that is printed as the plan, run, and resumed
(STEPS, then each target's publish step, and the smoke test, from the target registry).

Each Step has a name (what the state file records and --resume skips), a line saying what it does,
whether it runs for this run's options, and the function that does it: `func(ctx) -> detail`. A step
that fixes the version writes it to `ctx.cfg`; each step's stage is imported when it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kestrel_release.flows.release import preflight as release_preflight
from kestrel_release.flows.release import state as release_state
from kestrel_release.flows.release.context import Context, Options
from kestrel_release.ui import console


@dataclass(frozen=True)
class Step:
    name: str
    does: str
    runs: Callable[[Options], bool]  # whether this run (its options) takes the step
    func: Callable[[Context], str]  # does it; returns the detail line printed when it is done


def preflight(ctx: Context) -> str:
    from kestrel_release.flows import doctor
    from kestrel_release.stages import version

    cfg, opts = ctx.cfg, ctx.options
    problems: list[str] = []
    if opts.prebuilt:
        from kestrel_release.flows.release import size_check
        from kestrel_release.output_dir import manifest

        detail = _preflight_prebuilt(ctx)
        cfg = ctx.cfg
        problems += size_check.problems(cfg, opts.targets, manifest.wheel_paths(cfg.out_path, cfg.name))
    else:
        report = doctor.run(cfg)
        if console.verbose():
            doctor.render(report)
        problems += [
            f"{c.name}: {c.detail} ({c.fix})" if c.fix else f"{c.name}: {c.detail}"
            for c in report.checks
            if c.status == "fail"
        ]
        detail = "environment fit for the release"
    bump = opts.bump
    planned = version.change(cfg, "bump", bump, dry_run=True, allow_dirty=True).new if bump else str(cfg.version)
    problems += release_preflight.check(
        cfg,
        opts.targets,
        ctx.ends,
        version=planned,
        allow_dirty=opts.allow_dirty,
        prebuilt=opts.prebuilt,
        resume=opts.resume,
    )
    release_preflight.raise_for(problems, bool(ctx.state.params.get("rehearse")))
    return f"{detail}; targets ready for {cfg.name} {planned}"


def _preflight_prebuilt(ctx: Context) -> str:
    """release --from: the output must match its manifest and be this project's; it fixes the version."""
    from kestrel_release.stages import assemble

    cfg, state = ctx.cfg, ctx.state
    data = assemble.check_output(cfg, cfg.out_path)
    state.version = data.version
    state.artifacts = release_state.hash_wheels(cfg.out_path, cfg.name)
    state.save()
    ctx.cfg = dataclasses.replace(cfg, version=state.version)
    return f"{len(state.artifacts)} prebuilt wheels in {cfg.out_path}"


def bump(ctx: Context) -> str:
    from kestrel_release.stages import version
    from kestrel_release.stages.version import resume as version_resume

    cfg, state, kind = ctx.cfg, ctx.state, ctx.options.bump
    assert kind is not None  # STEPS takes this step only with --bump
    if state.bump is None:  # record the target before any file changes (see ReleaseState.bump)
        planned = version.change(cfg, "bump", kind, dry_run=True, allow_dirty=True)  # every check, no write
        state.bump = {"from": planned.old, "to": planned.new}
        state.save()
    changed = version_resume.complete(cfg, state.bump["from"], state.bump["to"])
    state.version = changed.new
    state.save()
    ctx.cfg = dataclasses.replace(cfg, version=changed.new)
    return f"{changed.old} -> {changed.new}"


def build(ctx: Context) -> str:
    from kestrel_release.stages import build_wheels as build_stage

    if ctx.cfg.variants is not None:  # the whole torch x CUDA matrix this machine can build
        from kestrel_release.flows.release import variant_steps

        return variant_steps.build(ctx)

    built = build_stage.run(ctx.cfg, gpu_check=ctx.options.gpu_check)
    from kestrel_release.flows.release import size_check

    wheels = [built.out_dir / w["filename"] for w in built.wheels]
    size_check.after_build(ctx.cfg, ctx.options.targets, built.size_plan, wheels)  # exit 3 before any upload
    ctx.state.artifacts = release_state.hash_wheels(built.out_dir, ctx.cfg.name)
    ctx.state.move_to(built.out_dir)
    return f"{len(built.wheels)} wheels in {built.out_dir}"


def verify(ctx: Context) -> str:
    from kestrel_release.stages import verify as verify_stage

    if ctx.cfg.variants is not None:  # the default under PyPI's rules, each variant as its own release
        from kestrel_release.flows.release import variant_steps

        return variant_steps.verify(ctx)

    report = verify_stage.run(ctx.cfg, [])  # the default rules (PyPI's), whatever the targets
    verify_stage.raise_for(report, show=True)
    release_state.check_artifacts(ctx.state, ctx.cfg.out_path, ctx.cfg.name)
    return f"{len(report.wheels)} wheels clean"


def publish(target: str) -> Callable[[Context], str]:
    """Publish to `target` as the target does in a release (its endpoint: the real one or a stand-in)."""

    def step(ctx: Context) -> str:
        from kestrel_release import targets

        release_state.check_artifacts(ctx.state, ctx.cfg.out_path, ctx.cfg.name)
        return targets.get(ctx.cfg, target).release_publish(ctx.ends[target])

    return step


def smoke_test(target: str) -> Callable[[Context], str]:
    """Install what the publish step uploaded to `target` (resolved as it resolved it) and import it."""

    def step(ctx: Context) -> str:
        from kestrel_release import targets
        from kestrel_release.stages.publish import smoke

        cfg = ctx.cfg
        installable: Any = targets.get(cfg, target)  # a kind with INSTALLABLE has smoke()
        simple_url, rows = installable.smoke(
            ctx.ends[target], str(cfg.version), list(cfg.python), dict(ctx.state.artifacts)
        )
        failed = [r for r in rows if not r.get("ok")]
        if failed:
            raise smoke.SmokeTestError(
                f"smoke test of {cfg.name} {cfg.version} from {simple_url} failed for Python "
                f"{', '.join(str(r.get('python')) for r in failed)}: {failed[0].get('detail', '')}",
                smoke.failure_hint(rows, simple_url),
                target,
                str(failed[0].get("failure") or ""),
            )
        return smoke.summary(rows, target)

    return step


def _always(options: Options) -> bool:
    return True


# In order; then, for each target of the run (the registry's order: the built-in ones first), its
# `publish-<name>` step, with `smoke-test` after the first target a release can install from (TestPyPI
# when it is a target, else PyPI).
STEPS: tuple[Step, ...] = (
    Step("preflight", "check the machine, the git tree and every target before any change", _always, preflight),
    Step("bump", "write the bumped version into every version file", lambda o: bool(o.bump), bump),
    Step("build", "build a wheel per configured Python", lambda o: not o.prebuilt, build),
    Step("verify", "check the wheels against PyPI's rules and the configured matrix", _always, verify),
)


def plan(options: Options) -> list[Step]:
    """The steps this run takes, in order (UsageError for a target no kind knows)."""
    from kestrel_release import targets

    configured = dict(options.configured)
    order = targets.check(configured, options.targets, "release")
    steps = [step for step in STEPS if step.runs(options)]
    smoke = next((name for name in order if targets.kind_of(name, configured).INSTALLABLE), None)
    for name in order:
        upload, install = targets.kind_of(name, configured).describe(name)
        steps.append(Step(f"publish-{name}", upload, _always, publish(name)))
        if name == smoke:
            steps.append(Step("smoke-test", install, _always, smoke_test(name)))
    return steps


def before(name: str) -> set[str]:
    """The names of the steps that come before step `name`."""
    names = [step.name for step in STEPS]
    return set(names[: names.index(name)])
