"""Child process: ask a project's PEP 517 backend for its wheel metadata (pypa/build).

Run as `python -m kestrel_release.project._backend_meta_child SRCDIR ISOLATED [PYTHON]`.
It runs the third-party backend (setup.py code), so it is a child with the scrubbed build
environment, never the tool itself. The backend's own output goes to stdout/stderr (the
parent keeps the last lines for an error); the answer is the last line, prefixed with
MARKER, as JSON {"name", "version", "requires_dist", "requires_python"}.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import PackageMetadata
from pathlib import Path
from typing import Literal

MARKER = "KESTREL-METADATA "
FAILED = "KESTREL-FAILED "


def _metadata(srcdir: str, isolated: bool, python: str | None) -> PackageMetadata:
    import pyproject_hooks
    from build import ProjectBuilder
    from build.env import DefaultIsolatedEnv
    from build.util import _project_wheel_metadata

    runner = pyproject_hooks.default_subprocess_runner  # backend output reaches the parent's log
    if not isolated:
        builder = ProjectBuilder(srcdir, python_executable=python or sys.executable, runner=runner)
        return _project_wheel_metadata(builder)
    installer: Literal["uv", "pip"] = "uv" if shutil.which("uv") else "pip"  # uv: seconds instead of tens of seconds
    with DefaultIsolatedEnv(installer=installer) as env:
        builder = ProjectBuilder.from_isolated_env(env, srcdir, runner=runner)
        env.install(builder.build_system_requires)
        env.install(builder.get_requires_for_build("wheel"))
        return _project_wheel_metadata(builder)


def _print_captured(exc: BaseException) -> None:
    """Print what a failed installer said (pypa/build captures it): "no index reachable", not nothing."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, subprocess.CalledProcessError):
            for stream in (seen.stdout, seen.stderr):
                text = stream.decode(errors="replace") if isinstance(stream, bytes) else (stream or "")
                if text.strip():
                    print(text.rstrip(), flush=True)
            return
        seen = seen.__cause__ or seen.__context__


def egg_infos(root: Path) -> list[Path]:
    return [*root.glob("*.egg-info"), *root.glob("*/*.egg-info")]


def main(argv: list[str]) -> int:
    srcdir, isolated = argv[0], argv[1] == "1"
    python = argv[2] if len(argv) > 2 else None
    root = Path(srcdir).resolve()
    before = set(egg_infos(root))
    try:
        meta = _metadata(str(root), isolated, python)
    except Exception as exc:  # any failure of third-party backend code is reported, one line
        # pypa/build wraps the hook's failure; its own output (the real reason) is already above.
        hook = getattr(getattr(exc, "exception", None), "cmd", None)
        _print_captured(exc)
        where = f"in {hook[2]}" if isinstance(hook, list) and len(hook) > 2 else f"{type(exc).__name__}: {exc}"
        print(f"{FAILED}{where}", flush=True)
        return 1
    finally:
        # setuptools leaves NAME.egg-info in the source tree; remove only the ones this run made.
        for made in set(egg_infos(root)) - before:
            shutil.rmtree(made, ignore_errors=True)
    answer = {
        "name": meta["Name"],
        "version": meta["Version"],
        "requires_dist": meta.get_all("Requires-Dist") or [],
        "requires_python": (meta.get_all("Requires-Python") or [None])[0],  # the first, as Message.get
    }
    sys.stdout.flush()
    print(MARKER + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
