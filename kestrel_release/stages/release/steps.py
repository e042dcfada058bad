"""The release's steps, as data: STEPS is the one list that is printed as the plan, run, and resumed.

Each Step has a name (what the state file records and --resume skips), a line saying what it does,
whether it runs for this run's options, and the function that does it: `func(ctx) -> detail`. A step
that fixes the version writes it to `ctx.cfg`; each step's stage is imported when it runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from kestrel_release import console
from kestrel_release.stages.release import preflight as release_preflight
from kestrel_release.stages.release import state as release_state
from kestrel_release.stages.release.context import Context, Options


@dataclass(frozen=True)
class Step:
    name: str
    does: str
    runs: Callable[[Options], bool]  # whether this run (its options) takes the step
    func: Callable[[Context], str]  # does it; returns the detail line printed when it is done


def preflight(ctx: Context) -> str:
    from kestrel_release.stages import doctor, version

    cfg, opts = ctx.cfg, ctx.options
    problems: list[str] = []
    if opts.prebuilt:
        detail = _preflight_prebuilt(ctx)
        cfg = ctx.cfg
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
    state.version = str(data["version"])
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
    from kestrel_release.stages import build as build_stage

    built = build_stage.run(ctx.cfg, gpu_check=ctx.options.gpu_check)
    ctx.state.artifacts = release_state.hash_wheels(built.out_dir, ctx.cfg.name)
    ctx.state.move_to(built.out_dir)
    return f"{len(built.wheels)} wheels in {built.out_dir}"


def verify(ctx: Context) -> str:
    from kestrel_release.stages import verify as verify_stage

    report = verify_stage.run(ctx.cfg, [], target="pypi")
    verify_stage.raise_for(report, show=True)
    release_state.check_artifacts(ctx.state, ctx.cfg.out_path, ctx.cfg.name)
    return f"{len(report.wheels)} wheels clean"


def publish_index(target: str) -> Callable[[Context], str]:
    def step(ctx: Context) -> str:
        from kestrel_release.stages import publish

        cfg = ctx.cfg
        release_state.check_artifacts(ctx.state, cfg.out_path, cfg.name)
        index = ctx.ends.index[target]
        options = publish.PublishOptions(
            repository_url=index.repository_url, simple_url=index.simple_url, yes=True, credentials=index.credentials
        )
        published = publish.run(cfg, [], target, options)
        return f"{len(published.uploaded)} uploaded, {len(published.skipped)} already there"

    return step


def smoke_test(target: str) -> Callable[[Context], str]:
    """Install what the publish step uploaded to `target` (resolved as it resolved it) and import it."""

    def step(ctx: Context) -> str:
        from kestrel_release.stages import publish
        from kestrel_release.stages.publish import smoke

        cfg, end = ctx.cfg, ctx.ends.index[target]
        simple_url, rows = publish.smoke_test(
            cfg,
            target,
            str(cfg.version),
            list(cfg.python),
            repository_url=end.repository_url,
            simple_url=end.simple_url,
            credentials=end.credentials,
            wheels=dict(ctx.state.artifacts),
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


def publish_github(ctx: Context) -> str:
    from kestrel_release.stages import publish

    release_state.check_artifacts(ctx.state, ctx.cfg.out_path, ctx.cfg.name)
    gh = ctx.ends.github
    options = publish.PublishOptions(repo=gh.repo, api_url=gh.api_url, token=gh.token, commit=gh.commit, yes=True)
    published = publish.run(ctx.cfg, [], "github", options)
    return getattr(published, "summary", "") or "release updated"


def publish_static_index(ctx: Context) -> str:
    """Every variant into each static-index target (a rehearsal: its stand-in directory, then read back over HTTP)."""
    from kestrel_release.stages import publish

    cfg, gh = ctx.cfg, ctx.ends.github
    release_state.check_artifacts(ctx.state, cfg.out_path, cfg.name)
    details = []
    for name in ctx.options.static_targets:
        end = ctx.ends.static.get(name)
        options = publish.PublishOptions(
            yes=True,
            index_dir=end.root if end else None,
            api_url=gh.api_url,
            token=gh.token,
            commit=end.commit if end else None,
        )
        published = publish.run(cfg, [], name, options)
        if end is not None:  # the stand-in host serves what was written: every page links every file
            from kestrel_release.adapters import static_index

            static_index.check_served(end.url, published.pages)
        details.append(f"{name}: {published.summary}")
    return "; ".join(details)


def _always(options: Options) -> bool:
    return True


def _to(target: str) -> Callable[[Options], bool]:
    return lambda options: target in options.targets


# In order. The smoke test installs from the first index published to: TestPyPI when it is a target,
# else PyPI (after publishing there); so it is listed twice, and one run takes at most one of them.
STEPS: tuple[Step, ...] = (
    Step("preflight", "check the machine, the git tree and every target before any change", _always, preflight),
    Step("bump", "write the bumped version into every version file", lambda o: bool(o.bump), bump),
    Step("build", "build a wheel per configured Python", lambda o: not o.prebuilt, build),
    Step("verify", "check the wheels against PyPI's rules and the configured matrix", _always, verify),
    Step("publish-testpypi", "upload to TestPyPI", _to("testpypi"), publish_index("testpypi")),
    Step("smoke-test", "install from TestPyPI into fresh venvs and import", _to("testpypi"), smoke_test("testpypi")),
    Step("publish-pypi", "upload to PyPI", _to("pypi"), publish_index("pypi")),
    Step(
        "smoke-test",
        "install from PyPI into fresh venvs and import",
        lambda o: "pypi" in o.targets and "testpypi" not in o.targets,
        smoke_test("pypi"),
    ),
    Step("publish-github", "upload to the GitHub release", _to("github"), publish_github),
    Step(
        "publish-static-index",
        "add every variant to the static index(es), in PyTorch's layout",
        lambda o: bool(o.static_targets),
        publish_static_index,
    ),
)


def plan(options: Options) -> list[Step]:
    """The steps this run takes, in order."""
    return [step for step in STEPS if step.runs(options)]


def before(name: str) -> set[str]:
    """The names of the steps that come before step `name`."""
    names = [step.name for step in STEPS]
    return set(names[: names.index(name)])
