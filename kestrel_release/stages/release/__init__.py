"""`release`: the whole pipeline in one command, in order, resumable, rehearsable.

preflight -> bump -> build -> verify -> publish testpypi -> smoke test -> publish pypi
-> publish github. It prints the plan, asks once, stops at the first failure with
that step's exit code, and records finished steps so `--resume` continues there.
`--rehearse` runs the same steps against local stand-ins (see rehearsal.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any

from kestrel_release import console, manifest, safepaths
from kestrel_release.config import Config
from kestrel_release.errors import KestrelError, UsageError
from kestrel_release.fsutil import project_lock
from kestrel_release.stages.release import advice as release_advice
from kestrel_release.stages.release import preflight as release_preflight
from kestrel_release.stages.release import rehearsal_bump
from kestrel_release.stages.release import resume as release_resume
from kestrel_release.stages.release import state as release_state
from kestrel_release.stages.release import steps as release_steps
from kestrel_release.stages.release.rehearsal import Endpoints, real_endpoints, stand_ins

TARGETS = ("testpypi", "pypi", "github")
ALL_STEPS = ("preflight", "bump", "build", "verify", "publish-testpypi", "smoke-test", "publish-pypi", "publish-github")
# Test hook: make a step fail as it would for real, to prove --resume (documented in README).
FAIL_AT_ENV = "KESTREL_RELEASE_FAIL_AT"


@dataclass
class StepResult:
    name: str
    status: str  # done | resumed | failed
    seconds: float = 0.0
    detail: str = ""


@dataclass
class ReleaseResult:
    version: str | None
    rehearse: bool
    targets: tuple[str, ...]
    steps: list[StepResult] = field(default_factory=list)
    pythons: list[str] = field(default_factory=list)  # the Pythons this run built, verified and installed
    skipped_pythons: list[str] = field(default_factory=list)  # configured, missing here (rehearsal only)
    not_checked: list[str] = field(default_factory=list)  # what only the real world can check (rehearsal)
    restored: str = ""  # a rehearsal's bump, undone in the project: "X -> Y restored to X"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "rehearse": self.rehearse,
            "targets": list(self.targets),
            "ok": all(s.status != "failed" for s in self.steps),
            "steps": [dataclasses.asdict(s) for s in self.steps],
            "pythons": self.pythons,
            "skipped_pythons": self.skipped_pythons,
            "not_checked": self.not_checked,
            "restored": self.restored,
        }


def plan_steps(targets: tuple[str, ...], bump: str | None) -> list[str]:
    """The steps this run will take, in order."""
    wanted = {"preflight", "build", "verify"}
    if bump:
        wanted.add("bump")
    for target in targets:
        wanted.add(f"publish-{target}")
    if "testpypi" in targets or "pypi" in targets:
        wanted.add("smoke-test")
    steps = [s for s in ALL_STEPS if s in wanted]
    if "smoke-test" in steps and "testpypi" not in targets:  # smoke-test pypi after publishing to it
        steps.remove("smoke-test")
        steps.insert(steps.index("publish-pypi") + 1, "smoke-test")
    return steps


def run(
    cfg: Config,
    *,
    bump: str | None,
    targets: tuple[str, ...],
    rehearse: bool,
    yes: bool,
    resume: bool,
    gpu_check: bool = True,
    prebuilt: bool = False,
    force: bool = False,
    allow_dirty: bool = False,
) -> ReleaseResult:
    """Run the release pipeline; raises the failing step's error (and its exit code).

    `prebuilt` (release --from OUT): cfg.out_path already holds a build or assembled output;
    the build step is skipped and preflight checks that output instead of the build machine.
    """
    bad = [t for t in targets if t not in TARGETS]
    if bad or not targets:
        raise UsageError(
            f"unknown release target(s): {', '.join(bad) or '(none)'}", f"choose from {', '.join(TARGETS)}"
        )
    if prebuilt and bump:
        raise UsageError(
            "--bump cannot be used with --from: those wheels are already built",
            "bump, rebuild and assemble first, or drop --bump",
        )
    if bump:  # a version from git tags is bumped by tagging: refuse before anything runs
        from kestrel_release.stages.version.source import check_bumpable

        check_bumpable(cfg, bump)
    if not prebuilt:  # before any bump: a release is every configured platform, not this machine's share
        from kestrel_release.stages.build.platforms import check_release_here

        check_release_here(cfg)
    if cfg.version is None and not prebuilt:  # [project] dynamic = ["version"]: the backend says (cached)
        from kestrel_release.stages.version.source import backend_version

        cfg = dataclasses.replace(cfg, version=backend_version(cfg))
    steps = [s for s in plan_steps(targets, bump) if not (prebuilt and s == "build")]
    skipped: list[str] = []
    if rehearse:  # the Pythons this machine has; a real release needs every configured one (doctor)
        cfg, skipped = release_preflight.available_pythons(cfg)
    params = {"bump": bump, "targets": list(targets), "rehearse": rehearse, "python": list(cfg.python)}
    if prebuilt:
        params["from"] = str(cfg.out_path)
        if manifest.locate(cfg.out_path, cfg.name) is None:  # before the state file is written there
            raise UsageError(
                f"--from {cfg.out_path} holds no release-manifest.json of {cfg.name}",
                "pass the output of kestrel-release build or assemble",
            )
    safepaths.check_target(cfg.out_path, cfg.project_dir, "output directory")  # it holds the release state
    opts = release_advice.RunOptions(
        cfg.project_dir,
        targets,
        tuple(cfg.python),
        rehearse=rehearse,
        bump=bump,
        from_dir=cfg.out_path if prebuilt else None,
        gpu_check=gpu_check,
        allow_dirty=allow_dirty,
        yes=yes,
        resume=resume,
    )
    with project_lock(cfg.project_dir, "release"):
        safepaths.collect_leftovers(cfg.out_path)  # temp files of a killed run's state writes
        if rehearse:
            cfg = rehearsal_bump.heal(cfg)
        try:
            state = _start_state(cfg, params, resume, force, steps)
        except release_state.WheelsChanged as exc:
            exc.hint = release_advice.for_failure("resume", exc, opts, cfg.version)
            raise
        _print_plan(cfg, steps, state, rehearse, skipped)
        if not rehearse:
            console.confirm(
                "Proceed with this release?",
                yes=yes,
                refused=("release needs confirmation but stdin is not a terminal", "pass --yes to proceed"),
                cancelled=("release cancelled", "nothing was changed"),
            )
        state.save()
        result = ReleaseResult(
            state.version or cfg.version, rehearse, targets, pythons=list(cfg.python), skipped_pythons=skipped
        )
        # A rehearsal's stand-ins hold only its own uploads: a new rehearsal, or a rebuild (--resume --force),
        # starts them empty, so rebuilt wheels never meet the earlier ones' bytes there.
        fresh = not resume or force
        endpoints = stand_ins(cfg, fresh=fresh) if rehearse else contextlib.nullcontext(real_endpoints(cfg))
        with endpoints as ends, rehearsal_bump.restoring(cfg, state, result, rehearse):
            cfg = dataclasses.replace(cfg, version=state.version or cfg.version)
            for step in steps:
                cfg = _run_step(
                    step,
                    cfg,
                    state,
                    ends,
                    result,
                    bump=bump,
                    gpu_check=gpu_check,
                    prebuilt=prebuilt,
                    targets=targets,
                    allow_dirty=allow_dirty,
                    resume=resume,
                    advice=opts,
                )
        result.version = cfg.version
        if rehearse:
            result.not_checked = list(release_preflight.REAL_WORLD_ONLY)
    return result


def _start_state(cfg: Config, params: dict, resume: bool, force: bool, steps: list[str]) -> release_state.ReleaseState:
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
            previous.done = [s for s in previous.done if ALL_STEPS.index(s) < ALL_STEPS.index("build")]
            previous.artifacts = {}
        release_state.check_artifacts(previous, cfg.out_path, cfg.name)
        return previous
    return release_state.ReleaseState(release_state.state_path(cfg.out_path, cfg.name), params, version=cfg.version)


def _run_step(
    step: str, cfg: Config, state, ends: Endpoints, result: ReleaseResult, advice: release_advice.RunOptions, **kw
) -> Config:
    if step in state.done:
        result.steps.append(StepResult(step, "resumed", state.timings.get(step, 0.0), "finished earlier"))
        console.info(f"  {step:<17} resumed (finished earlier)")
        return cfg
    console.step(f"{step}")
    started = time.monotonic()
    try:
        if os.environ.get(FAIL_AT_ENV) == step:
            raise _injected(step)
        cfg, detail = release_steps.FUNCS[step](cfg, state, ends, **kw)
    except (KestrelError, KeyboardInterrupt) as exc:
        seconds = time.monotonic() - started
        result.steps.append(StepResult(step, "failed", round(seconds, 2), str(exc)))
        if isinstance(exc, KestrelError):
            exc.message = f"release stopped at step '{step}': {exc.message}"
            exc.hint = release_advice.for_failure(step, exc, advice, cfg.version)  # a command that gets on
        raise
    seconds = time.monotonic() - started
    state.mark(step, seconds)
    result.steps.append(StepResult(step, "done", round(seconds, 2), detail))
    console.ok(f"{step} ({seconds:.1f} s){': ' + detail if detail else ''}")
    return cfg


def _injected(step: str) -> KestrelError:
    from kestrel_release import errors

    kind = {
        "preflight": errors.PreflightError,
        "bump": errors.UsageError,
        "build": errors.BuildError,
        "verify": errors.VerifyError,
    }.get(step, errors.PublishError)
    return kind(f"injected failure ({FAIL_AT_ENV}={step})")


def _print_plan(cfg: Config, steps: list[str], state, rehearse: bool, skipped: list[str]) -> None:
    from rich.table import Table

    urls = {} if rehearse else _index_urls(cfg, steps)
    where = (
        "local stand-ins (rehearsal: strict sandbox PyPI, GitHub emulator)"
        if rehearse
        else ", ".join(f"{t} ({u[0]})" for t, u in urls.items()) or "GitHub"
    )
    table = Table(title=f"release plan: {cfg.name} {state.version or cfg.version} -> {where}")
    table.add_column("#", justify="right")
    table.add_column("step")
    table.add_column("status")
    for i, step in enumerate(steps, 1):
        table.add_row(str(i), step, "finished earlier" if step in state.done else "to do")
    console.console.print(table)
    console.info(f"Pythons: {', '.join(cfg.python)}; output: {cfg.out_path}")
    for target, (upload, simple, source) in urls.items():  # as publish resolves them (publish prints the same)
        console.info(f"{target}: upload URL {upload} (from {source or 'the target'}), simple URL {simple}")
    if "publish-github" in steps:  # where the GitHub release goes, and why (never a silent default)
        repo, source = release_preflight.github_repo(cfg)
        console.info(f"GitHub repository: {repo} (from {source})" if repo else "GitHub repository: none configured")
    if skipped:
        console.warn(
            f"rehearsal without Python {', '.join(skipped)} (configured, not on this machine); a real "
            "release needs every configured Python, or narrow it with --python"
        )


def _index_urls(cfg: Config, steps: list[str]) -> dict[str, tuple[str, str, str]]:
    """target -> (upload URL, simple URL, which setting chose it) for each index this release publishes to."""
    from kestrel_release.adapters import pypi_config

    out = {}
    for target in (s.removeprefix("publish-") for s in steps if s in ("publish-testpypi", "publish-pypi")):
        try:
            index = pypi_config.resolve_index(target, cfg.targets, None, None)
        except KestrelError as exc:  # preflight reports it as a problem
            out[target] = (f"(unresolved: {exc.message})", "", "")
            continue
        out[target] = (index.upload_url, index.simple_url, index.source)
    return out


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
