"""git: the commit, its time (for SOURCE_DATE_EPOCH), dirtiness, commits and tags."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kestrel_release import proc
from kestrel_release.errors import UsageError


@dataclass(frozen=True)
class GitState:
    root: Path | None
    commit: str | None
    commit_time: int | None
    dirty: bool
    branch: str | None

    def to_json(self) -> dict:
        return {
            "root": str(self.root) if self.root else None,
            "commit": self.commit,
            "commit_time": self.commit_time,
            "dirty": self.dirty,
            "branch": self.branch,
        }


def _git(cwd: Path, *args: str) -> str | None:
    try:
        result = proc.run(["git", *args], cwd=cwd, check=False)
    except Exception:  # git missing: behave as "not a repository"
        return None
    return result.output.strip() if result.returncode == 0 else None


def state(path: Path) -> GitState:
    """What git says about `path` (all None when it is not in a repository)."""
    root = _git(path, "rev-parse", "--show-toplevel")
    if root is None:
        return GitState(None, None, None, False, None)
    commit = _git(path, "rev-parse", "HEAD")
    when = _git(path, "log", "-1", "--format=%ct")
    porcelain = _git(path, "status", "--porcelain", "--untracked-files=no", "--", ".")
    branch = _git(path, "rev-parse", "--abbrev-ref", "HEAD")
    return GitState(Path(root), commit, int(when) if when and when.isdigit() else None, bool(porcelain), branch)


@dataclass(frozen=True)
class VersionState:
    """What a VCS version (setuptools-scm, hatch-vcs, versioneer...) is computed from, now."""

    root: Path
    commit: str | None  # None: a repository without a commit yet
    branch: str | None  # release-branch schemes read it
    tags: tuple[str, ...]  # every tag as "NAME COMMIT" (annotated tags peeled): a new tag anywhere counts
    dirty: tuple[str, ...]  # tracked files with uncommitted changes, repository-relative

    def tags_at_head(self) -> list[str]:
        return [t.split(" ", 1)[0] for t in self.tags if self.commit and t.endswith(" " + self.commit)]


def version_state(path: Path) -> VersionState | None:
    """The commit, branch, tags and dirty files of the repository holding `path`; None outside git."""
    top = proc.probe(["git", "-C", str(path), "rev-parse", "--show-toplevel"])
    if top is None or top.returncode != 0:
        return None
    head = proc.probe(["git", "-C", str(path), "rev-parse", "-q", "--verify", "HEAD^{commit}"])
    branch = proc.probe(["git", "-C", str(path), "symbolic-ref", "-q", "--short", "HEAD"])
    refs = proc.probe(
        ["git", "-C", str(path), "for-each-ref", "--format=%(refname:short) %(objectname) %(*objectname)", "refs/tags"]
    )
    # The whole repository, as setuptools-scm asks (`git status --porcelain --untracked-files=no`).
    status = proc.probe(
        ["git", "-C", top.output.strip(), "status", "--porcelain", "-z", "--untracked-files=no", "--no-renames"]
    )
    tags = []
    for line in (refs.output if refs and refs.returncode == 0 else "").splitlines():
        name, *shas = line.split()
        if shas:
            tags.append(f"{name} {shas[-1]}")  # the peeled commit of an annotated tag, else the object
    dirty = [e[3:] for e in (status.output if status and status.returncode == 0 else "").split("\0") if len(e) > 3]
    return VersionState(
        Path(top.output.strip()),
        head.output.strip() or None if head and head.returncode == 0 else None,
        branch.output.strip() or None if branch and branch.returncode == 0 else None,
        tuple(sorted(tags)),
        tuple(sorted(dirty)),
    )


def commit_files(path: Path, files: list[Path], message: str) -> None:
    proc.run(["git", "add", "--", *map(str, files)], cwd=path, error=UsageError, what="git add")
    proc.run(
        ["git", "commit", "-q", "-m", message, "--", *map(str, files)], cwd=path, error=UsageError, what="git commit"
    )


def tag(path: Path, name: str, message: str) -> None:
    proc.run(["git", "tag", "-a", name, "-m", message], cwd=path, error=UsageError, what=f"git tag {name}")


def tag_exists(path: Path, name: str) -> bool:
    return _git(path, "rev-parse", "-q", "--verify", f"refs/tags/{name}") is not None


def describe_tag(path: Path) -> str | None:
    """The newest tag reachable from HEAD, as written (v1.2.3); None without one, or without git."""
    out = _git(path, "describe", "--tags", "--abbrev=0")
    return out.splitlines()[-1] if out else None


def history(path: Path) -> tuple[dict[str, list[str]], dict[str, str], str | None]:
    """Every commit of the repository at `path` (sha -> parents), its branch and tag refs
    (annotated tags peeled to their commit), and the current branch; empty when no commits."""
    commits: dict[str, list[str]] = {}
    for line in (_git(path, "rev-list", "--parents", "--all") or "").splitlines():
        sha, *parents = line.split()
        commits[sha] = parents
    refs: dict[str, str] = {}
    listing = _git(path, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)", "refs/heads", "refs/tags")
    for line in (listing or "").splitlines():
        name, *shas = line.split()
        if shas and shas[-1] in commits:
            refs[name] = shas[-1]
    branch = _git(path, "symbolic-ref", "--short", "-q", "HEAD")
    return commits, refs, branch


def ignored(path: Path, names: list[str]) -> set[str] | None:
    """Which of `names` (relative to `path`) git ignores; None when `path` is not in a repository."""
    if _git(path, "rev-parse", "--show-toplevel") is None:
        return None
    result = proc.probe(["git", "-C", str(path), "check-ignore", "--", *names])
    # Exit 1 means none is ignored; stdout lists the ignored ones as given.
    if result is None or result.returncode != 0:
        return set()
    return {line.strip() for line in result.output.splitlines() if line.strip()}


def remote_url(path: Path, name: str = "origin") -> str | None:
    """The URL of a remote (None when there is none or `path` is not in a repository)."""
    return _git(path, "remote", "get-url", name) or None
