"""Where the running kestrel-release came from, as a pinned source a CI job can install: `git+https://...@COMMIT`.

The name kestrel-release is on no package index, so a workflow must never install it by name (anyone
could claim the name, and the job runs with the release's permissions). A git commit is content-
addressed: installing that exact commit runs exactly the code that was reviewed. Two ways to know it:
- the package runs from a git checkout (a development or editable install): its origin's https URL and
  HEAD, when HEAD holds the running code (no uncommitted change to it) and a branch of origin contains
  HEAD (pushed, as far as this clone knows);
- it was installed from git (`uv tool install git+https://...@REV`): PEP 610's direct_url.json
  records the URL and the resolved commit.
Anything else (a wheel from a local directory, a checkout without an https origin) is not a source a
CI runner can fetch exactly: `source()` returns None and why.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlparse

from kestrel_release.process import proc

DIST = "kestrel-release"
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # sha1, or sha256 object ids
_SCP = re.compile(r"(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):(?!//)([A-Za-z0-9._/~-]+)")
_SAFE = re.compile(r"[A-Za-z0-9._~/:%+-]+")


def pinned(url: str, commit: str) -> str:
    return f"git+{url}@{commit}"


def problem(source: str) -> str | None:
    """Why `source` is not a pinned, fetchable git source (None: it is one): git+https://HOST/PATH@COMMIT."""
    if not source.startswith("git+https://"):
        return "is not a git+https:// URL"
    url, _, rev = source[len("git+") :].rpartition("@")
    parsed = urlparse(url)
    if not _COMMIT.fullmatch(rev):
        return f"does not end in @<full commit id> ('{rev}' may move; a branch or tag is not a pin)"
    if parsed.username is not None or parsed.password is not None:
        return "carries credentials in the URL (a workflow file is public)"
    if not parsed.hostname or parsed.path in ("", "/") or not _SAFE.fullmatch(url) or parsed.query:
        return "is not a plain https URL of a repository"
    return None


def shown(source: str) -> str:
    """`source` fit to print: any user:password@ before the host is dropped."""
    head, sep, rest = source.partition("://")
    if not sep:
        return source
    netloc, slash, path = rest.partition("/")
    return f"{head}://{netloc.rpartition('@')[2]}{slash}{path}"


def _git(cwd: Path, *args: str) -> str | None:
    try:
        result = proc.run(["git", *args], cwd=cwd, check=False)
    except Exception:  # git missing: nothing to learn from it
        return None
    return result.output.strip() if result.returncode == 0 else None


def https_url(remote: str) -> str | None:
    """The https form of a git remote (scp-like and ssh:// forms too), without userinfo; None for others."""
    remote = remote.strip()
    parsed = urlparse(remote)
    if parsed.scheme in ("https", "ssh", "git+ssh") and parsed.hostname:
        path = parsed.path if parsed.path.startswith("/") else "/" + parsed.path
        # https keeps its port (userinfo dropped: a token in a remote URL never reaches a workflow); ssh's is ssh's
        host = parsed.netloc.rpartition("@")[2] if parsed.scheme == "https" else parsed.hostname
        return f"https://{host}{path}" if path.strip("/") else None
    scp = None if parsed.scheme else _SCP.fullmatch(remote)
    if scp and not Path(remote).exists():
        return f"https://{scp.group(1)}/{scp.group(2).lstrip('/')}"
    return None


def from_checkout(package_dir: Path) -> tuple[str | None, str]:
    """(git+https://...@HEAD, how) when `package_dir` is tracked in a pushed, clean git checkout; else (None, why)."""
    inside = _git(package_dir, "ls-files", "--error-unmatch", "--", "__init__.py")
    if inside is None:
        return None, f"{package_dir} is not tracked by a git checkout"
    root = Path(_git(package_dir, "rev-parse", "--show-toplevel") or package_dir)
    remote = _git(root, "remote", "get-url", "origin")
    if not remote:
        return None, f"its checkout {root} has no remote 'origin'"
    url = https_url(remote)
    if url is None:
        return None, f"the origin of its checkout {root} is not an https (or ssh) URL a CI runner can fetch"
    commit = _git(root, "rev-parse", "HEAD") or ""
    if not _COMMIT.fullmatch(commit):
        return None, f"its checkout {root} has no commit"
    if _git(root, "status", "--porcelain", "--untracked-files=no", "--", str(package_dir)):
        return None, f"its checkout {root} has uncommitted changes to the tool: HEAD is not the code that runs"
    if not _git(root, "for-each-ref", "--contains", commit, "--format=%(refname)", "refs/remotes/origin"):
        return None, f"commit {commit[:12]} of {root} is on no branch of origin: push it first"
    return pinned(url, commit), f"the commit of this tool's checkout ({root})"


def from_install() -> tuple[str | None, str]:
    """(git+https://...@commit, how) from PEP 610's direct_url.json of an install from git; else (None, why)."""
    from importlib import metadata

    try:
        text = metadata.distribution(DIST).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None, f"no installed {DIST} distribution"
    try:
        data = json.loads(text or "null")
    except ValueError:
        data = None
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git":
        return None, "it was not installed from a git repository"
    url, commit = https_url(str(data.get("url", "")).removeprefix("git+")), str(vcs.get("commit_id", ""))
    if url is None or not _COMMIT.fullmatch(commit):
        return None, "its install record names no https repository and commit"
    return pinned(url, commit), "the commit it was installed from (direct_url.json)"


def source() -> tuple[str | None, str]:
    """The pinned source of the running tool and how it is known, or (None, why it is not)."""
    import kestrel_release

    package_dir = Path(kestrel_release.__file__).resolve().parent
    found, why = from_checkout(package_dir)
    if found or "not tracked" not in why:
        return found, why
    found, why_install = from_install()
    return (found, why_install) if found else (None, f"{why}, and {why_install}")
