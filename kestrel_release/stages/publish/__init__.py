"""Publish: one interface, with a publisher per kind of target behind it, chosen by the target's name.

`for_target("github", cfg)` gives the GitHub release publisher (github.py); any other name is a
PyPI-like index (index.py: testpypi, pypi, a .pypirc repository, a [tool.kestrel-release.targets] entry).
The CLI and the release stage call only this module, so a new kind of target is a new publisher here,
not a new branch in each caller (hatch's `publish/` plugins are the model).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kestrel_release.errors import VerifyError

if TYPE_CHECKING:  # config pulls in more than `--help` needs
    from kestrel_release.config import Config


@dataclass(frozen=True)
class PublishOptions:
    """Everything a publish may be asked; each publisher reads the fields that apply to it."""

    dry_run: bool = False
    yes: bool = False
    token_env: str | None = None
    # index targets
    repository_url: str | None = None
    simple_url: str | None = None
    smoke_test: bool = False
    credentials: tuple[str, str] | None = None
    # the GitHub target
    repo: str | None = None
    tag: str | None = None
    api_url: str | None = None
    prune: bool | None = None
    token: str | None = None
    commit: str | None = None
    pythons: tuple[str, ...] | None = None  # --python: upload only the wheels that install on these (select.py)
    # a static-index target
    index_dir: Path | None = None  # write there instead of the target's dir (a rehearsal's stand-in)


class Publisher(Protocol):
    name: str

    def run(self, paths: list[Path], options: PublishOptions) -> Any: ...

    def render(self, result: Any) -> None: ...


class IndexPublisher:
    """Uploads to a PyPI-like index with twine (index.py)."""

    def __init__(self, name: str, cfg: Config) -> None:
        self.name, self.cfg = name, cfg

    def run(self, paths: list[Path], options: PublishOptions) -> Any:
        from kestrel_release.stages.publish import index

        refuse_variant_labels(paths, self.name)
        o = options
        return index.run(
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
        )

    def render(self, result: Any) -> None:
        from kestrel_release.stages.publish import index

        index.render(result)


class GithubPublisher:
    """Creates or updates a GitHub release and its assets (github.py)."""

    def __init__(self, name: str, cfg: Config) -> None:
        self.name, self.cfg = name, cfg

    def run(self, paths: list[Path], options: PublishOptions) -> Any:
        from kestrel_release.stages.publish import github

        o = options
        return github.run(
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
        )

    def render(self, result: Any) -> None:
        from kestrel_release.stages.publish import github

        github.render(result)


class StaticIndexPublisher:
    """Adds every variant's wheels to a static PEP 503/691 index in a directory (static_index.py)."""

    def __init__(self, name: str, cfg: Config) -> None:
        self.name, self.cfg = name, cfg

    def run(self, paths: list[Path], options: PublishOptions) -> Any:
        from kestrel_release.stages.publish import static_index

        o = options
        github = {"api_url": o.api_url, "token": o.token, "token_env": o.token_env, "commit": o.commit}
        return static_index.run(self.cfg, paths, target=self.name, dry_run=o.dry_run, root=o.index_dir, github=github)

    def render(self, result: Any) -> None:
        from kestrel_release.stages.publish import static_index

        static_index.render(result)


def refuse_variant_labels(paths: list[Path], target: str) -> None:
    """A PEP 825 (Draft) labelled wheel never goes to a PyPI-like index (exit 5): PyPI refuses the filename,
    and an index that took it would serve it to installers that cannot read it."""
    from kestrel_release import pep825

    for path in paths:
        files = [path] if path.is_file() else sorted(path.glob("*.whl")) if path.is_dir() else []
        labelled = [f.name for f in files if pep825.split_filename(f.name)[1] is not None]
        if labelled:
            raise VerifyError(
                f"{pep825.DRAFT}: {labelled[0]} is a variant-labelled wheel, which {target} (a PyPI-like index) "
                "must not get",
                "publish the plain wheels of the build output; PEP 825 wheels stay in <out>/pep825",
            )


_PUBLISHERS: dict[str, type[GithubPublisher] | type[IndexPublisher]] = {"github": GithubPublisher}


def for_target(name: str, cfg: Config) -> Publisher:
    """The publisher for target `name`: "github" is the GitHub release, a target with kind = "static-index" a
    static index, every other name an index."""
    from kestrel_release.static_target import StaticIndexTarget

    if isinstance(cfg.targets.get(name), StaticIndexTarget):
        return StaticIndexPublisher(name, cfg)
    return _PUBLISHERS.get(name, IndexPublisher)(name, cfg)


def run(cfg: Config, paths: list[Path], target: str, options: PublishOptions) -> Any:
    """Publish `paths` (or the build output) to `target`; raise PublishError on failure."""
    from kestrel_release import project_meta

    cfg = project_meta.resolve(cfg, paths)  # no [project]: named by the wheels' manifest, else the backend
    left: list[Path] = []
    if options.pythons:
        from kestrel_release.stages.publish import python_select
        from kestrel_release.stages.verify import resolve_wheels

        paths, left = python_select.for_pythons(resolve_wheels(cfg, list(paths)), options.pythons)
    result = for_target(target, cfg).run(paths, options)
    if left and hasattr(result, "left_out"):
        result.left_out = [{"filename": p.name, "reason": "not for the selected Pythons"} for p in left]
    return result


def render(result: Any) -> None:
    """Show a publish result: each result type is rendered by the module that defines it."""
    importlib.import_module(type(result).__module__).render(result)


def smoke_test(
    cfg: Config,
    target: str,
    version: str,
    pythons: list[str],
    *,
    repository_url: str | None = None,
    simple_url: str | None = None,
    credentials: tuple[str, str] | None = None,
    wheels: dict[str, str] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """The release's smoke-test step: install `version` from the index `target` uploads to, resolved exactly
    as publish resolves it (--repository-url > TWINE_REPOSITORY_URL > targets > .pypirc > built-in), read with
    the upload's credentials. Returns (the simple URL it installed from, one row per Python); a package-caused
    failure drops `wheels` (filename -> sha256) from the wheel cache."""
    from kestrel_release.adapters import pypi_config
    from kestrel_release.errors import KestrelError
    from kestrel_release.stages.publish import smoke

    index = pypi_config.resolve_index(target, cfg.targets, repository_url, simple_url)
    try:
        creds: tuple[str, str] | None = pypi_config.resolve_credentials(index, given=credentials)
    except KestrelError:  # a resumed run may lack them; most indexes are readable without
        creds = None
    rows = smoke.smoke_test(cfg, index.simple_url, version, pythons, creds)
    smoke.forget_rejected(rows, wheels or {})
    return index.simple_url, rows
