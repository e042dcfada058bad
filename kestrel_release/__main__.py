"""Entry point (`python -m kestrel_release` and the console script): signals first, then the CLI.

Why here: a Ctrl-C or SIGTERM that lands while the CLI's libraries are still importing must end
as one line and exit 130 like any other interrupt, never as a traceback or a bare kill status.
Only `os`, `signal` and `sys` are imported before the handlers are in place. Then a `--help` or
`--version` answered before is printed from the help cache (helpcache.py) without importing the
CLI; any other request, or any doubt, takes the normal path, which records a help answer for next time.
`verify` of one wheel forks a child that starts reading it before the CLI is imported (early.py).
"""

from __future__ import annotations  # annotations stay strings: nothing more is imported for them

import os
import signal
import sys

EXIT_INTERRUPTED = 130  # errors.EXIT_INTERRUPTED; not imported, to keep this module import-free


def _interrupt(signum: int, frame: object) -> None:  # SIGTERM behaves like Ctrl-C: clean up, exit 130
    raise KeyboardInterrupt


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A signal that lands inside a finalizer (a weakref callback, a __del__ run by the garbage collector) raises
    there, where Python only prints "Exception ignored ... Traceback" and goes on as if nothing happened: the
    interrupt would be lost and a traceback printed. Deliver it again, outside the finalizer."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        # A timer, not a signal sent now: any Python code run here (this hook included) would take the
        # interrupt again inside the hook, where it is "ignored" too; 10 ms later the program is past it.
        if hasattr(signal, "setitimer") and signal.getsignal(signal.SIGINT) is _interrupt:  # not once over (SIG_IGN)
            signal.signal(signal.SIGALRM, _interrupt)
            signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    sys.__unraisablehook__(unraisable)


def _install() -> None:
    sys.unraisablehook = _unraisable
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)  # last: a test's "ready" is this one caught


def main() -> None:
    recorder = None
    try:  # the handlers inside: a Ctrl-C between the two calls is Python's default KeyboardInterrupt, caught below
        _install()
        args = sys.argv[1:]
        from kestrel_release import helpcache

        if helpcache.wanted(args):
            if helpcache.replay(args):
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: a late signal must not become a kill status
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                return
            recorder = helpcache.Recorder(args)
        elif "verify" in args:  # one wheel: a forked child starts reading it now (early.py)
            from kestrel_release import early

            early.start(args, _early_answer)
        with _frozen_imports():
            from kestrel_release.entry import main as cli_main

        try:
            cli_main()
        except SystemExit as exc:
            if recorder is not None and exc.code in (0, None):
                recorder.save()
            raise
    except KeyboardInterrupt:  # landed during the imports, before the CLI's own handling
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stderr.write("error: interrupted; nothing was left half-written\n")
    except SystemExit as exc:
        if exc.code != EXIT_INTERRUPTED:
            exc.code = _settle_stdout(exc.code)
            raise
    # Interrupted, and already reported and cleaned up. Leave with the status as is: CPython turns
    # a KeyboardInterrupt that was raised inside some extension modules' import into a SIGINT
    # self-kill at interpreter exit even when it was handled, which would replace exit 130. Worker
    # threads still running are not waited for (pools.py); a forked reader is killed here.
    forked = sys.modules.get("kestrel_release.early")
    if forked is not None:
        forked.end_all()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(EXIT_INTERRUPTED)


def _settle_stdout(code: str | int | None) -> str | int | None:
    """Flush stdout while a failure can still be reported: at interpreter exit a failed flush (a full disk,
    a closed pipe) prints "Exception ignored" and turns the status into 120. After a failure stdout points
    at /dev/null, so what it still holds goes nowhere; a run that had succeeded says so in one line and
    takes the filesystem's exit code, as when the command itself meets the error."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        return code
    except (OSError, ValueError) as exc:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
        except OSError:
            pass
        if code not in (0, None) or not isinstance(exc, OSError):
            return code
        from kestrel_release.errors import from_os_error

        mapped = from_os_error(exc)
        if mapped is None:  # a reader that went away (EPIPE): nothing to tell it
            return code
        sys.stderr.write(f"error: {mapped.message} — {mapped.hint}\n")
        return mapped.exit_code


class _frozen_imports:  # a class, not contextlib.contextmanager: contextlib is not loaded here yet
    """Importing the CLI makes ~10^5 objects that live as long as the process: no collection passes over
    them while they load, and frozen they are skipped by later collections and at exit (-20 ms of a 0.3 s
    `verify` of a small wheel, measured)."""

    def __enter__(self) -> None:
        import gc

        gc.disable()

    def __exit__(self, *exc: object) -> None:
        import gc

        gc.freeze()
        gc.enable()


def _early_answer(path: str, project: str | None) -> bytes:
    """In early.py's child: its share of the wheel read with the configuration `verify` chooses (commands/verify.py):
    --project, else the project around this directory, else the standalone rules. Any error ends the child,
    and the CLI then reads and reports as usual."""
    from pathlib import Path

    with _frozen_imports():
        from kestrel_release.config_loader.load import discover_project
        from kestrel_release.stages.verify import part
    found = Path(project) if project else discover_project()
    if found is None:
        from kestrel_release.stages.verify import pypi

        return part.early_answer(Path(path), pypi.standalone_config(), False)
    from kestrel_release.config_loader import load as config

    return part.early_answer(Path(path), config.load(found), True)


if __name__ == "__main__":
    main()
