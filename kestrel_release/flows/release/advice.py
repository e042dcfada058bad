"""What to run after a failed release step: one command that, run as written once the cause is fixed, gets on.

Advice that goes in circles is worse than none ("--resume" repeating a smoke test that will fail on
the same bytes; "--resume --force" rebuilding onto an index that already holds other bytes of the
version). So each failure gets the command that works for it, with this run's options spelled out
(a resumed run must repeat them):

- preflight: the same command again (nothing was done yet);
- bump, build, publish (network, credentials, limits), github: `--resume` (the finished steps are kept;
  a publish re-run skips the files already there);
- verify: `--resume --force` (a rebuild from the build step, same version; a rehearsal's stand-ins are
  emptied with it, since they only ever held this rehearsal's uploads);
- a version whose files are on an index with other bytes, or a smoke test that rejected the package:
  a new version (`--bump ... --force`), since an index never replaces a file. A rehearsal instead runs
  again without --resume: it starts from empty stand-ins.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from kestrel_release.errors import KestrelError

# Counters that bump within a pre-release series; anything else moves on by a patch release.
_COUNTER_BUMPS = ("pre", "rc", "post", "dev", "nightly")


@dataclass(frozen=True)
class RunOptions:
    """The options of this `release` run, as its command line had them."""

    project_dir: Path
    targets: tuple[str, ...]
    python: tuple[str, ...]
    rehearse: bool = False
    bump: str | None = None
    from_dir: Path | None = None
    gpu_check: bool = True
    allow_dirty: bool = False
    yes: bool = False
    resume: bool = False


def command(opts: RunOptions, *, resume: bool, force: bool = False, bump: str | None = None) -> str:
    """`kestrel-release release ...` with this run's options (shell-quoted), plus the given mode."""
    args = ["kestrel-release", "release", "--project", str(opts.project_dir)]
    args += ["--rehearse"] if opts.rehearse else []
    args += ["--targets", ",".join(opts.targets), "--python", ",".join(opts.python)]
    args += ["--from", str(opts.from_dir)] if opts.from_dir else []
    chosen = bump if bump is not None else opts.bump
    args += ["--bump", chosen] if chosen else []
    args += ["--no-gpu-check"] if not opts.gpu_check else []
    args += ["--allow-dirty"] if opts.allow_dirty else []
    args += ["--yes"] if opts.yes else []
    args += ["--resume"] if resume else []
    args += ["--force"] if force else []
    return shlex.join(args)


def new_version(opts: RunOptions, version: str | None, why: str) -> str:
    """The way out when this version can never be published as built: a new one (or a new rehearsal)."""
    commit = "commit the fix" + (" (or keep --allow-dirty)" if opts.allow_dirty else "")
    if opts.rehearse:  # the stand-ins are ours: a new rehearsal empties them
        again = command(opts, resume=False)
        return f"{why}; fix the cause ({commit} or add --allow-dirty), then start a new rehearsal: {again}"
    if opts.from_dir:
        return (
            f"{why}; fix the cause and {commit}, bump the version (kestrel-release version bump patch), rebuild "
            f"and assemble into {opts.from_dir}, then run: {command(opts, resume=False)}"
        )
    kind = _next_bump(opts)
    return (
        f"{why}; fix the cause and {commit}, then release a new version: {command(opts, resume=False, bump=kind, force=True)}"
        f" (it bumps {version} to the next {kind} version and starts over)"
    )


def _next_bump(opts: RunOptions) -> str:
    return opts.bump if opts.bump in _COUNTER_BUMPS else "patch"


def for_failure(step: str, exc: KestrelError, opts: RunOptions, version: str | None) -> str:
    """The hint for `exc`, raised by `step`: its own advice first, then the command that gets on."""
    from kestrel_release.stages.publish.smoke import SmokeTestError
    from kestrel_release.targets.pypi.publish import NeedsNewVersion

    if isinstance(exc, NeedsNewVersion):
        why = f"{version} can never be published with these bytes on {exc.target} (an index never replaces a file)"
        return new_version(opts, version, why)
    if isinstance(exc, SmokeTestError) and exc.package_fault:
        why = f"the smoke test rejected {version}, whose files on {exc.target} can never be replaced"
        return new_version(opts, version, why)
    if isinstance(exc, SmokeTestError) and exc.kind == "command":  # its log says whose fault: both ways on
        why = f"{exc.hint}; if the package is at fault, {version}'s files on {exc.target} can never be replaced"
        return f"{new_version(opts, version, why)}; if the machine is, fix it, then run: {command(opts, resume=True)}"
    from kestrel_release.flows.release.preflight import VersionTaken
    from kestrel_release.flows.release.state import WheelsChanged

    if isinstance(exc, WheelsChanged):
        return (
            f"rebuild from the build step (the version stays; no second bump): {command(opts, resume=True, force=True)}"
        )
    own = f"{exc.hint}; " if exc.hint else ""
    if isinstance(exc, VersionTaken):  # the same command would find the same version there again
        kind = _next_bump(opts)
        return f"{own}fix the other problems, then run: {command(opts, resume=False, bump=kind, force=True)}"
    if step == "preflight":  # nothing is done before preflight passes: the same command again
        return f"{own}fix it, then run the same release again: {command(opts, resume=opts.resume)}"
    if step == "verify" and opts.from_dir:  # the wheels came from elsewhere: they are rebuilt there
        return f"{own}fix it, rebuild and assemble into {opts.from_dir}, then run: {command(opts, resume=True, force=True)}"
    if step == "verify":  # the wheels themselves: a rebuild from the build step, same version
        return f"{own}fix it, then rebuild and go on: {command(opts, resume=True, force=True)}"
    return f"{own}fix it, then run: {command(opts, resume=True)}"
