"""Shims for differences between the Python versions the tool runs on (3.10+), in one place.

pypa/build keeps its `_compat/` the same way: every other module imports the name from here,
so dropping 3.10 later is a one-file change.
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
