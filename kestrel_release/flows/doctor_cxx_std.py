"""doctor's row for the C++ standard a torch extension asks for against its build env's torch headers.

The comparison itself is kestrel_release/project/cxx_std.py (build's check before compiling uses it too); this
finds the build env doctor can inspect without installing anything more than its metadata check did.
"""

from __future__ import annotations

from pathlib import Path

from kestrel_release.config.model import Config
from kestrel_release.project import cxx_std


def row(cfg: Config) -> tuple[str, str, str] | None:
    """doctor's row, for the build env the oldest configured Python builds in, once it exists (doctor's
    metadata check makes it for a project without [project]; build compares again before compiling)."""
    from kestrel_release.stages.build_wheels import cuda_tools

    if not cuda_tools.builds_with_torch(cfg.project_dir):
        return None
    want = cxx_std.asked(cfg.project_dir, dict(cfg.build.env))
    if want is None:
        return None
    python = _build_python(cfg)
    found = cxx_std.check(cfg.project_dir, dict(cfg.build.env), python)
    return found or ("ok", f"{want}; no build env with torch yet: build compares them before compiling", "")


def _build_python(cfg: Config) -> Path | None:
    """The existing build env's interpreter (isolation on), or the configured Python itself (off)."""
    from kestrel_release.adapters import pythons
    from kestrel_release.errors import KestrelError
    from kestrel_release.facts import pyversions
    from kestrel_release.project import build_env

    try:
        python = pythons.find_interpreter(min(cfg.python, key=pyversions.sort_key))
        if not cfg.build.isolation:
            return python
        requires = build_env.build_system(cfg.project_dir, cfg.build.requires)["requires"]
        root = build_env.env_dir(python, requires)
    except (KestrelError, OSError, ValueError):
        return None
    return build_env.env_python(root) if (root / build_env.MARKER).is_file() else None
