"""git: the commit, its time (for SOURCE_DATE_EPOCH), dirtiness, commits and tags."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kestrel_release.errors import UsageError
from kestrel_release.process import proc


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


def describe_long(path: Path) -> str | None:
    """`git describe --tags --long` (v1.2.3-0-gabc1234: tag, distance, commit), as setuptools-scm asks."""
    return _git(path, "describe", "--tags", "--long")


def tag_names(path: Path) -> list[str]:
    """Every tag, newest first (by the date of the tag or its commit); [] outside git."""
    out = _git(path, "for-each-ref", "--sort=-creatordate", "--format=%(refname:short)", "refs/tags")
    return out.splitlines() if out else []


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
    from kestrel_release.ui import redact

    url = _git(path, "remote", "get-url", name) or None
    redact.register_urls(url)  # https://x-access-token:TOKEN@github.com/...: masked from here on
    return url


@dataclass(frozen=True)
class SourceFiles:
    """What a fresh clone holds under a project dir, and what the user added beside it."""

    prefix: str  # the project's place in the work tree ("" at its root, else "sub/dir/")
    tracked: list[str]  # index entries (submodules' files included), relative to the project
    untracked: list[str]  # untracked files git does not ignore ("dir/" for a nested repository)
    above: list[str] = field(default_factory=list)  # the repository's tracked files outside the project, from its root


def _listing(cwd: Path, *args: str) -> list[str] | None:
    try:
        result = proc.run(["git", *args], cwd=cwd, check=False)
    except Exception:  # git missing: behave as "not a repository"
        return None
    if result.returncode != 0:
        return None
    return [name for name in result.output.split("\0") if name]


def source_files(path: Path) -> SourceFiles | None:
    """The files under `path` a clean build starts from; None when `path` is not in a git work tree."""
    prefix = _git(path, "rev-parse", "--show-prefix")
    if prefix is None:
        return None
    tracked = _listing(path, "ls-files", "-z", "--cached", "--recurse-submodules")
    untracked = _listing(path, "ls-files", "-z", "--others", "--exclude-standard")
    if tracked is None or untracked is None:
        return None
    above: list[str] = []
    root = _git(path, "rev-parse", "--show-toplevel") if prefix else None
    if root:  # a project in a subdirectory: its build may read ../README.md
        everything = _listing(Path(root), "ls-files", "-z", "--cached", "--recurse-submodules") or []
        above = [f for f in everything if not f.startswith(prefix)]
    return SourceFiles(prefix, tracked, untracked, above)


def ignored_files(path: Path) -> list[str]:
    """The files under `path` git ignores (relative to it; empty outside a repository)."""
    return _listing(path, "ls-files", "-z", "--others", "--ignored", "--exclude-standard") or []


def dissociate(dest: Path) -> None:
    """Give a shadow repository (`shadow`) its own copy of the objects it borrows: a build in a
    container or chroot sees only the copy, not the user's repository the alternates name."""
    from kestrel_release.errors import BuildError

    alternates = dest / ".git" / "objects" / "info" / "alternates"
    if not alternates.exists():
        return
    proc.run(["git", "repack", "-a", "-d", "-q"], cwd=dest, error=BuildError, what="git repack (clean source copy)")
    alternates.unlink()


def shadow(path: Path, dest: Path) -> None:
    """Make `dest` a private repository that answers like the one holding `path` once `path`'s files
    are copied to dest/<prefix>: same HEAD (branch or detached), branches and tags, the objects
    borrowed (alternates, nothing copied), an index of HEAD. The rest of the work tree is marked
    skip-worktree, so a project in a subdirectory does not read as a deletion of everything else;
    `git describe --dirty` and `git status` then see exactly the user's changes."""
    from kestrel_release.errors import BuildError

    def ask(*args: str) -> str | None:
        return _git(path, *args)

    common = ask("rev-parse", "--git-common-dir")
    shallow = ask("rev-parse", "--git-path", "shallow")
    if common is None or shallow is None:
        raise BuildError(f"git cannot describe the repository of {path}", "run `git status` there to see why")
    common_dir = (path / common).resolve()
    proc.run(["git", "init", "-q", "--template=", str(dest)], error=BuildError, what="git init (clean source copy)")
    meta = dest / ".git"
    (meta / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (meta / "objects" / "info" / "alternates").write_text(f"{common_dir / 'objects'}\n", encoding="utf-8")
    refs = ask("for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags") or ""
    (meta / "packed-refs").write_text(refs + "\n" if refs else "", encoding="utf-8")
    branch, head = ask("symbolic-ref", "-q", "HEAD"), ask("rev-parse", "-q", "--verify", "HEAD")
    (meta / "HEAD").write_text(f"ref: {branch}\n" if branch else f"{head}\n", encoding="utf-8")
    if (path / shallow).is_file():  # a shallow CI checkout: history stops where the user's does
        (meta / "shallow").write_bytes((path / shallow).read_bytes())
    if (common_dir / "info" / "exclude").is_file():
        (meta / "info").mkdir(exist_ok=True)
        (meta / "info" / "exclude").write_bytes((common_dir / "info" / "exclude").read_bytes())
    if head is None:  # no commit yet: an empty index, like the user's
        return
    proc.run(["git", "read-tree", "HEAD"], cwd=dest, error=BuildError, what="git read-tree (clean source copy)")
    prefix = ask("rev-parse", "--show-prefix") or ""
    if prefix:
        outside = [p for p in _listing(dest, "ls-files", "-z") or [] if not p.startswith(prefix)]
        if outside:
            proc.run(
                ["git", "update-index", "-z", "--skip-worktree", "--stdin"],
                cwd=dest,
                input="\0".join(outside).encode() + b"\0",
                error=BuildError,
                what="git update-index (clean source copy)",
            )
