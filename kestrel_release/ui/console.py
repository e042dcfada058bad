"""The single Rich console. Everything printed goes through here, masked and with control characters escaped.

Human output goes to stderr so that `--json` output on stdout stays machine
readable; `emit_json` and `answer` are the only writers of stdout.

The terminal is an attack surface: a wheel member, a file or a server may name itself `\x1b[2J` (clear the
screen), `\x1b]0;...` (the window title) or `a\nerror: forged`. Every string this module prints has its
control characters (C0, DEL, C1) escaped as Python writes them; `error`, `warn`, `step` and `ok` print one
line (`safe`: newlines escaped too), `info`, `plain`, `debug` and any str printed keep the tool's own line
breaks and tabs. A name put in a table or a multi-line text goes through `safe(name)`. --json escapes through
json.dumps.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kestrel_release import run_context
from kestrel_release.ui import redact
from kestrel_release.ui.sizes import size as size  # re-exported: console.size is the name commands use

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rich.console import Console
    from rich.segment import Segment
    from rich.text import Text as RichText

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(found: re.Match) -> str:
    char = found.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def safe(text: str) -> str:
    """`text` with every control character escaped (`\x1b`, `\n`, `\x9b`): for names from wheels, files and
    servers, shown on one line whatever they hold."""
    return _CONTROL.sub(_escape, text)


def _safe_lines(text: str) -> str:
    """`text` with control characters escaped, its line breaks and tabs kept: the tool's own multi-line text."""
    return _CONTROL_BUT_LINES.sub(_escape, text)


# Width when stderr is not a terminal and COLUMNS is unset: logs and CI get whole table rows.
WIDE = 200


def _make_console() -> Console:
    # Rich is imported on first print, not at import time: `--help` stays fast.
    from rich.console import Console

    class _MaskingConsole(Console):
        """A Console that masks secrets in every rendered segment."""

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            return redact.mask(super()._render_buffer(buffer))

        def render_str(self, text: str, **kwargs: Any) -> RichText:  # every str printed or put in a table cell
            # Masked before the layout too: a table cell wraps, and a secret cut across two lines is in
            # neither line whole, so the rendered buffer's mask above would miss it (a server's reason
            # phrase echoing "Basic <base64>" in publish's table at 80 columns).
            return super().render_str(_safe_lines(redact.mask(text)), **kwargs)

    # Not a terminal (a log, CI, a pipe): rich would wrap tables at 80 columns and draw live
    # progress as fragments; use COLUMNS or a wide default, and no live display (progress users
    # check `live()`).
    width = None if sys.stderr.isatty() or os.environ.get("COLUMNS") else WIDE
    return _MaskingConsole(stderr=True, highlight=False, soft_wrap=True, width=width)


def live() -> bool:
    """Whether live displays (progress bars, spinners) may redraw: only on a terminal."""
    return get_console().is_terminal


def get_console() -> Console:
    """The run's single Rich console (stderr, secret-masking), made on its first print (run_context: each
    invocation its own, sized for the stderr it has then)."""
    record = run_context.current().record
    if record.console is None:
        record.console = _make_console()
    return record.console


def __getattr__(name: str) -> Console:  # `console.console` is created lazily
    if name == "console":
        return get_console()
    raise AttributeError(name)


def Text(*args: Any, **kwargs: Any) -> RichText:  # lazy alias of rich.text.Text (named like the class it stands for)
    from rich.text import Text as _Text

    return _Text(*args, **kwargs)


def _assemble(*parts: str | RichText | tuple[str, str]) -> RichText:
    from rich.text import Text as _Text

    return _Text.assemble(*parts)


def confirm(question: str, *, yes: bool, refused: tuple[str, str], cancelled: tuple[str, str | None]) -> None:
    """Ask `question` (y/N) on the terminal unless `yes`; the one confirmation prompt of every command.

    No terminal to ask on (CI, a pipe) raises UsageError(*refused), a "no" UsageError(*cancelled): both
    exit 2 with one line, before anything was changed."""
    from kestrel_release.errors import UsageError

    if yes:
        return
    if not sys.stdin.isatty():
        raise UsageError(*refused)
    from rich.prompt import Confirm

    if not Confirm.ask(question, console=get_console()):
        raise UsageError(*cancelled)


def configure(*, verbose: bool | None = None, json_mode: bool | None = None) -> None:
    """The run's -v and --json, once parsed (they become fields of its run_context)."""
    changes = {"verbose": verbose, "json": json_mode}
    run_context.configure(**{name: value for name, value in changes.items() if value is not None})


def verbose() -> bool:
    return run_context.current().verbose


def json_mode() -> bool:
    return run_context.current().json


def info(message: str) -> None:
    get_console().print(Text(_safe_lines(redact.mask(message))))


def plain(message: str) -> None:
    """A line meant to be copied (a command): never wrapped, never styled."""
    get_console().print(Text(_safe_lines(redact.mask(message))), soft_wrap=True, markup=False, highlight=False)


def step(message: str) -> None:
    get_console().print(_assemble(("==> ", "bold cyan"), safe(redact.mask(message))))


def ok(message: str) -> None:
    get_console().print(_assemble(("✓ ", "bold green"), safe(redact.mask(message))))


def warn(message: str, *, file: str | None = None, line: int | None = None) -> None:
    """A warning line; `file`/`line`: where it points, for listeners that can link it (ci_output)."""
    get_console().print(_assemble(("warning: ", "bold yellow"), safe(redact.mask(message))))
    for listener in _warning_listeners:
        listener(message, file, line)


_warning_listeners: list[Callable[[str, str | None, int | None], None]] = []


def on_warning(listener: Callable[[str, str | None, int | None], None]) -> None:
    """Call `listener(message, file, line)` after each warning printed (ci_output's annotations)."""
    if listener not in _warning_listeners:
        _warning_listeners.append(listener)


def debug(message: str) -> None:
    if run_context.current().verbose:
        get_console().print(Text(_safe_lines(redact.mask(message)), style="dim"))


def error(message: str) -> None:
    get_console().print(_assemble(("error: ", "bold red"), safe(redact.mask(message))))  # one line, always


def emit_json(payload: Any) -> None:
    """Hand over this run's one JSON document; `flush_json` prints it when the command has ended.

    Held until then because a command may report and then fail (verify, doctor: the report, then
    exit 5 / 3): the document must then carry the failure's `error` object too (README)."""
    record = run_context.current().record
    record.json_emitted = True
    record.pending_json.append(payload)


def flush_json(error: dict[str, Any] | None = None) -> None:
    """Print the held document on stdout (masked); with `error`, as a failure: ok false plus the error."""
    pending = run_context.current().record.pending_json
    if not pending:
        return
    payload = pending.pop()
    pending.clear()
    if error is not None:
        payload = (
            {**payload, "ok": False, "error": error} if isinstance(payload, dict) else {"ok": False, "error": error}
        )
    from kestrel_release.records import documents

    text = json.dumps(documents.stamp(payload), indent=2, sort_keys=False, default=str)
    sys.stdout.write(redact.mask(text) + "\n")
    sys.stdout.flush()


def json_emitted() -> bool:
    """Whether this run already handed over its JSON document (a failure must not add a second one)."""
    return run_context.current().record.json_emitted


def answer(text: str) -> None:
    """The command's answer on stdout, for pipes (`v=$(kestrel-release version)`); masked."""
    sys.stdout.write(redact.mask(text) + "\n")
    sys.stdout.flush()
