"""What `publish --target github` acts on and reports: the target release, each asset's action, the result and its table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kestrel_release.records import serde
from kestrel_release.targets.github.files import LocalFile
from kestrel_release.ui import console


@dataclass(frozen=True)
class Target:
    repo: str
    tag: str
    rolling: bool
    api_url: str
    prune: bool
    dated: bool = False  # a dated nightly: `tag` is the base until the commit is known
    keep: int = 7


@dataclass
class Action:
    name: str
    action: str  # uploaded | replaced | skipped | pruned | cleaned (prefixed "would " in a dry run)
    size: int = 0
    sha256: str = ""


@dataclass
class GithubResult:
    repo: str
    tag: str
    rolling: bool
    version: str
    dry_run: bool
    commit: str = ""
    release_url: str = ""
    actions: list[Action] = field(default_factory=list)
    pruned_releases: list[str] = field(default_factory=list)  # dated nightlies deleted (tags kept)

    def names(self, action: str) -> list[str]:
        return [a.name for a in self.actions if a.action.removeprefix("would ") == action]

    @property
    def uploaded(self) -> list[str]:
        return self.names("uploaded") + self.names("replaced")

    @property
    def skipped(self) -> list[str]:
        return self.names("skipped")

    @property
    def pruned(self) -> list[str]:
        return self.names("pruned")

    @property
    def summary(self) -> str:
        older = f", {len(self.pruned_releases)} older nightlies deleted" if self.pruned_releases else ""
        return (
            f"{self.tag} on {self.repo}: {len(self.uploaded)} uploaded, {len(self.skipped)} unchanged, "
            f"{len(self.pruned)} pruned{older}"
        )

    def add(self, name: str, action: str, f: LocalFile | None = None) -> None:
        prefix = "would " if self.dry_run else ""
        self.actions.append(Action(name, prefix + action, f.size if f else 0, f.sha256 if f else ""))

    def to_json(self) -> dict[str, Any]:
        return {**serde.to_json(self), "uploaded": self.uploaded, "skipped": self.skipped, "pruned": self.pruned}


def render(result: GithubResult) -> None:
    """Summary table of every asset and what happened to it, then one line."""
    from rich.table import Table

    table = Table(title=f"GitHub release {result.tag} ({result.repo})", show_lines=False)
    for column in ("asset", "action", "size", "sha256"):
        table.add_column(column)
    for a in result.actions:
        table.add_row(a.name, a.action, console.size(a.size) if a.size else "", a.sha256[:16])
    console.console.print(table)
    if result.pruned_releases:
        verb = "would delete" if result.dry_run else "deleted"
        console.info(f"{verb} older nightlies (their tags stay): {', '.join(result.pruned_releases)}")
    where = f" — {result.release_url}" if result.release_url else ""
    (console.info if result.dry_run else console.ok)(("dry run: " if result.dry_run else "") + result.summary + where)
