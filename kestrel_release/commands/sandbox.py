"""`sandbox pypi|github`: local stand-ins for a strict PyPI and GitHub, served until Ctrl-C.

The servers are imported inside the commands (fast --help).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kestrel_release.ui import console

sandbox_app = typer.Typer(help="Local stand-ins: a strict PyPI and a GitHub emulator.", no_args_is_help=True)


@sandbox_app.command("pypi")
def sandbox_pypi(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: pick a free one).")] = 0,
    directory: Annotated[Path | None, typer.Option("--dir", help="Packages directory (default: a temp dir).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Enforce PyPI's upload rules.")] = False,
) -> None:
    """Run a real pypiserver on loopback with an htpasswd user, until Ctrl-C."""
    from kestrel_release.files import safepaths
    from kestrel_release.sandbox.pypi import server as pypi

    if directory is not None:  # it receives uploads: never the cwd's project, a parent, or home
        directory = safepaths.check_target(directory, Path.cwd(), "sandbox packages directory", flag="--dir")
    _serve(pypi.serve_forever, port=port, directory=directory, strict=strict)


@sandbox_app.command("github")
def sandbox_github(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: pick a free one).")] = 0,
    repo: Annotated[
        list[str] | None,
        typer.Option("--repo", help="OWNER/NAME to seed (repeatable; default: the project's targets.github.repo)."),
    ] = None,
    token: Annotated[
        str | None, typer.Option("--token", help="Accepted token (default: a random one, printed masked).")
    ] = None,
    immutable_releases: Annotated[
        bool, typer.Option("--immutable-releases", help="Turn on immutable releases for every repository.")
    ] = False,
    git_dir: Annotated[
        Path | None,
        typer.Option("--git", help="Git repository whose history the repositories get (default: the cwd's)."),
    ] = None,
) -> None:
    """Serve a loopback GitHub REST emulator at http://127.0.0.1:PORT/api/v3, until Ctrl-C."""
    from kestrel_release.sandbox.github import emulator as github

    repos, why = (repo, "given with --repo") if repo else _default_github_repo()
    _serve(
        github.serve_forever,
        repos=repos,
        why=why,
        port=port,
        token=token,
        immutable=immutable_releases,
        git_dir=git_dir,
    )


def _check_port(port: int) -> None:
    """UsageError (exit 2) for a --port that cannot be served on 127.0.0.1 (in use, out of range, privileged),
    said before any server starts: their own failures come from deep inside (an internal error)."""
    import errno
    import socket

    from kestrel_release.errors import UsageError

    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number", "pick one from 1024 to 65535, or 0 for a free one")
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: only a listener blocks
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
            raise UsageError(f"--port {port} on 127.0.0.1 {why}", "pick another port, or 0 for a free one") from None


def _default_github_repo() -> tuple[list[str], str]:
    """The repository of the project in the cwd (targets.github.repo, else its git remote 'origin').

    Never a made-up default: publishing to an emulated repository that is not yours proves nothing."""
    from kestrel_release.adapters import git
    from kestrel_release.adapters.github.client import repo_from_remote, target_repo
    from kestrel_release.config_loader import load as config
    from kestrel_release.errors import KestrelError, UsageError

    try:
        repo, source = target_repo(config.load(None))
    except KestrelError:  # no project here: the cwd's own remote may still name it
        repo, source = repo_from_remote(git.remote_url(Path.cwd()) or ""), "git remote 'origin'"
    if not repo:
        raise UsageError(
            "no GitHub repository to emulate: none configured and no github.com remote 'origin'",
            "pass --repo OWNER/NAME, or set [tool.kestrel-release.targets.github] repo",
        )
    return [repo], f"from {source}"


def _serve(serve_forever: Callable[..., object], **options: Any) -> None:
    """Ctrl-C (or SIGTERM) is how a user stops a sandbox: a clean stop, exit 0."""
    _check_port(options.get("port") or 0)
    try:
        serve_forever(**options)
    except KeyboardInterrupt:
        console.ok("stopped")


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")
