"""What a CI service shows beside the log: folded groups, annotations and a job summary.

The stages call `group`, `annotate` and `summary` wherever they have something a reviewer looks for;
this module alone knows how a CI service wants it. Today that is GitHub Actions (`GITHUB_ACTIONS=true`):
workflow commands (`::group::`, `::error ...::`) on the log and Markdown appended to the file named by
`$GITHUB_STEP_SUMMARY`. Anywhere else every call does nothing, so local output never changes.
Everything written is masked (redact.mask) first: a log, an annotation and a summary are all public.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence

from kestrel_release.ui import console, redact

_lock = threading.Lock()
_warned = {"summary": False}
# A folded build log keeps its last lines: the start of a long compiler log is rarely what failed.
GROUP_LINES = 2000


def active() -> bool:
    """Whether this run is a GitHub Actions job (the runner sets GITHUB_ACTIONS=true in every step)."""
    return os.environ.get("GITHUB_ACTIONS") == "true"


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped so one command stays on one line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (title=, file=): also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def group(name: str, lines: Iterable[str] = ()) -> bool:
    """`lines` folded under `name` in the log (one block: parallel steps never interleave inside it).
    False outside CI: the caller prints its own line then."""
    if not active():
        return False
    body = [redact.mask(line) for line in lines][-GROUP_LINES:]
    block = [f"::group::{escape_data(redact.mask(name))}", *(_neutral(line) for line in body), "::endgroup::"]
    with _lock:
        console.plain("\n".join(block))
    return True


def _neutral(line: str) -> str:
    # A child's own `::` line inside a folded log must not become a command of ours (or end the group).
    return " " + line if line.startswith("::") else line


def annotate(
    level: str, message: str, *, title: str | None = None, file: str | None = None, line: int | None = None
) -> None:
    """An `error`, `warning` or `notice` shown on the run's page, at `file`:`line` where one is known."""
    if not active():
        return
    props = {"title": title, "file": _relative(file) if file else None, "line": str(line) if line else None}
    text = ",".join(f"{k}={escape_property(redact.mask(v))}" for k, v in props.items() if v)
    console.plain(f"::{level}{' ' + text if text else ''}::{escape_data(redact.mask(message))}")


# A compiler's diagnostic quoted in the error line (build's "first error: path:12:5: error: ..."): where the
# annotation points. gcc/clang/nvcc write `path:line:col: error`, nvcc's front end `path(line): error`.
_AT = re.compile(
    r"(?P<file>[^\s:()]+\.[A-Za-z0-9+]+)(?::(?P<line>\d+)(?::\d+)?:|\((?P<pline>\d+)\):) (?:fatal )?error\b"
)


def location(message: str) -> tuple[str | None, int | None]:
    """(file, line) of the first compiler diagnostic `message` quotes, else (None, None)."""
    found = _AT.search(message)
    if found is None:
        return None, None
    return found["file"], int(found["line"] or found["pline"])


def _relative(path: str) -> str:
    """A path under the checkout as the runner links it (relative to GITHUB_WORKSPACE), else as given."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace and os.path.isabs(path):
        rel = os.path.relpath(path, workspace)
        return path if rel.startswith("..") else rel
    return path


def summary(markdown: str) -> None:
    """Append `markdown` to the job summary; an unwritable summary is one warning, never a failure."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not active() or not target:
        return
    try:
        with _lock, open(target, "a", encoding="utf-8") as fh:  # append: other steps wrote theirs before
            fh.write(redact.mask(markdown).rstrip("\n") + "\n\n")
    except OSError as exc:
        if not _warned["summary"]:
            _warned["summary"] = True
            console.warn(f"could not write the job summary {target}: {exc.strerror or exc}")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table; `|` and line breaks in a cell are escaped so a row stays a row."""

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\r", " ").replace("\n", " ") or " "

    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def warning_hook(message: str, file: str | None = None, line: int | None = None) -> None:
    """console.warn's listener: every warning printed is also an annotation."""
    annotate("warning", message, file=file, line=line)


def install() -> None:
    """Make every console warning an annotation too (entry.main calls it once; a no-op outside CI)."""
    if active():
        console.on_warning(warning_hook)
