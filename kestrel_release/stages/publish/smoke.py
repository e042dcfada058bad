"""The smoke test after a publish: install the release from the target index alone, then import it.

One fresh venv per Python (uv, 2-4 at a time); the target index is the only source of the release
itself (uv's and pip's extra sources neutralised), its dependencies come from uv's own configuration.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kestrel_release import console
from kestrel_release.config import Config
from kestrel_release.errors import PublishError


def smoke_test(cfg: Config, simple_url: str, version: str, pythons: list[str]) -> list[dict[str, Any]]:
    """Install NAME==VERSION from `simple_url` alone into a fresh venv per Python and import it.

    Returns one row per Python: {python, ok, detail, interpreter}. Runs 2-4 at a time.
    """
    from kestrel_release.adapters import uv

    console.step(f"smoke test: {cfg.name}=={version} from {simple_url} on Python {', '.join(pythons)}")
    uv.find_uv()  # resolve once, before the threads (see uv.find_uv)
    with ThreadPoolExecutor(max_workers=max(2, min(4, len(pythons)))) as pool:
        return list(
            pool.map(
                lambda py: _smoke_one(cfg.name, version, simple_url, py, _install_deadline(cfg.publish.timeout)),
                pythons,
            )
        )


# Only the target index may serve the install: neutralise uv's and pip's extra sources.
_ISOLATED_ENV = {
    "UV_PYTHON_DOWNLOADS": "never",
    "UV_EXTRA_INDEX_URL": "",
    "UV_FIND_LINKS": "",
    "UV_INDEX": "",
    "UV_DEFAULT_INDEX": "",
    "UV_INDEX_URL": "",
    "UV_NO_CACHE": "1",
    "PIP_CONFIG_FILE": "/dev/null",
}


def _install_deadline(timeout: float) -> float:
    """Whole-install deadline: an index that trickles must not hold the smoke test (10 requests' worth)."""
    return max(120.0, 10 * timeout)


# Run in the smoke venv: import every top-level module the installed distribution provides, then print
# the installed version. The import names come from the distribution itself (top_level.txt, else
# RECORD), never from its project name: MarkupSafe imports as markupsafe, PyYAML as yaml. A module's
# __version__, where it has one, must match (a version file the bump missed); else the metadata's.
_SMOKE_CHILD = """
import importlib, importlib.metadata as md, sys, warnings
dist = md.distribution(sys.argv[1])
names = (dist.read_text("top_level.txt") or "").split()
if not names:
    for f in dist.files or ():
        top = f.parts[0]
        if len(f.parts) == 1 and top.endswith((".py", ".so", ".pyd")):
            names.append(top.split(".")[0])
        elif len(f.parts) == 2 and f.parts[1] == "__init__.py":
            names.append(top)
names = sorted({n for n in names if n.isidentifier() and not n.startswith("__")})
found = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # MarkupSafe 3 deprecates its __version__ but still answers
    for n in names:
        v = getattr(importlib.import_module(n), "__version__", None)
        found += [v] if isinstance(v, str) else []
print(" ".join(names) or "-")
print(found[0] if found else dist.version)
"""


# The installed distribution's Requires-Dist, less those of extras (uv evaluates the other markers).
_REQUIRES_CHILD = """
import importlib.metadata as md, re, sys
for r in md.requires(sys.argv[1]) or ():
    if not re.search(r"\\bextra\\s*==", r):
        print(r)
"""


def _smoke_one(name: str, version: str, simple_url: str, python: str, deadline: float = 600.0) -> dict[str, Any]:
    from kestrel_release import proc, statedir
    from kestrel_release.adapters import pythons, uv
    from kestrel_release.errors import KestrelError

    row: dict[str, Any] = {"python": python, "ok": False, "detail": "", "interpreter": ""}
    with statedir.temp_dir("smoke") as tmp:  # a killed run's venv is collected by the next one
        venv_python = Path(tmp) / "venv" / "bin" / "python"
        try:
            interpreter = pythons.find_interpreter(python)
            row["interpreter"] = str(interpreter)
            uv_bin = uv.find_uv()
            common: dict[str, Any] = {"env": _ISOLATED_ENV, "cwd": tmp, "error": PublishError}
            proc.run(
                uv.venv_command(uv_bin, interpreter, Path(tmp) / "venv", isolated=True),
                what=f"uv venv (Python {python})",
                **common,
            )
            # The release itself from the target index alone; its dependencies from where a user's come
            # from (uv's own configuration: PyPI): a sandbox or TestPyPI rarely holds them (Levenshtein
            # needs rapidfuzz).
            proc.run(
                uv.pip_install_command(uv_bin, venv_python, [f"{name}=={version}"], index_url=simple_url, no_deps=True),
                what=f"install on Python {python} from {simple_url}",
                timeout=deadline,
                **common,
            )
            reqs = proc.run(
                [venv_python, "-I", "-c", _REQUIRES_CHILD, name], what=f"read {name}'s requirements", **common
            ).output.split("\n")
            reqs = [r.strip() for r in reqs if r.strip()]
            if reqs:
                proc.run(
                    uv.pip_install_command(uv_bin, venv_python, reqs),
                    cwd=tmp,
                    error=PublishError,
                    what=f"install {name}'s dependencies on Python {python}",
                    timeout=deadline,
                )
            out = proc.run(
                [venv_python, "-I", "-c", _SMOKE_CHILD, name],
                what=f"import {name}'s modules on Python {python}",
                **common,
            )
        except KestrelError as exc:
            row["detail"] = str(exc)
            return row
    lines = out.output.strip().splitlines()
    module, imported = (lines[-2], lines[-1]) if len(lines) >= 2 else ("-", "")
    row["ok"] = _same_version(imported, version)
    row["detail"] = (
        f"installed and imported {module} {imported}"
        if row["ok"]
        else f"installed {name} reports version {imported!r}, expected {version}"
    )
    return row


def _same_version(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False
