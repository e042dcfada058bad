"""Jinja2 templates (release notes, CI workflow, .pypirc example).

They live in the repository's `templates/` and ship inside the wheel as
`kestrel_release/_templates` (see pyproject's force-include).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def templates_dir() -> Path:
    """The packaged templates, else the checkout's `templates/` (development installs)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_templates"
    return packaged if packaged.is_dir() else here.parent / "templates"


def render(name: str, **context: Any) -> str:
    """Render `templates/<name>` with strict undefined variables (a typo is an error, not a blank)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # markdown and YAML, not HTML
    )
    return env.get_template(name).render(**context)
