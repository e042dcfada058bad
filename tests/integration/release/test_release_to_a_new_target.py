"""A new kind of publish target is one package plus one registry line: the throwaway `shelf` kind
(tests/unit/targets/throwaway_kind/, which copies the verified wheels into a folder) is registered by
`register()` (the one line) in a child process that then runs the CLI, and a real release and a rehearsal
publish to a `[tool.kestrel-release.targets.shelf] kind = "shelf"` target with no other change to the tool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.factories import make_dist, make_project
from tests.helpers import ROOT, CliResult, assert_one_line_error


def register() -> None:
    from kestrel_release import targets
    from tests.unit.targets import throwaway_kind

    targets.KINDS[throwaway_kind.KIND] = throwaway_kind  # the one registry line a new kind adds


def _run(args: list[str]) -> CliResult:
    """The CLI in a child process with the `shelf` kind registered (run_cli's environment)."""
    code = (
        "import sys\nfrom tests.integration.release import test_release_to_a_new_target as kind\nkind.register()\n"
        "sys.argv[0] = 'kestrel-release'\nfrom kestrel_release.__main__ import main\nmain()\n"
    )
    env = {**os.environ, "COLUMNS": "200", "TWINE_NON_INTERACTIVE": "1"}
    env.pop("KESTREL_RELEASE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def _project(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    project = make_project(tmp_path / "kernels", pythons=("3.12",))
    shelf = tmp_path / "shelf"
    with (project / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(f'\n[tool.kestrel-release.targets.shelf]\nkind = "shelf"\npath = "{shelf}"\n')
    return project, shelf, make_dist(project / "dist-all", pythons=("3.12",))


def test_a_release_publishes_to_a_target_of_a_kind_defined_in_one_package(tmp_path):
    project, shelf, wheels = _project(tmp_path)
    result = _run(
        ["release", "--project", str(project), "--from", str(project / "dist-all"), "--targets", "shelf", "--yes"]
    )
    assert result.code == 0, result.stderr
    assert f"-> shelf ({shelf})" in result.stderr  # the plan's title names the target and where it goes
    assert f"shelf: copies the wheels into {shelf}" in result.stderr
    assert "publish-shelf" in result.stderr
    assert sorted(p.name for p in shelf.iterdir()) == sorted(w.name for w in wheels)
    assert [p.read_bytes() for p in sorted(shelf.iterdir())] == [w.read_bytes() for w in sorted(wheels)]


def test_a_rehearsal_publishes_to_the_new_kinds_stand_in_only(tmp_path):
    project, shelf, wheels = _project(tmp_path)
    result = _run(
        [
            "release",
            "--project",
            str(project),
            "--from",
            str(project / "dist-all"),
            "--targets",
            "shelf",
            "--rehearse",
            "--yes",
            "--json",
        ]
    )
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["ok"], doc["targets"]) == (True, ["shelf"])
    assert [s["name"] for s in doc["steps"]] == ["preflight", "verify", "publish-shelf"]
    stand_in = project / "dist-all.rehearsal" / "shelf"
    assert sorted(p.name for p in stand_in.iterdir()) == sorted(w.name for w in wheels)
    assert not shelf.exists()  # a rehearsal never touches the real target


def test_a_target_of_an_unknown_kind_is_one_configuration_error(tmp_path):
    project, _, _ = _project(tmp_path)
    text = (project / "pyproject.toml").read_text(encoding="utf-8").replace('kind = "shelf"', 'kind = "shelv"')
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    result = _run(["release", "--project", str(project), "--targets", "shelf", "--yes"])
    assert_one_line_error(
        result,
        2,
        "[tool.kestrel-release.targets.shelf].kind: unknown target kind 'shelv'",
        "did you mean 'shelf'",
        "known kinds: index, github, static-index, shelf",
    )


def test_an_unknown_release_target_lists_the_known_ones_configured_included(tmp_path):
    project, _, _ = _project(tmp_path)
    result = _run(["release", "--project", str(project), "--targets", "shelve", "--yes"])
    assert_one_line_error(result, 2, "unknown release target(s): shelve", "testpypi, pypi, github, shelf")
