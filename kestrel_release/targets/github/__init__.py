"""The github kind: a GitHub release (rolling nightly, dated nightlies, or a tagged release) and its assets.

Its table: `[tool.kestrel-release.targets.github]` (repo, tag, title, notes_template, api_url, prune,
nightly, keep); the variables KESTREL_RELEASE_GITHUB_<KEY>. Uploads: targets/github/release.py; the token:
GH_TOKEN / GITHUB_TOKEN / --token-env (adapters/github/target.py); the rehearsal's stand-in: the GitHub
REST emulator (sandbox/github/emulator.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.config.model import GithubTarget as Settings
from kestrel_release.config.values import PREFIX, env_word, fields, section
from kestrel_release.targets.base import Check, Options, SettingsTable, VariantIndex, flag, options_from

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

KIND = "github"
NAME = "github"  # the built-in GitHub target; `targets.github` in the config
BUILTIN = {NAME: Settings()}
ENV_PREFIX = f"{PREFIX}GITHUB_"
TABLE = SettingsTable(f"targets.{NAME}", ENV_PREFIX)
INSTALLABLE = False
ENV_HELP = f"the GitHub target's variables are {ENV_PREFIX}<KEY>"
REPO_HINT = (
    'set targets.github.repo ([tool.kestrel-release.targets.github] repo = "OWNER/NAME", or '
    "KESTREL_RELEASE_GITHUB_REPO), add a github.com remote 'origin', or leave github out of --targets"
)


@dataclass(frozen=True)
class GithubOptions(Options):
    repo: str | None = field(default=None, metadata=flag("GitHub OWNER/NAME."))
    tag: str | None = field(default=None, metadata=flag("GitHub release tag (default: the rolling nightly)."))
    api_url: str | None = field(default=None, metadata=flag("GitHub API URL (Enterprise: https://HOST/api/v3)."))
    prune: bool | None = field(
        default=None,
        metadata=flag("Remove wheels of other versions from the rolling release.", "--prune/--no-prune"),
    )
    token: str | None = None
    commit: str | None = None


OPTIONS = GithubOptions


@dataclass(frozen=True)
class Endpoint:
    repo: str | None
    api_url: str | None
    token: str | None = None
    commit: str | None = None  # None: the local git HEAD; a rehearsal uses the emulator's main


def describe(name: str) -> tuple[str, str]:
    return "upload to the GitHub release", ""


def parse(name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Settings:
    return section(Settings, body, where, errors, env, ENV_PREFIX)


def env_names() -> dict[str, str]:
    """KESTREL_RELEASE_GITHUB_<KEY> -> the key's dotted path."""
    return {f"{ENV_PREFIX}{env_word(k)}": f"targets.{NAME}.{k}" for k in fields(Settings)}


def parse_env_name(var: str) -> tuple[str, str] | None:
    return None  # every variable of this kind has a fixed name (env_names)


def from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]) -> None:
    if targets.get(NAME) is BUILTIN[NAME]:  # no table: the variables apply to the built-in target
        targets[NAME] = section(Settings, {}, NAME, errors, env, ENV_PREFIX)


def validate(name: str, gh: Settings, errors: list[str], at: Any) -> None:
    from kestrel_release.config.settings import choice_problems

    if gh.repo and gh.repo.count("/") != 1:
        errors.append(f"{at(f'targets.{name}.repo')}: '{gh.repo}' is not OWNER/NAME")
    errors += choice_problems(gh, f"targets.{name}", at)
    if gh.keep < 1:
        errors.append(f"{at(f'targets.{name}.keep')}: {gh.keep} keeps no nightly; use 1 or more")


def repo(cfg: Config) -> tuple[str | None, str]:
    """OWNER/NAME of the GitHub release and where it came from (the config, else the git remote)."""
    from kestrel_release.adapters.github.client import target_repo

    return target_repo(cfg)


class Target:
    kind = KIND
    verify_rules = Settings.verify_rules
    installable = INSTALLABLE
    serves_variants = False
    label = "GitHub"  # the release plan's title when no target names a URL

    def __init__(self, name: str, cfg: Config, settings: Settings | None) -> None:
        self.name, self.settings = name, settings or Settings()
        # The publish code reads cfg.github() (the first target of this kind): make that this target's settings,
        # so a second GitHub target (kind = "github" under another name) publishes to its own repository.
        first = {name: self.settings, **{k: v for k, v in cfg.targets.items() if k != name}}
        self.cfg = dataclasses.replace(cfg, targets=first)

    def variant_index(self) -> VariantIndex | None:
        return None

    def options(self, flags: dict[str, Any]) -> GithubOptions:
        return options_from(GithubOptions, flags)

    def publish(self, paths: list[Path], options: GithubOptions) -> Any:
        from kestrel_release.targets.github import release

        o = options
        return release.run(
            self.cfg,
            paths,
            repo=o.repo,
            tag=o.tag,
            api_url=o.api_url,
            prune=o.prune,
            dry_run=o.dry_run,
            token_env=o.token_env,
            yes=o.yes,
            token=o.token,
            commit=o.commit,
            name=self.name,
        )

    def render(self, result: Any) -> None:
        from kestrel_release.targets.github import result as github_result

        github_result.render(result)

    def endpoint(self) -> Endpoint:
        return Endpoint(repo(self.cfg)[0], None)

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> Endpoint:
        from kestrel_release.sandbox.github.emulator import GithubEmulator
        from kestrel_release.ui import console

        owner = repo(self.cfg)[0]  # never a default: with none, preflight refuses the target as for real
        emulator = stack.enter_context(GithubEmulator(repos=(owner,) if owner else ()))
        console.info(f"  stand-in {self.name}: emulator at {emulator.api_url} ({owner or 'no repository configured'})")
        return Endpoint(owner, emulator.api_url, emulator.token, emulator.head(owner) if owner else None)

    def release_publish(self, endpoint: Endpoint) -> str:
        from kestrel_release.stages.publish import summary

        e = endpoint
        published = self.publish(
            [], GithubOptions(repo=e.repo, api_url=e.api_url, token=e.token, commit=e.commit, yes=True)
        )
        summary.publish(self.name, published)  # a CI job's summary page, as `publish` writes it
        return getattr(published, "summary", "") or "release updated"

    def preflight(self, endpoint: Endpoint, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        from kestrel_release.adapters.github import client as github_adapter
        from kestrel_release.errors import KestrelError

        out = []
        if not endpoint.repo:
            out.append(f"{self.name}: no repository configured: {REPO_HINT}")
        if endpoint.token is None:  # the real GitHub: the token publish will use must be present, and see the repo
            try:
                token = github_adapter.resolve_token(None, None, required=True)
            except KestrelError as exc:
                return [*out, f"{self.name}: {exc.message} ({exc.hint})"]
            if endpoint.repo and token:
                out += self._repo_problems(endpoint.repo, token)
        return out

    def _repo_problems(self, owner: str, token: str) -> list[str]:
        """Open the repository with the token as publish will (a read): missing, invisible or read-only."""
        from kestrel_release.adapters.github.client import GithubClient
        from kestrel_release.adapters.retry import RetryPolicy
        from kestrel_release.errors import KestrelError

        policy = dataclasses.replace(
            RetryPolicy.from_config(self.cfg.publish), retries=1, timeout=min(self.cfg.publish.timeout, 15.0)
        )
        try:
            client = GithubClient(self.settings.api_url, token, owner, timeout=policy.timeout, policy=policy)
        except KestrelError as exc:
            return [f"{self.name}: {exc.message}" + (f" ({exc.hint})" if exc.hint else "")]
        if client.can_push() is False:
            return [
                f"{self.name}: the token can read {owner} but not write to it (creating releases needs contents:write)"
            ]
        return []

    def plan_where(self) -> str:
        return ""

    def plan_lines(self, rehearse: bool) -> list[str]:
        owner, source = repo(self.cfg)  # where the GitHub release goes, and why (never a silent default)
        return [f"GitHub repository: {owner} (from {source})" if owner else "GitHub repository: none configured"]

    def doctor_checks(self) -> list[Check]:
        from kestrel_release.adapters.github import client as github

        variable = github.token_variable()
        label = f"credentials: {self.name}"
        if variable:
            return [Check(label, "ok", f"{variable} is set")]
        return [
            Check(label, "warn", "none found (needed only to publish)", "export GH_TOKEN=<token with contents:write>")
        ]
