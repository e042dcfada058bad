"""The README's set-up notes match what `.ci/run` really does (a newcomer follows the README)."""

from __future__ import annotations

import re
import shlex

from tests.helpers import ROOT


def test_the_npm_step_the_readme_names_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    named = re.search(r"`(npm ci [^`]+)`", quickstart)
    assert named, "the Quickstart does not say which npm step the test suite needs"
    ci_steps = [
        shlex.split(line)
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith("npm ")
    ]
    wanted = shlex.split(named.group(1))
    # .ci/run may add quiet flags; the command and the folder it installs into must be the README's.
    assert any(step[: len(wanted)] == wanted for step in ci_steps), (wanted, ci_steps)
    prefix = wanted[wanted.index("--prefix") + 1]
    assert (ROOT / prefix / "package-lock.json").is_file()  # `npm ci` installs only from a lock file
