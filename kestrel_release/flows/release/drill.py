"""The failure drill: `KESTREL_RELEASE_FAIL_AT=<step>` makes that step fail as it would for real (README).

It exists to prove `--resume` and the failure advice end to end, so the step is swapped for one
raising that step's own kind of error, once, where the plan is made; the loop that runs the steps
knows nothing of it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from kestrel_release import errors
from kestrel_release.flows.release.context import Context
from kestrel_release.flows.release.steps import Step

FAIL_AT_ENV = "KESTREL_RELEASE_FAIL_AT"

# The exit code each step fails with for real; every publish-like step fails as a publish does.
_KINDS: dict[str, type[errors.KestrelError]] = {
    "preflight": errors.PreflightError,
    "bump": errors.UsageError,
    "build": errors.BuildError,
    "verify": errors.VerifyError,
}


def arm(steps: list[Step], environ: dict[str, str] | None = None) -> list[Step]:
    """`steps`, with the one the drill names (if any) replaced by a failing stand-in."""
    name = (os.environ if environ is None else environ).get(FAIL_AT_ENV)
    return [dataclasses.replace(step, func=_failing(step.name)) if step.name == name else step for step in steps]


def _failing(name: str) -> Callable[[Context], str]:
    kind = _KINDS.get(name, errors.PublishError)

    def fail(ctx: Context) -> str:
        raise kind(f"injected failure ({FAIL_AT_ENV}={name})")

    return fail
