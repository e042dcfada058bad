"""The release's steps: each takes (cfg, state, ends, **options) and returns (cfg, detail).

`release.run` calls them in order through FUNCS; each step's stage is imported when it runs.
"""

from __future__ import annotations

import dataclasses

from kestrel_release import console
from kestrel_release.stages.release import preflight as release_preflight
from kestrel_release.stages.release import state as release_state


def _step_preflight(
    cfg, state, ends, *, gpu_check, prebuilt=False, bump=None, targets=(), allow_dirty=False, resume=False, **_
):
    from kestrel_release.stages import doctor, version

    problems: list[str] = []
    if prebuilt:
        cfg, detail = _preflight_prebuilt(cfg, state)
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
    planned = version.change(cfg, "bump", bump, dry_run=True, allow_dirty=True).new if bump else str(cfg.version)
    problems += release_preflight.check(
        cfg, targets, ends, version=planned, allow_dirty=allow_dirty, prebuilt=prebuilt, resume=resume
    )
    release_preflight.raise_for(problems, bool(state.params.get("rehearse")))
    return cfg, f"{detail}; targets ready for {cfg.name} {planned}"


def _preflight_prebuilt(cfg, state):
    """release --from: the output must match its manifest and be this project's; it fixes the version."""
    from kestrel_release.stages import assemble

    data = assemble.check_output(cfg, cfg.out_path)
    state.version = str(data["version"])
    state.artifacts = release_state.hash_wheels(cfg.out_path, cfg.name)
    state.save()
    return dataclasses.replace(cfg, version=state.version), f"{len(state.artifacts)} prebuilt wheels in {cfg.out_path}"


def _step_bump(cfg, state, ends, *, bump, **_):
    from kestrel_release.stages import version
    from kestrel_release.stages.version import resume as version_resume

    if state.bump is None:  # record the target before any file changes (see ReleaseState.bump)
        planned = version.change(cfg, "bump", bump, dry_run=True, allow_dirty=True)  # every check, no write
        state.bump = {"from": planned.old, "to": planned.new}
        state.save()
    changed = version_resume.complete(cfg, state.bump["from"], state.bump["to"])
    state.version = changed.new
    state.save()
    return dataclasses.replace(cfg, version=changed.new), f"{changed.old} -> {changed.new}"


def _step_build(cfg, state, ends, *, gpu_check, **_):
    from kestrel_release.stages import build

    built = build.run(cfg, gpu_check=gpu_check)
    state.artifacts = release_state.hash_wheels(built.out_dir, cfg.name)
    state.move_to(built.out_dir)
    return cfg, f"{len(built.wheels)} wheels in {built.out_dir}"


def _step_verify(cfg, state, ends, **_):
    from kestrel_release.stages import verify

    report = verify.run(cfg, [], target="pypi")
    verify.raise_for(report, show=True)
    release_state.check_artifacts(state, cfg.out_path, cfg.name)
    return cfg, f"{len(report.wheels)} wheels clean"


def _publish_index(target: str):
    def step(cfg, state, ends, **_):
        from kestrel_release.stages import publish

        release_state.check_artifacts(state, cfg.out_path, cfg.name)
        index = ends.index[target]
        options = publish.PublishOptions(
            repository_url=index.repository_url, simple_url=index.simple_url, yes=True, credentials=index.credentials
        )
        published = publish.run(cfg, [], target, options)
        return cfg, f"{len(published.uploaded)} uploaded, {len(published.skipped)} already there"

    return step


def _step_smoke(cfg, state, ends, **_):
    from kestrel_release.stages import publish
    from kestrel_release.stages.publish import smoke

    target = "testpypi" if "testpypi" in state.params["targets"] else "pypi"
    end = ends.index[target]  # the index the publish step uploaded to, resolved as it resolved it
    simple_url, rows = publish.smoke_test(
        cfg,
        target,
        str(cfg.version),
        list(cfg.python),
        repository_url=end.repository_url,
        simple_url=end.simple_url,
        credentials=end.credentials,
        wheels=dict(state.artifacts),
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
    return cfg, smoke.summary(rows, target)


def _step_github(cfg, state, ends, **_):
    from kestrel_release.stages import publish

    release_state.check_artifacts(state, cfg.out_path, cfg.name)
    gh = ends.github
    options = publish.PublishOptions(repo=gh.repo, api_url=gh.api_url, token=gh.token, commit=gh.commit, yes=True)
    published = publish.run(cfg, [], "github", options)
    return cfg, getattr(published, "summary", "") or "release updated"


FUNCS = {
    "preflight": _step_preflight,
    "bump": _step_bump,
    "build": _step_build,
    "verify": _step_verify,
    "publish-testpypi": _publish_index("testpypi"),
    "smoke-test": _step_smoke,
    "publish-pypi": _publish_index("pypi"),
    "publish-github": _step_github,
}
