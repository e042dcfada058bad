"""Where `release` publishes: the real targets, or local stand-ins for a rehearsal.

A rehearsal starts each target's stand-in (targets/: a strict sandbox PyPI per index, so PyPI's own
rules fail the rehearsal where PyPI would, the GitHub emulator, a static index served by the sandbox
static host), all on loopback with throwaway credentials. Their files live in `<out_dir>.rehearsal/` so a resumed rehearsal sees what it uploaded before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kestrel_release import targets as registry
from kestrel_release.config.model import Config

Endpoints = dict[str, Any]  # target name -> where its publish step goes (the target's own Endpoint)


def _names(cfg: Config, chosen: tuple[str, ...]) -> list[str]:
    """The built-in targets (as a release always had) and the chosen ones, in release order."""
    return [n for n in registry.names(cfg) if n in registry.builtin() or n in chosen]


def real_endpoints(cfg: Config, chosen: tuple[str, ...] = ()) -> Endpoints:
    """The configured targets; credentials come from the usual sources at publish time."""
    return {name: registry.get(cfg, name).endpoint() for name in _names(cfg, chosen)}


MARKER = ".kestrel-rehearsal"  # marks `<out>.rehearsal` as the tool's, so a new rehearsal may empty it


def rehearsal_dir(cfg: Config) -> Path:
    return cfg.out_path.with_name(cfg.out_path.name + ".rehearsal")


@contextlib.contextmanager
def stand_ins(cfg: Config, fresh: bool = True, chosen: tuple[str, ...] = ()) -> Iterator[Endpoints]:
    """Start every target's stand-in for the length of a rehearsal.

    `fresh` empties the sandbox indexes first (a new rehearsal); a resumed one keeps them.
    """
    import shutil

    from kestrel_release.errors import UsageError
    from kestrel_release.files import safepaths

    base = safepaths.check_target(rehearsal_dir(cfg), cfg.project_dir, "rehearsal directory")
    marker = base / MARKER
    # An older rehearsal left only its built-in targets' folders: also ours.
    if base.is_dir() and not marker.exists() and {p.name for p in base.iterdir()} - set(registry.builtin()):
        raise UsageError(
            f"{base} exists and was not made by a rehearsal",
            "move it away (a rehearsal keeps its stand-in indexes there); nothing was changed",
        )
    if fresh:
        shutil.rmtree(base, ignore_errors=True)  # ours: it holds the marker (or is empty)
    base.mkdir(parents=True, exist_ok=True)
    marker.touch()
    from kestrel_release.files import statedir

    if not (base / statedir.GITIGNORE).exists():  # the stand-ins' files never show in `git status`
        (base / statedir.GITIGNORE).write_text(statedir.GITIGNORE_TEXT, encoding="utf-8")
    with contextlib.ExitStack() as stack:
        yield {name: registry.get(cfg, name).stand_in(stack, base) for name in _names(cfg, chosen)}
