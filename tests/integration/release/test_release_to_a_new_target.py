"""A new kind of publish target is one package plus one registry line: this file stands for its `__init__`.

The `directory` kind below copies the verified wheels into a folder. `register()` adds it to the
registry (the one line); the CLI then runs in a child process that registers it first, and a real
release and a rehearsal publish to a `[tool.kestrel-release.targets.shelf] kind = "directory"` target
with no other change to the tool.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kestrel_release.config_values import PREFIX, env_word, fields, section
from kestrel_release.targets.base import Check, Options, options_from
from tests.factories import make_dist, make_project
from tests.helpers import ROOT, CliResult, assert_one_line_error

KIND = "directory"
BUILTIN: dict[str, Any] = {}
INSTALLABLE = False
ENV_HELP = "a directory target's variables are KESTREL_RELEASE_DIRECTORY_<NAME>_<KEY>"


@dataclass(frozen=True)
class Settings:
    verify_rules: ClassVar[str] = ""  # no index or asset rules: a folder takes any wheel
    path: str = ""


@dataclass(frozen=True)
class DirectoryOptions(Options):
    folder: str | None = None


OPTIONS = DirectoryOptions  # the publish flags it accepts: the shared ones and --folder


@dataclass
class Copied:
    folder: str
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def describe(name: str) -> tuple[str, str]:
    return f"copy the wheels into the folder of {name}", ""


def parse(name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Settings:
    return section(Settings, body, where, errors, env, f"{PREFIX}DIRECTORY_{env_word(name)}_")


def env_names() -> dict[str, str]:
    return {}


def parse_env_name(var: str) -> tuple[str, str] | None:
    head = f"{PREFIX}DIRECTORY_"
    key = next((k for k in fields(Settings) if var.startswith(head) and var.endswith("_" + env_word(k))), None)
    return (var[len(head) : -len(key) - 1], key) if key else None


def from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]) -> None:
    """parse() already read each table's variables."""


def validate(name: str, settings: Settings, errors: list[str], at: Any) -> None:
    if not settings.path:
        errors.append(f"{at(f'targets.{name}.path')}: missing (the folder to copy the wheels into)")


class Target:
    kind = KIND
    verify_rules = Settings.verify_rules
    installable = INSTALLABLE
    serves_variants = False

    def __init__(self, name: str, cfg: Any, settings: Settings | None) -> None:
        self.name, self.cfg, self.settings = name, cfg, settings or Settings()
        self.label = name

    def options(self, flags: dict[str, Any]) -> DirectoryOptions:
        return options_from(DirectoryOptions, flags)

    def publish(self, paths: list[Path], options: DirectoryOptions) -> Copied:
        from kestrel_release.stages import verify

        report = verify.run(self.cfg, verify.resolve_wheels(self.cfg, list(paths)), target=self.name)
        verify.raise_for(report, show=True)
        folder = Path(options.folder or self.settings.path)
        folder.mkdir(parents=True, exist_ok=True)
        for wheel in report.wheels:
            shutil.copy2(wheel.path, folder / wheel.filename)
        return Copied(str(folder), sorted(w.filename for w in report.wheels))

    def render(self, result: Copied) -> None:
        print(f"copied {len(result.files)} wheel(s) into {result.folder}", file=sys.stderr)

    def endpoint(self) -> str:
        return self.settings.path

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> str:
        return str(base / self.name)

    def release_publish(self, endpoint: str) -> str:
        copied = self.publish([], DirectoryOptions(folder=endpoint, yes=True))
        return f"{len(copied.files)} copied to {copied.folder}"

    def preflight(self, endpoint: str, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        return [] if Path(endpoint).parent.is_dir() else [f"{self.name}: {Path(endpoint).parent} does not exist"]

    def plan_where(self) -> str:
        return f"{self.name} ({self.settings.path})"

    def plan_lines(self, rehearse: bool) -> list[str]:
        return [f"{self.name}: copies the wheels into {self.settings.path}"]

    def doctor_checks(self) -> list[Check]:
        return []

    def variant_index(self) -> None:
        return None


def register() -> None:
    from kestrel_release import targets

    targets.KINDS[KIND] = sys.modules[__name__]  # the one registry line a new kind adds


def _run(args: list[str]) -> CliResult:
    """The CLI in a child process with the `directory` kind registered (run_cli's environment)."""
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
        f.write(f'\n[tool.kestrel-release.targets.shelf]\nkind = "directory"\npath = "{shelf}"\n')
    return project, shelf, make_dist(project / "dist-all", pythons=("3.12",))


def test_a_release_publishes_to_a_target_of_a_kind_defined_in_one_file(tmp_path):
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
    text = (project / "pyproject.toml").read_text(encoding="utf-8").replace('kind = "directory"', 'kind = "directry"')
    (project / "pyproject.toml").write_text(text, encoding="utf-8")
    result = _run(["release", "--project", str(project), "--targets", "shelf", "--yes"])
    assert_one_line_error(
        result,
        2,
        "[tool.kestrel-release.targets.shelf].kind: unknown target kind 'directry'",
        "did you mean 'directory'",
        "known kinds: index, github, static-index, directory",
    )


def test_an_unknown_release_target_lists_the_known_ones_configured_included(tmp_path):
    project, _, _ = _project(tmp_path)
    result = _run(["release", "--project", str(project), "--targets", "shelve", "--yes"])
    assert_one_line_error(result, 2, "unknown release target(s): shelve", "testpypi, pypi, github, shelf")
