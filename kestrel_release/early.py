"""The child `verify` forks at start-up, before the CLI is imported, to read the one wheel it names.

Why here, at the top of the package with nothing but os, signal and sys: the fork is only worth it as
early as it can happen. Importing the reader and its checks takes ~0.1 s and the CLI ~0.15 s more; a
child forked before either imports what it needs itself on the second core while this process imports
the CLI, then reads its share of the wheel (stages/verify/part.py: early_answer). The reader asks `take`
for it when it gets to that wheel and uses the answer only where it read what the reader would
(part._take_early); a child nobody asked is killed when the process exits.

This is the one place the tool forks (every other child is a new program: proc.py).
"""

from __future__ import annotations

import os
import signal

TYPE_CHECKING = False  # typing is not loaded this early (mypy reads this name as True)
if TYPE_CHECKING:
    from collections.abc import Callable

_EARLY: dict[str, Forked] = {}  # real path of the wheel -> the child reading it


class Forked:
    """A child forked by `fork_call`: its pid and the read end of the pipe its answer comes on."""

    __slots__ = ("done", "fd", "pid")

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd, self.done = pid, fd, False


def start(args: list[str], answer: Callable[[str, str | None], bytes]) -> None:
    """`verify` of one wheel file, on two cores or more: fork a child that returns `answer(path, --project)`."""
    wheels, project = verify_args(args)
    if len(wheels) != 1 or (os.cpu_count() or 1) < 2:
        return
    path = os.path.realpath(wheels[0])
    child = fork_call(lambda: answer(path, project))
    if child is not None:
        _EARLY[path] = child


def take(path: str) -> Forked | None:
    """The child reading the wheel at real path `path`, once: the reader that takes it collects it."""
    return _EARLY.pop(path, None)


def pending() -> bool:
    """Whether a child is still reading (nobody has taken it yet): the parent can load what it needs later."""
    return bool(_EARLY)


def verify_args(args: list[str]) -> tuple[list[str], str | None]:
    """(the existing .whl files, --project's value) of a `verify` command line; ([], None) for any other."""
    words = [a for a in args if a not in ("-v", "--verbose")]
    if not words or words[0] != "verify":
        return [], None
    end = words.index("--") if "--" in words else len(words)
    wheels, project, options = [], None, words[1:end]
    for at, word in enumerate(options):
        if word.startswith("--project="):
            project = word.split("=", 1)[1]
        elif word == "--project" and at + 1 < len(options):
            project = options[at + 1]
    for word in [w for w in options if not w.startswith("-")] + words[end + 1 :]:
        if word.endswith(".whl") and os.path.isfile(word):
            wheels.append(word)
    return wheels, project


def fork_call(fn: Callable[[], bytes]) -> Forked | None:
    """Run `fn` in a forked copy of this process and take its bytes later with `collect`; None where there is
    no fork (Windows) or it failed. Why fork: a copy starts at once with what is imported, where a new
    interpreter needs ~0.2 s before it does anything. Only call it while this process has one thread (a
    fork copies only the caller's, and any lock another one held stays held in the copy). The copy resets
    SIGINT and SIGTERM (a Ctrl-C ends it at once), writes nothing but its answer (its stdin, stdout and
    stderr are /dev/null) and leaves with os._exit,
    never through this process's code; one not collected is killed when this process exits."""
    if not hasattr(os, "fork"):
        return None
    try:
        rfd, wfd = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:  # the copy
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.close(rfd)
            quiet = os.open(os.devnull, os.O_RDWR)  # whatever it would print, the parent says
            for fd in (0, 1, 2):
                os.dup2(quiet, fd)
            data = fn()
            with os.fdopen(wfd, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    child = Forked(pid, rfd)
    import atexit  # after the fork: the copy never needs it

    atexit.register(_end_fork, child)
    return child


def collect(child: Forked, keep: bool = True) -> bytes | None:
    """The bytes `child` answered (waiting for it), or None when it failed; keep=False kills it instead."""
    if child.done:
        return None
    data: bytes | None = None
    try:
        if keep:
            with os.fdopen(os.dup(child.fd), "rb") as answer:
                data = answer.read()
    finally:
        status = _end_fork(child, kill=not keep)
    return data if status == 0 else None


def end_all() -> None:
    """Kill every child not yet collected: an interrupted process leaves with os._exit, which runs no atexit."""
    for child in list(_EARLY.values()):
        _end_fork(child)
    _EARLY.clear()


def _end_fork(child: Forked, kill: bool = True) -> int | None:
    if child.done:
        return None
    child.done = True
    try:
        if kill:
            os.kill(child.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.close(child.fd)
        return os.waitstatus_to_exitcode(os.waitpid(child.pid, 0)[1])
    except OSError:
        return None
