"""The files a backend writes into the work tree while building, as .gitignore lines.

setuptools builds in-tree: `build/` (lib, bdist.*, temp.*) and `<name>.egg-info/` (SOURCES.txt rewritten on
every build). Unignored, they show up in `git status` after every build and get committed by `git add -A`;
a release's resume then sees a tree that moved under it. Other backends build in a temporary or
configured directory (scikit-build-core's build-dir lives in the tool's cache), so they need no line.
"""

from __future__ import annotations

import re
from pathlib import Path

_SETUPTOOLS_BUILD = re.compile(r"^(lib|bdist|temp|scripts)([.-].*)?$")  # what setuptools puts under build/


def lines(backend: str, project_dir: Path) -> list[str]:
    """.gitignore lines for `backend`'s in-tree build outputs; none for a backend that writes none."""
    if backend != "setuptools":
        return []
    found = ["*.egg-info/"]
    if _build_dir_is_setuptools(project_dir / "build"):
        found.insert(0, "/build/")
    return found


def _build_dir_is_setuptools(path: Path) -> bool:
    """A build/ holding anything setuptools does not write is the user's own folder: never ignore it."""
    if not path.exists():
        return True
    if not path.is_dir():
        return False
    return all(child.is_dir() and _SETUPTOOLS_BUILD.match(child.name) for child in path.iterdir())
