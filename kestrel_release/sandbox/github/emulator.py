"""A loopback GitHub REST emulator for rehearsals and tests (stdlib http.server, no deps).

    with GithubEmulator(repos=("m87-labs/kestrel",)) as gh:
        Github(base_url=gh.api_url, auth=Auth.Token(gh.token))  # PyGithub talks to it

The API is at http://127.0.0.1:PORT/api/v3 and uploads at /api/uploads on the same port
(GitHub Enterprise layout; PyGithub refuses upload URLs on another port). Test hooks
inject the failures a rolling release must survive: a 502 leaving a `starter` asset, a
connection dropped after the asset landed, a rate-limit 403/429, immutable releases, another
publisher creating the same release just before ours (`release_race`: a 422 already_exists).
Uploads that are not what their answer says: acknowledged but never stored (`upload_discard`),
stored only `delay` seconds later (`upload_delay`), stored with other bytes than were sent and a
truthful digest (`upload_rewrite`). Answers that point elsewhere: release JSON whose upload_url is
on `origin` (`foreign_upload_url`), GETs of releases answered with a redirect (`redirect_get`, to
the same origin's `/api/v3/_moved/...` alias, or to `origin`).
The same hooks are reachable over HTTP at POST /_emulator/fault {"kind": ..., "count": ...} and
POST /_emulator/clear.
"""

from __future__ import annotations

import copy
import secrets as _random
import string
from collections.abc import Callable, Sequence
from pathlib import Path

from kestrel_release.sandbox.github.server import FAULTS as FAULTS
from kestrel_release.sandbox.github.server import Core, Server
from kestrel_release.sandbox.github.state import Asset, Release, State
from kestrel_release.ui import redact


def random_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(_random.choice(alphabet) for _ in range(36))


class GithubEmulator:
    """Context manager: `__enter__` starts the server (ready on return), `__exit__` stops it."""

    def __init__(self, repos: Sequence[str] = ("m87-labs/kestrel",), token: str | None = None, port: int = 0) -> None:
        self.token: str = token or random_token()
        redact.register(self.token)
        self._core = Core(repos, self.token)
        self._port = port
        self._server: Server | None = None

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> GithubEmulator:
        self._server = Server(self._port, self._core, self)
        self._port = self._server.server_address[1]
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> GithubEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v3"

    @property
    def state(self) -> State:
        """The live State (repos, releases, assets); hold `state.lock` to read it consistently."""
        return self._core.state

    # -- fault injection --------------------------------------------------------
    def inject(
        self,
        kind: str,
        count: int = 1,
        status: int | None = None,
        reset_in: float = 1.0,
        retry_after: float | str | None = None,
        reset_header: str | None = None,
        delay: float = 30.0,
        origin: str | None = None,
    ) -> None:
        """Queue a fault for the next `count` matching requests (kinds: FAULTS). `retry_after` and
        `reset_header` are sent as given (a hostile server's "-5" or "soon"); `delay`: seconds an
        `upload_delay` asset waits before it is stored; `origin`: where `foreign_upload_url` and
        `redirect_get` point (scheme://host:port; a redirect without one stays on this origin)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; one of {', '.join(FAULTS)}")
        if kind == "foreign_upload_url" and not origin:
            raise ValueError("foreign_upload_url needs an origin (scheme://host:port)")
        default = {"upload_fail": 502, "rate_limit": 403, "redirect_get": 302}.get(kind)
        with self.state.lock:
            self._core.faults[kind].append(
                {
                    "count": count,
                    "status": status or default,
                    "reset_in": reset_in,
                    "retry_after": retry_after,
                    "reset_header": reset_header,
                    "delay": float(delay),
                    "origin": (origin or "").rstrip("/") or None,
                }
            )

    def fail_next_upload(self, status: int = 502, count: int = 1) -> None:
        self.inject("upload_fail", count=count, status=status)

    def drop_next_upload(self, count: int = 1) -> None:
        self.inject("upload_drop", count=count)

    def rate_limit_next(
        self,
        reset_in: float = 1.0,
        status: int = 403,
        retry_after: float | str | None = None,
        count: int = 1,
        reset_header: str | None = None,
    ) -> None:
        self.inject(
            "rate_limit",
            count=count,
            status=status,
            reset_in=reset_in,
            retry_after=retry_after,
            reset_header=reset_header,
        )

    def discard_next_upload(self, count: int = 1) -> None:
        """The next uploads are answered 201 with their asset, but never stored."""
        self.inject("upload_discard", count=count)

    def delay_next_upload(self, seconds: float, count: int = 1) -> None:
        """The next uploads are answered 201 at once and stored `seconds` later."""
        self.inject("upload_delay", count=count, delay=seconds)

    def rewrite_next_upload(self, count: int = 1) -> None:
        """The next uploads store other bytes than were sent (the answer's size and digest are theirs)."""
        self.inject("upload_rewrite", count=count)

    def race_next_release(self, count: int = 1) -> None:
        """The next release creation finds the tag taken: another publisher's draft lands just before."""
        self.inject("release_race", count=count)

    def before_request(self, method: str, path_part: str, fn: Callable[[], object], count: int = 1) -> None:
        """Run `fn` in the server when each of the next `count` `method` requests whose path holds
        `path_part` arrives, before it is answered: a test changes the client's world between two of
        its steps (a file rewritten while the client waits for its release)."""
        with self.state.lock:
            self._core.hooks.append({"method": method, "part": path_part, "fn": fn, "count": count})

    def clear_faults(self) -> None:
        with self.state.lock:
            for queue in self._core.faults.values():
                queue.clear()
            self._core.hooks.clear()

    def enable_immutable_releases(self, repo: str, enabled: bool = True) -> None:
        with self.state.lock:
            self.state.repo(repo).immutable_releases = enabled

    def push_history(self, repo: str, git_dir: Path) -> int:
        """Give `repo` every commit, branch and tag of the git repository at `git_dir`
        (as if pushed); returns the number of commits (0: none, the seeded history stays)."""
        from kestrel_release.adapters import git

        commits, refs, branch = git.history(git_dir)
        if commits:
            self.state.import_history(repo, commits, refs, branch)
        return len(commits)

    # -- seeding and inspection ---------------------------------------------------
    def add_commit(
        self, repo: str, sha: str | None = None, parents: list[str] | None = None, branch: str | None = "main"
    ) -> str:
        """A new commit on `branch` (as if pushed); returns its sha."""
        return self.state.add_commit(repo, sha, parents, branch)

    def head(self, repo: str, branch: str = "main") -> str:
        with self.state.lock:
            return self.state.repo(repo).refs[f"refs/heads/{branch}"]

    def add_release(
        self,
        repo: str,
        tag: str,
        *,
        name: str | None = None,
        body: str | None = None,
        draft: bool = False,
        prerelease: bool = False,
        target: str | None = None,
    ) -> Release:
        with self.state.lock:
            r = self.state.repo(repo)
            return self.state.create_release(
                r,
                {
                    "tag_name": tag,
                    "name": name,
                    "body": body,
                    "draft": draft,
                    "prerelease": prerelease,
                    "target_commitish": target or "main",
                },
            )

    def add_asset(self, repo: str, tag: str, name: str, data: bytes = b"", state: str = "uploaded") -> Asset:
        with self.state.lock:
            return self.state.upload(self.release(repo, tag), name, "", "application/octet-stream", data, state)

    def release(self, repo: str, tag: str) -> Release:
        """The release for `tag`, drafts included (KeyError if none)."""
        with self.state.lock:
            for rel in self.state.repo(repo).releases.values():
                if rel.tag_name == tag:
                    return rel
        raise KeyError(tag)

    def assets(self, repo: str, tag: str) -> dict[str, Asset]:
        with self.state.lock:
            return {a.name: a for a in self.state.release_assets(self.release(repo, tag))}

    def tag_sha(self, repo: str, tag: str) -> str | None:
        with self.state.lock:
            return self.state.repo(repo).refs.get(f"refs/tags/{tag}")

    def requests(self) -> list[dict]:
        """Every request received so far: method, path, headers, body (text), status."""
        with self.state.lock:
            return copy.deepcopy(self._core.log)

    def snapshot(self) -> dict:
        with self.state.lock:
            return {
                name: {
                    "refs": dict(r.refs),
                    "immutable_releases": r.immutable_releases,
                    "releases": [
                        {
                            "id": rel.id,
                            "tag_name": rel.tag_name,
                            "draft": rel.draft,
                            "prerelease": rel.prerelease,
                            "immutable": rel.immutable,
                            "assets": [
                                {"name": a.name, "state": a.state, "size": len(a.data)}
                                for a in self.state.release_assets(rel)
                            ],
                        }
                        for rel in r.releases.values()
                    ],
                }
                for name, r in self.state.repos.items()
            }


def serve_forever(
    repos: Sequence[str],
    why: str,
    port: int = 0,
    token: str | None = None,
    immutable: bool = False,
    git_dir: Path | None = None,
) -> None:
    """`kestrel-release sandbox github`: serve until Ctrl-C; the token goes to a 0600 file.

    Each repository gets the git history of `git_dir` (default: the cwd's repository), so
    the printed publish command finds the commit the wheels were built from."""
    import shlex
    import time

    from kestrel_release.errors import UsageError
    from kestrel_release.files import statedir
    from kestrel_release.files.fsutil import atomic_write_text
    from kestrel_release.ui import console

    # The token file lives in a private session dir of the tool's state dir, removed on exit.
    with statedir.session("github") as session, GithubEmulator(repos=tuple(repos), token=token, port=port) as gh:
        source = Path(git_dir or Path.cwd()).resolve()
        for name in repos:
            pushed = gh.push_history(name, source)
            gh.enable_immutable_releases(name, immutable)
        if git_dir is not None and not pushed:
            raise UsageError(
                f"--git {git_dir}: no git repository with commits there",
                "pass the directory of a git checkout (or leave --git out to use the cwd's)",
            )
        token_file = session / "token"
        atomic_write_text(token_file, gh.token + "\n", mode=0o600)
        mode = ", immutable releases" if immutable else ""
        console.ok(f"GitHub emulator at {gh.api_url} (repos: {', '.join(repos)}, {why}{mode})")
        console.info(
            f"git history: {pushed} commit(s) of {source}"
            if pushed
            else f"git history: none ({source} is not a git repository with commits)"
        )
        console.info("publish with:")
        console.plain(f'export GH_TOKEN="$(cat {shlex.quote(str(token_file))})"')
        console.plain(f"kestrel-release publish --target github --api-url {gh.api_url} --repo {shlex.quote(repos[0])}")
        while True:  # until Ctrl-C/SIGTERM; sleep (unlike a bare lock wait) lets the signal handler run
            time.sleep(3600)
