"""Entry and exit plumbing around the Typer app in cli.py: every failure becomes its exit code and one line.

Why apart from cli.py: cli.py and commands/ hold the commands (parse, build a config, call one stage, render);
this module holds what happens around any command: SIGTERM as Ctrl-C, global flags anywhere,
KestrelError -> exit code + one `error:` line, --json's failure document, and "internal error" for bugs.
`invoke(argv)` is one invocation in its own run_context (main, the console script, is invoke plus the
process-wide parts: signals, sys.argv, sys.exit); tests call it in-process (tests/helpers.py: run_in_process).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType, ModuleType
from typing import Protocol

from kestrel_release import run_context
from kestrel_release.cli import app
from kestrel_release.errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, KestrelError
from kestrel_release.ui import ci_output, console


class _ClickError(Protocol):
    """A ClickException of click or of typer's own copy of click (two classes: see _click_exceptions)."""

    def format_message(self) -> str: ...


def _sigterm(signum: int, frame: FrameType | None) -> None:  # SIGTERM behaves like Ctrl-C: clean up, exit 130
    raise KeyboardInterrupt


def _click_exceptions() -> ModuleType:
    """Click's exception classes: typer >= 0.20 ships its own copy of click, older ones use click."""
    try:
        from typer._click import exceptions as exc
    except ImportError:  # pragma: no cover - older typer
        from click import exceptions as exc
    return exc


def main() -> None:
    """Console-script entry point: maps every failure to its exit code, one line."""
    run = None
    try:
        signal.signal(signal.SIGTERM, _sigterm)
        sys.argv[1:] = _global_flags_first(sys.argv[1:])
        run = run_context.RunContext(argv=tuple(sys.argv[1:]))
        code = invoke(sys.argv[1:], run)
        # The work is finished (or cleanly stopped): a late signal must not turn it into a kill status.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except KeyboardInterrupt:  # outside the command (a second Ctrl-C while reporting the first failure)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if run is None or run.record.failure is None:  # the one line, unless the command's own failure was already said
            sys.stderr.write(f"error: {_INTERRUPTED}\n")
        code = EXIT_INTERRUPTED
    sys.exit(code)


def invoke(argv: list[str], run: run_context.RunContext | None = None, prog_name: str | None = None) -> int:
    """One invocation of the CLI with `argv` (the arguments after the program name) in its own run context
    (`run`, else a new one): its exit code, after at most one `error:` line and one --json document.
    Installs no signal handler and never exits: callable in-process, from any thread. `prog_name`: the name
    usage lines give the program (default: click's, from sys.argv[0])."""
    args = _global_flags_first(list(argv))
    run = run or run_context.RunContext(argv=tuple(args))
    with run_context.using(run):
        ci_output.install()  # in a CI job, warnings also become annotations (nothing changes elsewhere)
        return _dispatch(args, prog_name)


_GLOBAL_FLAGS = ("-v", "--verbose")


def _global_flags_first(args: list[str]) -> list[str]:
    """`build -v` means what `-v build` means: the global flag moves before the command.

    No command has an option spelled -v/--verbose or one whose value starts with a dash, so a
    bare -v/--verbose anywhere before `--` can only be the global flag."""
    end = args.index("--") if "--" in args else len(args)
    moved = [a for a in args[:end] if a in _GLOBAL_FLAGS]
    return moved + [a for a in args[:end] if a not in _GLOBAL_FLAGS] + args[end:]


def _dispatch(args: list[str], prog_name: str | None) -> int:
    """Run the app; return its exit code after printing at most one `error:` line (and, with
    --json, one JSON document on stdout: the command's, or {"ok": false, "error": {...}})."""
    code = _run_app(args, prog_name)
    run = run_context.current()
    failure = run.record.failure  # what _fail reported, for the --json failure document
    failed = code != EXIT_OK and failure is not None and run.wants_json()
    if failed and not console.json_emitted():
        console.emit_json({"ok": False, "error": failure})
    console.flush_json(failure if failed else None)  # a report followed by a failure carries its error
    return code


def _fail(message: str, code: int, kind: str, hint: str | None = None) -> int:
    run_context.current().record.failure = {"message": message, "hint": hint, "exit_code": code, "kind": kind}
    line = message if hint is None else f"{message} — {hint}"
    console.error(line)
    at, number = ci_output.location(line)  # a quoted compiler error: the annotation points at its file
    ci_output.annotate("error", line, title="kestrel-release", file=at, line=number)  # the line on the run's page
    return code


def _run_app(args: list[str], prog_name: str | None) -> int:
    from typer import Abort, Exit

    click_exc = _click_exceptions()
    try:
        code = app(
            args=args, prog_name=prog_name, standalone_mode=False
        )  # registers only the command args name (cli.py)
        # typer answers a KeyboardInterrupt inside a command by returning 130.
        code = code if isinstance(code, int) else 0
        if code == EXIT_INTERRUPTED:
            return _fail(_INTERRUPTED, code, "interrupted")
        return code
    except KestrelError as exc:
        return _fail(
            " ".join(exc.message.split()), exc.exit_code, exc.kind, " ".join(exc.hint.split()) if exc.hint else None
        )
    except (KeyboardInterrupt, Abort):
        return _fail(_INTERRUPTED, EXIT_INTERRUPTED, "interrupted")
    except Exit as exc:
        if exc.exit_code == EXIT_INTERRUPTED:
            return _fail(_INTERRUPTED, EXIT_INTERRUPTED, "interrupted")
        return exc.exit_code
    except click_exc.NoArgsIsHelpError as exc:  # bare `kestrel-release`: show the help
        sys.stdout.write(exc.format_message() + "\n")
        return EXIT_OK
    except click_exc.ClickException as exc:
        return _fail(_click_message(exc), EXIT_USAGE, "usage", "see --help")
    except OSError as exc:  # disk full, read-only, permissions: one line, not "internal error"
        from kestrel_release.errors import from_os_error

        mapped = from_os_error(exc)
        if mapped is None:
            return _bug(exc)
        return _fail(mapped.message, mapped.exit_code, mapped.kind, mapped.hint)
    except Exception as exc:  # a bug: say so, keep tokens out, traceback only on demand
        if _interrupted(exc):
            return _fail(_INTERRUPTED, EXIT_INTERRUPTED, "interrupted")
        return _bug(exc)


def _interrupted(exc: BaseException) -> bool:
    """A Ctrl-C that Python wrapped in another error: one landing while a class is made (a lazy import of a
    dataclass) becomes "RuntimeError: Error calling __set_name__ ..." with the KeyboardInterrupt as its cause."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


_INTERRUPTED = "interrupted; nothing was left half-written"


def _click_message(exc: _ClickError) -> str:
    """Click's message on one line, each sentence once: typer and click both add "Did you mean"."""
    import re

    seen: list[str] = []
    for sentence in re.split(r"(?<=[.?!])\s+", exc.format_message().replace("\n", " ").strip()):
        if sentence and sentence not in seen:
            seen.append(sentence)
    return " ".join(seen)


def _bug(exc: BaseException) -> int:
    """An unexpected exception: say so, keep tokens out, traceback only on demand."""
    if os.environ.get("KESTREL_RELEASE_DEBUG") == "1":
        import traceback

        console.console.print(traceback.format_exc(), markup=False)
    return _fail(
        f"internal error: {type(exc).__name__}: {exc}",
        EXIT_BUG,
        "internal",
        "set KESTREL_RELEASE_DEBUG=1 for the traceback",
    )
