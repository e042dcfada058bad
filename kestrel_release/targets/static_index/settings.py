"""The `static-index` target's configuration: its table, defaults and checks (pure: no I/O).

    [tool.kestrel-release.targets.wheels]
    kind = "static-index"
    dir = "site/whl"                        # the index's root, relative to the project
    base_url = "https://example.org/whl"    # optional: where a static host serves `dir` (for the printed
                                            # pip lines; the pages themselves use relative links)
    github = {repo = "OWNER/NAME", tag = "v{version}"}   # optional: wheels as release assets,
                                            # the pages (still written to `dir`) link to them

Each variant's wheels go to `<dir>/<cu>/<project>/` (PyTorch's layout, `pip install --index-url
<base_url>/cu130 NAME`); a project without variants gets a plain index at `<dir>/<project>/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from kestrel_release.config.model import doc

KIND = "static-index"
KEYS = {"kind", "dir", "base_url", "github"}
GITHUB_KEYS = {"repo", "tag"}


@dataclass(frozen=True)
class StaticIndexTarget:
    # verify's rules for its wheels: a release asset's size limit (its wheels may be assets), not PyPI's rules
    kind: ClassVar[str] = KIND
    verify_rules: ClassVar[str] = "asset"
    # The table's keys; the `github_` ones are written as the `github = {repo, tag}` table.
    dir: str = field(metadata=doc("The index's root directory, relative to the project."))
    base_url: str = field(
        default="",
        metadata=doc("Where a static host serves `dir` (only for the printed pip lines; the pages link relatively)."),
    )
    github_repo: str = field(
        default="",
        metadata=doc(
            'The repository ("OWNER/NAME") whose release holds the wheels as assets, the pages linking to them; '
            '"" = the wheels are copied beside the pages in `dir`.'
        ),
    )
    github_tag: str = field(default="v{version}", metadata=doc("The tag of that release; it must contain `{version}`."))

    def tag_for(self, version: str) -> str:
        return self.github_tag.replace("{version}", version)

    def asset_url(self, version: str, filename: str) -> str:
        """A release asset's public download URL (what github.com redirects to the file)."""
        return f"https://github.com/{self.github_repo}/releases/download/{self.tag_for(version)}/{filename}"


def is_static_index(body: Any) -> bool:
    return isinstance(body, dict) and body.get("kind") == KIND


def _suggest(key: str, known: set[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(known))})"


def parse(body: dict[str, Any], where: str, errors: list[str]) -> StaticIndexTarget:
    """The target from its table; every problem appended to `errors` (one line each)."""
    for key in sorted(set(body) - KEYS):
        errors.append(f"{where}.{key}: unknown key{_suggest(key, KEYS)}")
    folder = body.get("dir")
    if not isinstance(folder, str) or not folder.strip():
        errors.append(
            f'{where}.dir: missing; a static-index target needs dir = "path/to/index" (relative to the project)'
        )
        folder = ""
    base_url = body.get("base_url", "")
    if not isinstance(base_url, str) or (base_url and not base_url.startswith(("http://", "https://"))):
        errors.append(f"{where}.base_url: '{base_url}' is not an http(s) URL")
        base_url = ""
    github = body.get("github", {})
    if not isinstance(github, dict):
        errors.append(f'{where}.github: expected a table like {{repo = "OWNER/NAME", tag = "v{{version}}"}}')
        github = {}
    for key in sorted(set(github) - GITHUB_KEYS):
        errors.append(f"{where}.github.{key}: unknown key{_suggest(key, GITHUB_KEYS)}")
    repo, tag = str(github.get("repo", "")), str(github.get("tag", "v{version}"))
    if github and repo.count("/") != 1:
        errors.append(f"{where}.github.repo: '{repo}' is not OWNER/NAME")
    if github and "{version}" not in tag:
        errors.append(f"{where}.github.tag: '{tag}' has no {{version}}: every release would reuse one tag")
    return StaticIndexTarget(folder, base_url.rstrip("/"), repo, tag)
