"""`kestrel-release init`: set the tool up for an existing package.

It reads the project (detect.py), picks settings that fit it (choose.py), and appends a commented
`[tool.kestrel-release]` table to pyproject.toml: the original bytes are kept as they are
and the table goes after them (inserting into an existing [tool] would move text around).
It also adds the tool's working files to .gitignore. A second run finds the table and the
ignore lines in place and changes nothing. Without --yes it asks on a terminal and refuses
(exit 2) without one, as `release` does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kestrel_release._compat import tomllib
from kestrel_release.adapters import git, pythons, torch_probe
from kestrel_release.adapters.github.client import repo_from_remote as github_repo  # OWNER/NAME of a remote URL
from kestrel_release.errors import KestrelError, UsageError
from kestrel_release.facts import pyversions
from kestrel_release.files import fsutil
from kestrel_release.flows.init import detect as init_detect
from kestrel_release.flows.init.choose import Plan, add_github_target, check_plan, choose, python_allowed
from kestrel_release.flows.init.detect import Detected
from kestrel_release.flows.init.table import table_text
from kestrel_release.process import pools
from kestrel_release.records import documents
from kestrel_release.ui import console

# Free-threaded builds too (found as python3.14t) from 3.14, where PEP 779 made them supported.
CANDIDATE_PYTHONS = pyversions.known(free_threaded_from=pyversions.FREE_THREADED_SUPPORTED_FROM)
NEXT = "kestrel-release release --rehearse"
# Where fsutil.staging_dir stages a build beside the output dir; a SIGKILLed run leaves it behind.
STAGING_GLOB = ".kestrel-staging-*"


@dataclass
class InitResult:
    project_dir: Path
    detected: Detected
    plan: Plan | None  # None when the project already has the table
    table_text: str = ""
    gitignore_added: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    github_repo: str = ""  # the GitHub release target's OWNER/NAME, "" when none is known

    @property
    def changed(self) -> bool:
        return bool(self.written)

    def next_command(self) -> str:
        here = Path.cwd().resolve()
        command = NEXT if self.project_dir == here else f"{NEXT} --project {self.project_dir}"
        # github is a default target, and release refuses it without a repository: the printed
        # command must run as printed.
        return command if self.github_repo else f"{command} --targets testpypi,pypi"

    def document(self) -> documents.InitDocument:
        return documents.InitDocument(
            ok=True,  # a failure's document comes from entry
            project=str(self.project_dir),
            changed=self.changed,
            written=self.written,
            detected=self.detected.document(),
            table=self.plan.values if self.plan else None,
            notes=self.plan.notes if self.plan else [],
            gitignore_added=self.gitignore_added,
            next=self.next_command(),
        )

    def to_json(self) -> dict[str, Any]:
        return documents.to_json(self.document())


def run(project: Path | None, *, yes: bool, python: tuple[str, ...] | None = None) -> InitResult:
    bad = [v for v in python or () if not re.fullmatch(r"3\.\d+", v)]
    if bad:
        raise UsageError(f"--python: {', '.join(bad)} is not a CPython version like 3.12", "e.g. --python 3.11,3.12")
    project_dir = (project or Path.cwd()).resolve()
    pyproject_path = project_dir / "pyproject.toml"
    original = _read_pyproject(project_dir, pyproject_path)
    try:
        data = tomllib.loads(original.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise UsageError(
            f"{pyproject_path}: not valid TOML: {exc}", "fix the syntax error and run init again"
        ) from None
    detected = init_detect.detect(project_dir, data)
    if detected.vcs:
        _vcs_version(detected)
    result = InitResult(project_dir, detected, None)
    if not detected.configured:
        chosen = python or _pythons_on_machine(detected)
        if detected.torch_unlisted:
            detected.pythons_with_torch = _with_torch(chosen)
        result.plan = choose(detected, chosen)
        add_github_target(result.plan, github_repo(git.remote_url(project_dir) or ""))
        check_plan(result.plan)
        result.table_text = table_text(result.plan, detected)
    result.github_repo = (
        _configured_repo(result.plan.values if result.plan else data, planned=result.plan is not None)
        or github_repo(git.remote_url(project_dir) or "")
        or ""
    )  # release falls back to origin too
    out_dir = _out_dir(data) if detected.configured else "dist-all"
    backend = "setuptools" if detected.wraps_setuptools else detected.backend
    result.gitignore_added = _missing_ignores(project_dir, out_dir, backend)
    if result.plan is None and not result.gitignore_added:
        return result
    if not console.json_mode():
        render_plan(result)
    console.confirm(
        f"Write these changes to {', '.join(_targets(result))}?",
        yes=yes,
        refused=("init needs confirmation but stdin is not a terminal", "pass --yes to write the changes shown"),
        cancelled=("init cancelled", "nothing was changed"),
    )
    if result.plan is not None:
        _append_table(pyproject_path, original, result)
        result.written.append("pyproject.toml")
    if result.gitignore_added:
        _append_ignores(project_dir / ".gitignore", result.gitignore_added)
        result.written.append(".gitignore")
    return result


def _vcs_version(d: Detected) -> None:
    """The version a VCS plugin computes now (git describe, as setuptools-scm/hatch-vcs read it), the
    repository's tag style, and an sdist's PKG-INFO, which pins the version where git gives none."""
    from kestrel_release.flows.init import version_sources
    from kestrel_release.stages.version.source import tag_prefix

    d.tag_prefix = tag_prefix(git.tag_names(d.project_dir))
    found = version_sources.scm_version(git.describe_long(d.project_dir) or "")
    if found:
        d.version, d.version_source = found[0], f"git tag {found[1]} ({d.vcs})"
    pkg_info = d.project_dir / "PKG-INFO"
    pinned = version_sources.pkg_info_version(version_sources.read(pkg_info)) if pkg_info.is_file() else None
    if not pinned:
        return
    # hatchling reads an sdist's PKG-INFO before any version source; setuptools-scm when git has no tag.
    if d.backend == "hatchling" or not found:
        d.version, d.version_source = pinned, "PKG-INFO"
    d.version_notes.append(
        f"the version comes from PKG-INFO ({pinned}), an sdist's metadata that {d.backend} reads "
        f"{'before' if d.backend == 'hatchling' else 'instead of'} {d.vcs}: bumps must go through tags in the "
        "source repository (delete PKG-INFO to build from git)"
    )


def _configured_repo(data: dict, *, planned: bool) -> str:
    """targets.github.repo of the planned table or the pyproject's (or its environment override), "" when unset."""
    repo: Any = data
    from kestrel_release.targets import github as github_target

    path = ("targets", github_target.NAME, "repo")
    for key in path if planned else ("tool", "kestrel-release", *path):
        repo = repo.get(key, "") if isinstance(repo, dict) else ""
    return os.environ.get("KESTREL_RELEASE_GITHUB_REPO") or (repo if isinstance(repo, str) else "")


def _read_pyproject(project_dir: Path, path: Path) -> bytes:
    if not project_dir.is_dir():
        raise UsageError(f"{project_dir} is not a directory", "pass --project DIR pointing at the package")
    if path.is_file():
        return path.read_bytes()
    if (project_dir / "setup.py").is_file() or (project_dir / "setup.cfg").is_file():
        return b""  # a setup.py-only project: init creates pyproject.toml holding just the table
    raise UsageError(
        f"no pyproject.toml or setup.py in {project_dir}", "run init in the package's directory or pass --project DIR"
    )


def _out_dir(data: dict[str, Any]) -> str:
    table = data.get("tool", {}).get("kestrel-release", {})
    value = table.get("out_dir") if isinstance(table, dict) else None
    return value if isinstance(value, str) and value else "dist-all"


def _pythons_on_machine(d: Detected) -> tuple[str, ...]:
    """The candidate CPythons this machine has, among those the package supports."""

    wanted = [v for v in CANDIDATE_PYTHONS if python_allowed(v, d)]

    def found(version: str) -> bool:
        try:
            pythons.find_interpreter(version)
            return True
        except KestrelError:
            return False

    with pools.threads(len(wanted) or 1) as pool:
        present = [v for v, ok in zip(wanted, pool.map(found, wanted), strict=True) if ok]
    return tuple(present)


def _with_torch(versions: tuple[str, ...]) -> tuple[str, ...]:
    """The Pythons that have their own torch: a setup.py importing an undeclared torch builds with it
    (build.isolation off) only when every one has it; otherwise each build env installs it."""

    def has(version: str) -> bool:
        try:
            return torch_probe.installed(pythons.find_interpreter(version))
        except KestrelError:
            return False

    with pools.threads(len(versions) or 1) as pool:
        return tuple(v for v, ok in zip(versions, pool.map(has, versions), strict=True) if ok)


def working_files(out_dir: str) -> list[str]:
    """What the tool writes inside the project, as .gitignore lines anchored at the project.

    Its lock and build logs live in its state directory (statedir.py), and the output dirs carry a
    `*` .gitignore of their own once written; these lines also cover them before the first build
    and in tools that ignore nested .gitignore files. The build's staging dir (beside the output)
    and a `version` change's journal exist only while a command runs, but one killed leaves them
    for the next run to finish: committed by `git add -A`, the journal would make every clone
    "finish" that change. An output dir outside the project needs no line."""
    from kestrel_release.stages.version.resume import JOURNAL

    out = PurePosixPath(out_dir.replace("\\", "/"))
    if out.is_absolute() or ".." in out.parts or re.match(r"^[A-Za-z]:", out_dir):
        return [f"/{JOURNAL}"]
    beside = "" if out.parent == PurePosixPath(".") else f"{out.parent}/"
    return [f"/{out}/", f"/{out}.rehearsal/", f"/{beside}{STAGING_GLOB}/", f"/{JOURNAL}"]


def _missing_ignores(project_dir: Path, out_dir: str, backend: str = "") -> list[str]:
    from kestrel_release.flows.init import build_ignores

    lines = working_files(out_dir) + build_ignores.lines(backend, project_dir)  # setuptools builds in-tree
    # git check-ignore takes paths, not patterns: a glob line is probed with a name it must cover.
    ignored = git.ignored(project_dir, [_probe(line) for line in lines])
    if ignored is None:  # not a git repository: compare with .gitignore's lines
        path = project_dir / ".gitignore"
        present = (
            {ln.strip().lstrip("/") for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()}
            if path.is_file()
            else set()
        )
        return [ln for ln in lines if ln.lstrip("/") not in present]
    return [ln for ln in lines if _probe(ln) not in ignored]


def _probe(line: str) -> str:
    return line.lstrip("/").replace("*", "1-probe")


def _targets(result: InitResult) -> list[str]:
    return (["pyproject.toml"] if result.plan else []) + ([".gitignore"] if result.gitignore_added else [])


def _append_table(path: Path, original: bytes, result: InitResult) -> None:
    newline = b"\r\n" if b"\r\n" in original else b"\n"
    sep = b"" if not original else (newline if original.endswith(b"\n") else newline * 2)
    data = original + sep + result.table_text.replace("\n", newline.decode()).encode("utf-8")
    try:  # the whole file must still parse, with exactly our table in it
        parsed = tomllib.loads(data.decode("utf-8"))["tool"]["kestrel-release"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise UsageError(
            f"cannot append [tool.kestrel-release] to {path}: {exc}", "add the table shown above by hand"
        ) from None
    if result.plan is None or parsed != result.plan.values:  # a bug in table_text, not the user's doing
        raise KestrelError(f"the table init wrote does not read back as planned: {parsed!r}")
    fsutil.atomic_write_bytes(path, data)


def _append_ignores(path: Path, lines: list[str]) -> None:
    old = path.read_bytes() if path.is_file() else b""
    block = "# kestrel-release working files\n" + "".join(f"{ln}\n" for ln in lines)
    sep = b"" if not old or old.endswith(b"\n") else b"\n"
    fsutil.atomic_write_bytes(path, old + sep + block.encode("utf-8"))


def render_plan(result: InitResult) -> None:
    if result.plan is not None:
        console.step(f"[tool.kestrel-release] for {result.detected.name or result.project_dir.name}")
        console.console.print(result.table_text.rstrip(), markup=False, highlight=False)
        for note in result.plan.notes:
            console.warn(note)
    if result.gitignore_added:
        console.step(f".gitignore: add {', '.join(result.gitignore_added)}")


def render(result: InitResult) -> None:
    if not result.changed:
        console.ok(
            f"nothing to change: {result.project_dir} is already set up "
            "([tool.kestrel-release] and .gitignore lines present)"
        )
    else:
        console.ok(f"wrote {', '.join(result.written)} in {result.project_dir}")
    console.info(f"next: {result.next_command()}")
