"""What every release step is given: this run's options, the configuration, the saved state, the endpoints.

One typed record instead of keyword arguments each step picks from: a step reads what it needs and,
when it fixes the version (bump, `--from`), writes it back to `ctx.cfg` for the steps after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kestrel_release import targets as registry
from kestrel_release.config.model import Config
from kestrel_release.flows.release.advice import RunOptions
from kestrel_release.flows.release.rehearsal import Endpoints
from kestrel_release.flows.release.state import ReleaseState

TARGETS = tuple(registry.builtin())  # a release's targets without --targets


@dataclass(frozen=True)
class Options:
    """The options of one `release` command line (cli.release builds it; the plan follows from it)."""

    targets: tuple[str, ...] = TARGETS
    bump: str | None = None
    rehearse: bool = False
    yes: bool = False
    resume: bool = False
    gpu_check: bool = True
    prebuilt: bool = False  # release --from OUT: cfg.out_path already holds the wheels
    force: bool = False
    allow_dirty: bool = False
    # The configured targets' settings, name -> settings (release.run fills it from cfg.targets): the plan
    # asks the target registry what each of `targets` is without the whole configuration.
    configured: tuple[tuple[str, Any], ...] = ()

    def params(self, cfg: Config) -> dict[str, Any]:
        """What the state file records of this run: a resumed run must repeat it (resume.check_options)."""
        params: dict[str, Any] = {
            "bump": self.bump,
            "targets": list(self.targets),
            "rehearse": self.rehearse,
            "python": list(cfg.python),
        }
        if self.prebuilt:
            params["from"] = str(cfg.out_path)
        return params

    def advice(self, cfg: Config) -> RunOptions:
        """This run's command line as a failure's hint repeats it."""
        return RunOptions(
            cfg.project_dir,
            self.targets,
            tuple(cfg.python),
            rehearse=self.rehearse,
            bump=self.bump,
            from_dir=Path(cfg.out_path) if self.prebuilt else None,
            gpu_check=self.gpu_check,
            allow_dirty=self.allow_dirty,
            yes=self.yes,
            resume=self.resume,
        )


@dataclass
class Context:
    """One run of the pipeline, handed to each step in turn."""

    cfg: Config
    state: ReleaseState
    ends: Endpoints
    options: Options
