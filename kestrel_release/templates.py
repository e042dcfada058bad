"""Jinja2 templates (release notes, CI workflow, .pypirc example).

They live in the repository's `templates/` and ship inside the wheel as
`kestrel_release/_templates` (see pyproject's force-include).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


def templates_dir() -> Path:
    """The packaged templates, else the checkout's `templates/` (development installs)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_templates"
    return packaged if packaged.is_dir() else here.parent / "templates"


def environment(search: Iterable[Path] = (), **options: Any) -> jinja2.Environment:
    """The one Jinja2 environment builder: templates from `search` first (a project's own release
    notes), then the packaged ones; a typo'd variable is an error, not a blank (StrictUndefined); files
    keep their last newline; no HTML escaping (markdown and YAML). `options` go to jinja2.Environment
    (ci.py's `[[ ]]` delimiters, since GitHub owns `${{ }}`)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(p) for p in (*search, templates_dir())]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        **options,
    )
