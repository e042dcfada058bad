"""Where `release` publishes: the real indexes, or local stand-ins for a rehearsal.

A rehearsal starts a strict sandbox PyPI for testpypi and another for pypi (so
PyPI's own rules fail the rehearsal where PyPI would), and the GitHub emulator,
all on loopback with throwaway credentials. Their package directories live in
`<out_dir>.rehearsal/` so a resumed rehearsal sees what it uploaded before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release import console
from kestrel_release.config import Config

if TYPE_CHECKING:
    from kestrel_release.sandbox.github import GithubEmulator


@dataclass(frozen=True)
class IndexEndpoint:
    repository_url: str | None
    simple_url: str | None
    credentials: tuple[str, str] | None = None


@dataclass(frozen=True)
class GithubEndpoint:
    repo: str | None
    api_url: str | None
    token: str | None = None
    commit: str | None = None  # None: the local git HEAD; a rehearsal uses the emulator's main


@dataclass(frozen=True)
class StaticEndpoint:
    """A rehearsal's static index: written to `root`, served at `url` (a real release writes the target's dir)."""

    root: Path
    url: str
    commit: str | None = None  # the emulator's head of the target's GitHub repository, when it has one


@dataclass
class Endpoints:
    index: dict[str, IndexEndpoint] = field(default_factory=dict)
    github: GithubEndpoint = GithubEndpoint(None, None)
    static: dict[str, StaticEndpoint] = field(default_factory=dict)


def real_endpoints(cfg: Config) -> Endpoints:
    """The configured targets; credentials come from the usual sources at publish time."""
    from kestrel_release.stages.release.preflight import github_repo

    return Endpoints(
        index={t: IndexEndpoint(None, None) for t in ("testpypi", "pypi")},
        github=GithubEndpoint(github_repo(cfg)[0], None),
    )


MARKER = ".kestrel-rehearsal"  # marks `<out>.rehearsal` as the tool's, so a new rehearsal may empty it


def rehearsal_dir(cfg: Config) -> Path:
    return cfg.out_path.with_name(cfg.out_path.name + ".rehearsal")


@contextlib.contextmanager
def stand_ins(cfg: Config, fresh: bool = True) -> Iterator[Endpoints]:
    """Start the sandbox indexes and the GitHub emulator for the length of a rehearsal.

    `fresh` empties the sandbox indexes first (a new rehearsal); a resumed one keeps them.
    """
    import shutil

    from kestrel_release import safepaths
    from kestrel_release.errors import UsageError
    from kestrel_release.sandbox.github import GithubEmulator
    from kestrel_release.sandbox.pypi import PypiSandbox

    base = safepaths.check_target(rehearsal_dir(cfg), cfg.project_dir, "rehearsal directory")
    marker = base / MARKER
    # An older rehearsal left only its two index folders: also ours.
    if base.is_dir() and not marker.exists() and {p.name for p in base.iterdir()} - {"testpypi", "pypi"}:
        raise UsageError(
            f"{base} exists and was not made by a rehearsal",
            "move it away (a rehearsal keeps its stand-in indexes there); nothing was changed",
        )
    if fresh:
        shutil.rmtree(base, ignore_errors=True)  # ours: it holds the marker (or is empty)
    base.mkdir(parents=True, exist_ok=True)
    marker.touch()
    from kestrel_release import statedir

    if not (base / statedir.GITIGNORE).exists():  # the stand-ins' files never show in `git status`
        (base / statedir.GITIGNORE).write_text(statedir.GITIGNORE_TEXT, encoding="utf-8")
    from kestrel_release.stages.release.preflight import github_repo

    repo = github_repo(cfg)[0]  # never a default: with none, preflight refuses the github target as for real
    static = _static_targets(cfg)
    repos = tuple(dict.fromkeys([r for r in (repo, *(t.github_repo for t in static.values())) if r]))
    with contextlib.ExitStack() as stack:
        index = {}
        for target in ("testpypi", "pypi"):
            (base / target).mkdir(parents=True, exist_ok=True)
            box = stack.enter_context(PypiSandbox(directory=base / target, strict=True))
            index[target] = IndexEndpoint(box.upload_url, box.simple_url, (box.username, box.password))
            console.info(f"  stand-in {target}: strict sandbox PyPI at {box.url}")
        emulator = stack.enter_context(GithubEmulator(repos=repos))
        console.info(f"  stand-in github: emulator at {emulator.api_url} ({repo or 'no repository configured'})")
        yield Endpoints(
            index=index,
            github=GithubEndpoint(repo, emulator.api_url, emulator.token, emulator.head(repo) if repo else None),
            static=_static_stand_ins(stack, base, static, emulator),
        )


def _static_targets(cfg: Config) -> dict:
    from kestrel_release.static_target import StaticIndexTarget

    return {name: t for name, t in cfg.targets.items() if isinstance(t, StaticIndexTarget)}


def _static_stand_ins(
    stack: contextlib.ExitStack, base: Path, static: dict, emulator: GithubEmulator
) -> dict[str, StaticEndpoint]:
    """One static host over `<rehearsal>/static-index/`, a folder per static-index target."""
    if not static:
        return {}
    from kestrel_release.sandbox.static_host import StaticHost

    host = stack.enter_context(StaticHost(base / "static-index"))
    out = {}
    for name, target in static.items():
        (base / "static-index" / name).mkdir(parents=True, exist_ok=True)
        head = emulator.head(target.github_repo) if target.github_repo else None
        out[name] = StaticEndpoint(base / "static-index" / name, f"{host.url}/{name}", head)
        console.info(f"  stand-in {name}: static index served at {host.url}/{name}/")
    return out
