"""The static-index kind: every variant's wheels in a static PEP 503/691 index in a folder (PyTorch's layout).

Its table (settings.py reads it: kind = "static-index", dir, base_url, github = {repo, tag}); no
variables. Writing: targets/static_index/publish.py; the rehearsal's stand-in: the index written under the
rehearsal folder and served by the sandbox static host (read back over HTTP after publishing), with a
GitHub emulator of its own when its wheels are release assets.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.targets.base import Check, Options, SettingsTable, VariantIndex, options_from
from kestrel_release.targets.static_index import settings as static_settings
from kestrel_release.targets.static_index.settings import StaticIndexTarget as Settings

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

KIND = static_settings.KIND
BUILTIN: dict[str, Settings] = {}
INSTALLABLE = False
ENV_HELP = "a static index is set in pyproject.toml only"
# Its `github_*` settings are the keys of its `github` table (settings.py reads them so).
TABLE = SettingsTable("targets.<name>", nested={"github": "The release holding the wheels."})


@dataclass(frozen=True)
class StaticIndexOptions(Options):
    index_dir: Path | None = None  # write there instead of the target's dir (a rehearsal's stand-in)
    api_url: str | None = None  # the GitHub API of a target whose wheels are release assets
    token: str | None = None
    commit: str | None = None


OPTIONS = StaticIndexOptions


@dataclass(frozen=True)
class Endpoint:
    """Where a release writes: the target's own dir (root None), or a rehearsal's served stand-in."""

    root: Path | None = None
    url: str = ""
    api_url: str | None = None
    token: str | None = None
    commit: str | None = None


def describe(name: str) -> tuple[str, str]:
    return f"add every variant to the static index {name}, in PyTorch's layout", ""


def parse(name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Settings:
    return static_settings.parse({"kind": KIND, **body} if isinstance(body, dict) else {}, where, errors)


def env_names() -> dict[str, str]:
    return {}


def parse_env_name(var: str) -> tuple[str, str] | None:
    return None


def from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]) -> None:
    """No variables: the index's folder and URL are the project's, in pyproject.toml."""


def validate(name: str, settings: Settings, errors: list[str], at: Any) -> None:
    """parse checked everything (static_settings.parse)."""


class Target:
    kind = KIND
    verify_rules = Settings.verify_rules
    installable = INSTALLABLE
    serves_variants = True  # every variant's wheels, each variant an index of its own (PyTorch's layout)

    def __init__(self, name: str, cfg: Config, settings: Settings | None) -> None:
        self.name, self.cfg, self.settings = name, cfg, settings
        self.label = name

    def variant_index(self) -> VariantIndex | None:
        s = self.settings
        return VariantIndex(s.dir, s.base_url, bool(s.github_repo)) if s else None

    def options(self, flags: dict[str, Any]) -> StaticIndexOptions:
        return options_from(StaticIndexOptions, flags)

    def publish(self, paths: list[Path], options: StaticIndexOptions) -> Any:
        from kestrel_release.targets.static_index import publish

        o = options
        github = {"api_url": o.api_url, "token": o.token, "token_env": o.token_env, "commit": o.commit}
        return publish.run(self.cfg, paths, target=self.name, dry_run=o.dry_run, root=o.index_dir, github=github)

    def render(self, result: Any) -> None:
        from kestrel_release.targets.static_index import publish

        publish.render(result)

    def endpoint(self) -> Endpoint:
        return Endpoint()

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> Endpoint:
        from kestrel_release.sandbox.static_host import StaticHost
        from kestrel_release.ui import console

        root = base / "static-index" / self.name
        root.mkdir(parents=True, exist_ok=True)
        host = stack.enter_context(StaticHost(root))
        console.info(f"  stand-in {self.name}: static index served at {host.url}/")
        repo = self.settings.github_repo if self.settings else ""
        if not repo:
            return Endpoint(root, host.url)
        from kestrel_release.sandbox.github.emulator import GithubEmulator

        emulator = stack.enter_context(GithubEmulator(repos=(repo,)))
        return Endpoint(root, host.url, emulator.api_url, emulator.token, emulator.head(repo))

    def release_publish(self, endpoint: Endpoint) -> str:
        from kestrel_release.stages.publish import summary

        e = endpoint
        options = StaticIndexOptions(yes=True, index_dir=e.root, api_url=e.api_url, token=e.token, commit=e.commit)
        published = self.publish([], options)
        summary.publish(self.name, published)  # a CI job's summary page, as `publish` writes it
        if e.url:  # the stand-in host serves what was written: every page links every file, with its bytes
            from kestrel_release.adapters import static_index_readback

            static_index_readback.check_served(e.url, published.pages, published.expected)
        return str(published.summary)

    def preflight(self, endpoint: Endpoint, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        """Its directory usable and holding no page another tool wrote; a token for its GitHub release (a
        rehearsal's stand-in has both)."""
        if endpoint.root is not None or self.settings is None:
            return []
        from kestrel_release.adapters import static_index
        from kestrel_release.adapters.github import client as gh_adapter
        from kestrel_release.errors import KestrelError
        from kestrel_release.targets.static_index.publish import root_of

        try:
            root = root_of(self.cfg, self.settings)
        except KestrelError as exc:
            return [f"{self.name}: {exc.message}"]
        problems = [
            f"{self.name}: {page} was not written by kestrel-release (move it away)"
            for page in static_index.foreign_pages(root, self.cfg.name)
        ]
        repo = self.settings.github_repo
        if repo and gh_adapter.resolve_token(None, None, required=False) is None:
            problems.append(
                f"{self.name}: no GitHub token for the wheels' release on {repo} (GH_TOKEN or GITHUB_TOKEN)"
            )
        return problems

    def plan_where(self) -> str:
        return f"{self.name} ({self.settings.dir})" if self.settings else self.name

    def plan_lines(self, rehearse: bool) -> list[str]:
        if rehearse or not self.settings:
            return []
        where = f", served at {self.settings.base_url}" if self.settings.base_url else ""
        return [f"{self.name}: static index in {self.settings.dir}{where}"]

    def doctor_checks(self) -> list[Check]:
        return []
