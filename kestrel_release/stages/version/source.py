"""Where a project's version comes from when it is not a static [project].version.

A version from VCS (setuptools-scm, hatch-vcs, versioneer, scikit-build-core's scm
provider) is the git tag: there is no file to rewrite, so `version bump` and
`release --bump` refuse and print the tag command instead. Everything here reads
pyproject.toml / setup.cfg / setup.py text only; nothing is executed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from kestrel_release._compat import tomllib
from kestrel_release.errors import UsageError

if TYPE_CHECKING:
    from kestrel_release.config.model import Config

_SCM_REQ = re.compile(
    r"^\s*(setuptools[-_]scm|hatch[-_]vcs|versioneer|setuptools[-_]git[-_]versioning"
    r"|dunamai|pdm[-_]backend|poetry[-_]dynamic[-_]versioning)\b",
    re.IGNORECASE,
)


def _pyproject(project: Path) -> dict:
    try:
        return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def vcs_tool(project: Path) -> str | None:
    """The tool that derives the version from git tags, or None when the version lives in files."""
    data = _pyproject(project)
    tool = raw if isinstance(raw := data.get("tool"), dict) else {}
    if "setuptools_scm" in tool or "setuptools-scm" in tool:
        return "setuptools-scm"
    hatch_version = tool.get("hatch", {}).get("version", {}) if isinstance(tool.get("hatch"), dict) else {}
    if isinstance(hatch_version, dict) and hatch_version.get("source") == "vcs":
        return "hatch-vcs"
    skb = tool.get("scikit-build", {})
    provider = skb.get("metadata", {}).get("version", {}).get("provider", "") if isinstance(skb, dict) else ""
    if "setuptools_scm" in str(provider):
        return "setuptools-scm"
    if "versioneer" in tool or (project / "versioneer.py").is_file():
        return "versioneer"
    requires = data.get("build-system", {}).get("requires", []) if isinstance(data.get("build-system"), dict) else []
    for req in requires if isinstance(requires, list) else []:
        match = _SCM_REQ.match(str(req))
        if match and not match.group(1).lower().startswith(("pdm", "poetry")):
            return match.group(1).lower().replace("_", "-")
    setup_py = project / "setup.py"
    if setup_py.is_file() and re.search(r"use_scm_version\s*=", setup_py.read_text("utf-8", "replace")):
        return "setuptools-scm"
    return None


def last_tag_version(project: Path) -> str | None:
    """The version of the newest tag reachable from HEAD (v1.2.3 -> 1.2.3), as the VCS tools read it."""
    from packaging.version import InvalidVersion, Version

    from kestrel_release.adapters import git

    text = git.describe_tag(project) or ""  # no tag, or git missing: ask the backend instead
    try:
        return str(Version(text.removeprefix("v"))) if text else None
    except InvalidVersion:
        return None


def tag_command(name: str, version: str, prefix: str = "v") -> str:
    tag = f"{prefix}{version}"
    return f'git tag -a {tag} -m "{name} {version}" && git push origin {tag}'


def tag_prefix(tags: list[str]) -> str:
    """The repository's own tag style: "" when its newest version tag is bare (26.1.0), "v" when it is
    v26.1.0 or there is none. Pure: `tags` newest first (git.tag_names)."""
    for tag in tags:
        m = re.fullmatch(r"([vV]?)\d+(?:\.\d+)*\S*", tag)
        if m:
            return m.group(1)
    return "v"


def repo_tag_prefix(project: Path) -> str:
    from kestrel_release.adapters import git

    return tag_prefix(git.tag_names(project))


def refuse_bump(name: str, tool: str, current: str, kind: str, new: str | None = None, prefix: str = "v") -> UsageError:
    """exit 2: a VCS version is bumped by tagging; the message carries the exact command."""
    from packaging.version import Version

    from kestrel_release.stages.version.pep440 import next_version

    base = Version(current).public  # setuptools-scm's 0.1.1.dev3+gabc1234 -> 0.1.1.dev3
    new = new or next_version(base, kind)
    return UsageError(
        f"{name}'s version comes from git tags ({tool}); kestrel-release does not rewrite it — "
        f"tag instead: {tag_command(name, new, prefix)}",
        "the next build picks the version up from the tag",
    )


def is_static(cfg: Config) -> bool:
    """True when [project].version holds the version (else: setup.py, __init__.py or git tags).

    A dynamic version a stage filled in from the backend (release's plan) stays dynamic: its files
    are version_files, never [project].version (which does not exist)."""
    return (
        cfg.version is not None
        and getattr(cfg, "metadata_source", "pyproject") == "pyproject"
        and not getattr(cfg, "version_dynamic", False)
    )


def backend_version(cfg: Config) -> str:
    if cfg.version is not None:
        return cfg.version
    from kestrel_release.project import meta as project_meta

    return project_meta.for_config(cfg).version


def check_bumpable(cfg: Config, kind: str, new: str | None = None) -> None:
    """Refuse (exit 2) before anything runs when the version comes from git tags."""
    tool = None if is_static(cfg) else vcs_tool(cfg.project_dir)
    if tool:
        current = last_tag_version(cfg.project_dir) or backend_version(cfg)
        raise refuse_bump(cfg.name, tool, current, kind, new, repo_tag_prefix(cfg.project_dir))
