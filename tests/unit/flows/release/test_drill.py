"""KESTREL_RELEASE_FAIL_AT swaps the named step for one failing with that step's own exit code."""

from __future__ import annotations

import pytest

from kestrel_release import errors
from kestrel_release.flows import release
from kestrel_release.flows.release import drill


@pytest.mark.parametrize(
    ("step", "kind", "code"),
    [
        ("preflight", errors.PreflightError, 3),
        ("build", errors.BuildError, 4),
        ("verify", errors.VerifyError, 5),
        ("publish-pypi", errors.PublishError, 6),
        ("smoke-test", errors.PublishError, 6),
    ],
)
def test_the_named_step_fails_as_it_would_for_real(step, kind, code):
    plan = release.plan(release.Options())
    armed = drill.arm(plan, {drill.FAIL_AT_ENV: step})
    changed = [new for old, new in zip(plan, armed, strict=True) if old != new]
    assert [s.name for s in changed] == [step]
    with pytest.raises(kind) as caught:
        changed[0].func(None)  # type: ignore[arg-type]
    assert caught.value.exit_code == code
    assert caught.value.message == f"injected failure (KESTREL_RELEASE_FAIL_AT={step})"


@pytest.mark.parametrize("value", [None, "", "no-such-step"])
def test_without_a_named_step_the_plan_is_untouched(value):
    plan = release.plan(release.Options())
    environ = {} if value is None else {drill.FAIL_AT_ENV: value}
    assert drill.arm(plan, environ) == plan
