"""The release plan is the list of steps: which ones a run takes, in which order, for its options."""

from __future__ import annotations

import pytest

from kestrel_release.errors import UsageError
from kestrel_release.flows import release
from kestrel_release.flows.release import steps


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            release.Options(),
            "preflight build verify publish-testpypi smoke-test publish-pypi publish-github",
        ),
        (
            release.Options(bump="patch"),
            "preflight bump build verify publish-testpypi smoke-test publish-pypi publish-github",
        ),
        (release.Options(targets=("pypi",)), "preflight build verify publish-pypi smoke-test"),
        (release.Options(targets=("github",)), "preflight build verify publish-github"),
        (
            release.Options(targets=("github", "pypi"), prebuilt=True),
            "preflight verify publish-pypi smoke-test publish-github",
        ),
        (release.Options(targets=("testpypi",)), "preflight build verify publish-testpypi smoke-test"),
    ],
)
def test_the_plan_follows_the_options(options, expected):
    assert " ".join(step.name for step in release.plan(options)) == expected


def test_the_smoke_test_installs_from_the_first_index_published_to():
    smoke = [s for s in release.plan(release.Options(targets=("pypi", "github"))) if s.name == "smoke-test"]
    assert [s.does for s in smoke] == ["install from PyPI into fresh venvs and import"]
    smoke = [s for s in release.plan(release.Options()) if s.name == "smoke-test"]
    assert [s.does for s in smoke] == ["install from TestPyPI into fresh venvs and import"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (release.Options(targets=("pypi", "conda")), "unknown release target(s): conda"),
        (release.Options(targets=()), "unknown release target(s): (none)"),
        (release.Options(bump="patch", prebuilt=True), "--bump cannot be used with --from"),
    ],
)
def test_options_that_never_work_are_refused_by_the_plan(options, message):
    with pytest.raises(UsageError) as caught:
        release.plan(options)
    assert caught.value.message.startswith(message)


def test_a_forced_resume_keeps_only_the_steps_before_the_build():
    assert steps.before("build") == {"preflight", "bump"}
