"""The single Rich console. Everything printed goes through here and is masked.

Human output goes to stderr so that `--json` output on stdout stays machine
readable; `emit_json` is the only writer of stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from kestrel_release import secrets


class _MaskingConsole(Console):
    """A Console that masks secrets in every rendered segment."""

    def _render_buffer(self, buffer):  # type: ignore[override]
        return secrets.mask(super()._render_buffer(buffer))


console: Console = _MaskingConsole(stderr=True, highlight=False, soft_wrap=True)
_state = {"verbose": False, "json": False}


def configure(*, verbose: bool | None = None, json_mode: bool | None = None) -> None:
    if verbose is not None:
        _state["verbose"] = verbose
    if json_mode is not None:
        _state["json"] = json_mode


def verbose() -> bool:
    return bool(_state["verbose"])


def json_mode() -> bool:
    return bool(_state["json"])


def info(message: str) -> None:
    console.print(Text(secrets.mask(message)))


def step(message: str) -> None:
    console.print(Text.assemble(("==> ", "bold cyan"), secrets.mask(message)))


def ok(message: str) -> None:
    console.print(Text.assemble(("✓ ", "bold green"), secrets.mask(message)))


def warn(message: str) -> None:
    console.print(Text.assemble(("warning: ", "bold yellow"), secrets.mask(message)))


def debug(message: str) -> None:
    if _state["verbose"]:
        console.print(Text(secrets.mask(message), style="dim"))


def error(message: str) -> None:
    console.print(Text.assemble(("error: ", "bold red"), secrets.mask(message)))


def emit_json(payload: Any) -> None:
    """Print one JSON document on stdout (masked)."""
    text = json.dumps(payload, indent=2, sort_keys=False, default=str)
    sys.stdout.write(secrets.mask(text) + "\n")
    sys.stdout.flush()
