"""The index kind: every PEP 503 / upload-API index (TestPyPI, PyPI, a .pypirc repository, a custom one).

Its table: `[tool.kestrel-release.targets.<name>]` with repository_url (and simple_url); the variables
KESTREL_RELEASE_TARGETS_<NAME>_REPOSITORY_URL / _SIMPLE_URL override one or add one. Uploads are twine's
(targets/pypi/publish.py), credentials twine's sources (adapters/pypi/config.py), the rehearsal's
stand-in a strict sandbox PyPI per index.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.config import model as config_model
from kestrel_release.config.model import IndexTarget as Settings
from kestrel_release.config.values import PREFIX, env_word, suggest
from kestrel_release.targets.base import Check, Options, SettingsTable, VariantIndex, flag, options_from

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

KIND = Settings.kind
# The indexes that exist without a table, in the order a release publishes to them (TestPyPI first:
# the smoke test installs from it before anything reaches PyPI).
BUILTIN = {
    "testpypi": Settings("https://test.pypi.org/legacy/", "https://test.pypi.org/simple/"),
    "pypi": Settings("https://upload.pypi.org/legacy/", "https://pypi.org/simple/"),
}
VERIFY_DEFAULT = config_model.VERIFY_DEFAULT  # the rules verify applies without --target: PyPI's
CONFIRMED = "pypi"  # the index whose uploads ask before the first byte (its files can never be replaced)
DEFAULT = "testpypi"  # publish's target without --target, TWINE_REPOSITORY or an upload URL
CUSTOM = "custom-index"  # the target of --repository-url (or TWINE_REPOSITORY_URL) without --target
KEYS = tuple(f.name for f in dataclasses.fields(Settings))
INSTALLABLE = True  # a release smoke-tests (installs from) the first index it publishes to
_SHOWN = {"testpypi": "TestPyPI", "pypi": "PyPI"}  # how the release plan names the built-in indexes
ENV_HELP = f"an index target's variables are {PREFIX}TARGETS_<NAME>_<KEY>"
TABLE = SettingsTable("targets.<name>", f"{PREFIX}TARGETS_<NAME>_")


@dataclass(frozen=True)
class IndexOptions(Options):
    repository_url: str | None = field(default=None, metadata=flag("Upload URL of the index."))
    simple_url: str | None = field(
        default=None, metadata=flag("Simple index URL (default: derived from the upload URL).")
    )
    smoke_test: bool = field(default=False, metadata=flag("Install the published version into fresh venvs."))
    credentials: tuple[str, str] | None = None


OPTIONS = IndexOptions


@dataclass(frozen=True)
class Endpoint:
    repository_url: str | None
    simple_url: str | None
    credentials: tuple[str, str] | None = None


def describe(name: str) -> tuple[str, str]:
    """(what its publish step does, what its smoke-test step does) for the release plan."""
    shown = _SHOWN.get(name, name)
    return f"upload to {shown}", f"install from {shown} into fresh venvs and import"


def default_target(env: Mapping[str, str] | None = None, repository_url: str | None = None) -> str:
    """`publish`'s target without --target: TWINE_REPOSITORY (a .pypirc section), as twine; else
    "custom-index" when an upload URL is given (it is not TestPyPI, and must not be called so); else testpypi."""
    env = os.environ if env is None else env
    if env.get("TWINE_REPOSITORY"):
        return env["TWINE_REPOSITORY"]
    return CUSTOM if repository_url or env.get("TWINE_REPOSITORY_URL") else DEFAULT


def parse(name: str, body: Any, where: str, errors: list[str], env: dict[str, str]) -> Settings | None:
    keys = set(KEYS)
    if isinstance(body, dict) and set(body) <= keys and "repository_url" in body:
        return Settings(str(body["repository_url"]), str(body.get("simple_url", "")))
    bad = set(body) - keys if isinstance(body, dict) else {"?"}
    hint = suggest(next(iter(bad)), keys) if bad else ""
    errors.append(f"{where}: an index target takes only repository_url and simple_url{hint}")
    return None


def env_names() -> dict[str, str]:
    return {}  # open-ended: KESTREL_RELEASE_TARGETS_<NAME>_<KEY>, see parse_env_name


def parse_env_name(var: str) -> tuple[str, str] | None:
    """KESTREL_RELEASE_TARGETS_<NAME>_<KEY> -> (NAME as written, key); None for any other name."""
    head = f"{PREFIX}TARGETS_"
    if not var.startswith(head):
        return None
    for key in KEYS:
        tail = "_" + env_word(key)
        if var.endswith(tail) and len(var) > len(head) + len(tail):
            return var[len(head) : -len(tail)], key
    return None


def from_env(targets: dict[str, Any], errors: list[str], env: dict[str, str], elsewhere: dict[str, str]) -> None:
    """KESTREL_RELEASE_TARGETS_<NAME>_REPOSITORY_URL / _SIMPLE_URL: override an index target, or add one.
    `elsewhere`: NAME word -> where the variables of a target of another kind are (an error here)."""
    by_word = {env_word(name): name for name, t in targets.items() if isinstance(t, Settings)}
    given: dict[str, dict[str, str]] = {}
    for var in sorted(env):
        parsed = parse_env_name(var)
        if parsed is None:
            continue
        word, key = parsed
        if word in elsewhere:
            errors.append(f"{var}: {elsewhere[word]}")
            continue
        given.setdefault(word, {})[key] = env[var]
    for word, values in given.items():
        name = by_word.get(word, word.lower())
        current = targets.get(name)
        merged = {**(dataclasses.asdict(current) if isinstance(current, Settings) else {}), **values}
        if not merged.get("repository_url"):
            errors.append(
                f"{PREFIX}TARGETS_{word}_SIMPLE_URL: target '{name}' has no repository_url (set "
                f"{PREFIX}TARGETS_{word}_REPOSITORY_URL too)"
            )
            continue
        targets[name] = Settings(str(merged["repository_url"]), str(merged.get("simple_url", "")))


def validate(name: str, settings: Settings, errors: list[str], at: Any) -> None:
    """Nothing beyond parse: a URL's shape is checked where it is used (adapters/pypi_config)."""


def refuse_variant_labels(paths: list[Path], target: str) -> None:
    """A PEP 825 (Draft) labelled wheel never goes to a PyPI-like index (exit 5): PyPI refuses the filename,
    and an index that took it would serve it to installers that cannot read it."""
    from kestrel_release.errors import VerifyError
    from kestrel_release.variants import pep825

    for path in paths:
        files = [path] if path.is_file() else sorted(path.glob("*.whl")) if path.is_dir() else []
        labelled = [f.name for f in files if pep825.split_filename(f.name)[1] is not None]
        if labelled:
            raise VerifyError(
                f"{pep825.DRAFT}: {labelled[0]} is a variant-labelled wheel, which {target} (a PyPI-like index) "
                "must not get",
                "publish the plain wheels of the build output; PEP 825 wheels stay in <out>/pep825",
            )


class Target:
    """One index: `name` (testpypi, pypi, a configured one, or a .pypirc repository)."""

    kind = KIND
    verify_rules = Settings.verify_rules
    installable = INSTALLABLE
    serves_variants = False  # the default variant's plain wheels only (a labelled one is refused)

    def __init__(self, name: str, cfg: Config, settings: Settings | None) -> None:
        self.name, self.cfg, self.settings = name, cfg, settings
        self.label = name

    def variant_index(self) -> VariantIndex | None:
        return None

    def options(self, flags: dict[str, Any]) -> IndexOptions:
        return options_from(IndexOptions, flags)

    def publish(self, paths: list[Path], options: IndexOptions) -> Any:
        from kestrel_release.targets.pypi import publish

        refuse_variant_labels(paths, self.name)
        o = options
        return publish.run(
            self.cfg,
            paths,
            target=self.name,
            repository_url=o.repository_url,
            simple_url=o.simple_url,
            dry_run=o.dry_run,
            yes=o.yes,
            smoke_test=o.smoke_test,
            token_env=o.token_env,
            credentials=o.credentials,
            pypi_rules=self.name in BUILTIN,
            confirm=self.name == CONFIRMED,
            builtin=BUILTIN.get(self.name),
        )

    def render(self, result: Any) -> None:
        from kestrel_release.targets.pypi import publish

        publish.render(result)

    def endpoint(self) -> Endpoint:
        return Endpoint(None, None)

    def stand_in(self, stack: contextlib.ExitStack, base: Path) -> Endpoint:
        from kestrel_release.sandbox.pypi.server import PypiSandbox
        from kestrel_release.ui import console

        (base / self.name).mkdir(parents=True, exist_ok=True)
        box = stack.enter_context(PypiSandbox(directory=base / self.name, strict=True))
        console.info(f"  stand-in {self.name}: strict sandbox PyPI at {box.url}")
        return Endpoint(box.upload_url, box.simple_url, (box.username, box.password))

    def release_publish(self, endpoint: Endpoint) -> str:
        from kestrel_release.stages.publish import summary

        e = endpoint
        options = IndexOptions(
            repository_url=e.repository_url, simple_url=e.simple_url, yes=True, credentials=e.credentials
        )
        published = self.publish([], options)
        summary.publish(self.name, published)  # a CI job's summary page, as `publish` writes it
        return f"{len(published.uploaded)} uploaded, {len(published.skipped)} already there"

    def preflight(self, endpoint: Endpoint, *, version: str, prebuilt: bool, resume: bool) -> list[str]:
        from kestrel_release.targets.pypi import preflight

        return preflight.problems(
            self.cfg, self.name, endpoint, version, prebuilt, resume, builtin=BUILTIN.get(self.name)
        )

    def resolve(self, repository_url: str | None, simple_url: str | None) -> Any:
        """The index (adapters.pypi.Index) as publish resolves it, from these overrides and the settings."""
        from kestrel_release.adapters.pypi import config as pypi_config

        return pypi_config.resolve_index(
            self.name, self.cfg.targets, repository_url, simple_url, builtin=BUILTIN.get(self.name)
        )

    def _urls(self) -> tuple[str, str, str]:
        """(upload URL, simple URL, which setting chose it) as publish resolves them."""
        from kestrel_release.errors import KestrelError

        try:
            index = self.resolve(None, None)
        except KestrelError as exc:  # preflight reports it as a problem
            return f"(unresolved: {exc.message})", "", ""
        return index.upload_url, index.simple_url, index.source

    def plan_where(self) -> str:
        return f"{self.name} ({self._urls()[0]})"

    def plan_lines(self, rehearse: bool) -> list[str]:
        if rehearse:
            return []
        upload, simple, source = self._urls()  # as publish resolves them (publish prints the same)
        return [f"{self.name}: upload URL {upload} (from {source or 'the target'}), simple URL {simple}"]

    def doctor_checks(self) -> list[Check]:
        import configparser
        import os

        pypirc = configparser.ConfigParser(interpolation=None)
        rc_path = Path(os.environ.get("PYPIRC") or Path.home() / ".pypirc")
        try:
            pypirc.read(rc_path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            pass
        label = f"credentials: {self.name}"
        if os.environ.get("TWINE_PASSWORD"):
            return [Check(label, "ok", "TWINE_PASSWORD is set")]
        if pypirc.has_option(self.name, "password"):
            return [Check(label, "ok", f"[{self.name}] password in {rc_path}")]
        fix = f"export TWINE_PASSWORD=<API token> or add [{self.name}] to {rc_path}"
        return [Check(label, "warn", "none found (needed only to publish)", fix)]

    def simple_url(self) -> str:
        """The simple URL as configured (or PyPI's/TestPyPI's own): verify's 14-day rule reads it."""
        from kestrel_release.adapters.pypi.client import simple_url_for

        t = self.settings or BUILTIN[self.name]
        return t.simple_url or simple_url_for(t.repository_url)

    def smoke(
        self, endpoint: Endpoint, version: str, pythons: list[str], wheels: dict[str, str]
    ) -> tuple[str, list[dict[str, Any]]]:
        """The release's smoke test: install `version` from the index the publish step uploaded to, resolved
        exactly as publish resolves it, read with the upload's credentials. (simple URL, one row per Python);
        a package-caused failure drops `wheels` (filename -> sha256) from the wheel cache."""
        from kestrel_release.adapters.pypi import config as pypi_config
        from kestrel_release.errors import KestrelError
        from kestrel_release.stages.publish import smoke

        e = endpoint
        index = self.resolve(e.repository_url, e.simple_url)
        try:
            creds: tuple[str, str] | None = pypi_config.resolve_credentials(index, given=e.credentials)
        except KestrelError:  # a resumed run may lack them; most indexes are readable without
            creds = None
        from kestrel_release.adapters.pypi.client import auth_for

        # the upload's credentials go to the simple URL only when it is on their origin
        rows = smoke.smoke_test(self.cfg, index.simple_url, version, pythons, auth_for(index, index.simple_url, creds))
        smoke.forget_rejected(rows, wheels)
        return index.simple_url, rows
