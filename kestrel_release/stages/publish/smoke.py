"""The smoke test after a publish: install the release from the target index alone, then import it.

One fresh venv per Python (uv, 2-4 at a time); the target index is the only source of the release
itself (uv's and pip's extra sources neutralised), its dependencies come from uv's own configuration.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kestrel_release import console
from kestrel_release.config import Config
from kestrel_release.errors import PublishError


def smoke_test(cfg: Config, simple_url: str, version: str, pythons: list[str]) -> list[dict[str, Any]]:
    """Install NAME==VERSION from `simple_url` alone into a fresh venv per Python and import it, then
    run `smoke_test.command` there (one Python at a time: it may hold the GPU).

    Returns one row per Python: {python, ok, detail, interpreter, failure, reused, command}. `failure`
    says which part failed: "install" (the release's wheel), "dependency" (a requirement that could not
    be fetched or resolved), "import", "version" or "command". Runs 2-4 at a time.
    """
    from kestrel_release.adapters import uv

    console.step(f"smoke test: {cfg.name}=={version} from {simple_url} on Python {', '.join(pythons)}")
    uv.find_uv()  # resolve once, before the threads (see uv.find_uv)
    with ThreadPoolExecutor(max_workers=max(2, min(4, len(pythons)))) as pool:
        return list(pool.map(lambda py: _smoke_one(cfg, version, simple_url, py), pythons))


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


_command_lock = threading.Lock()


def _smoke_one(cfg: Config, version: str, simple_url: str, python: str) -> dict[str, Any]:
    from kestrel_release import statedir
    from kestrel_release.errors import KestrelError

    row: dict[str, Any] = {
        "python": python,
        "ok": False,
        "detail": "",
        "interpreter": "",
        "failure": None,
        "reused": [],
        "command": None,
    }
    with statedir.temp_dir("smoke") as tmp:  # a killed run's venv is collected by the next one
        try:
            module, imported = _install_and_import(cfg, version, simple_url, python, Path(tmp), row)
        except _Failed as exc:
            row["failure"], row["detail"] = exc.kind, exc.detail
            return row
        except KestrelError as exc:
            row["failure"], row["detail"] = row["failure"] or "install", str(exc)
            return row
        if not _same_version(imported, version):
            row["failure"] = "version"
            row["detail"] = f"installed {cfg.name} reports version {imported!r}, expected {version}"
            return row
        row["detail"] = f"installed and imported {module} {imported}"
        if cfg.smoke_test.command:
            with _command_lock:
                row["command"] = _run_command(cfg, python, Path(tmp))
            if not row["command"]["ok"]:
                row["failure"], row["detail"] = "command", row["command"]["detail"]
                return row
            row["detail"] += f"; {row['command']['detail']}"
    row["ok"] = True
    return row


class _Failed(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def _install_and_import(cfg: Config, version: str, simple_url: str, python: str, tmp: Path, row: dict) -> tuple:
    from kestrel_release import proc
    from kestrel_release.adapters import pythons, uv
    from kestrel_release.stages.publish import smoke_reuse

    name, deadline = cfg.name, _install_deadline(cfg.publish.timeout)
    venv_python = _venv_python(tmp / "venv")
    interpreter = pythons.find_interpreter(python)
    row["interpreter"] = str(interpreter)
    uv_bin = uv.find_uv()
    common: dict[str, Any] = {"env": _ISOLATED_ENV, "cwd": tmp, "error": PublishError}
    proc.run(uv.venv_command(uv_bin, interpreter, tmp / "venv", isolated=True), what=f"uv venv (Python {python})",
             **common)  # fmt: skip
    if cfg.smoke_test.reuse:
        dists = smoke_reuse.host_closure(interpreter, cfg.smoke_test.reuse, tmp)
        row["reused"] = smoke_reuse.expose(tmp / "venv", python, dists)
    # The release itself from the target index alone; its dependencies from where a user's come from
    # (uv's own configuration: PyPI): a sandbox or TestPyPI rarely holds them (Levenshtein needs rapidfuzz).
    own = proc.run(
        uv.pip_install_command(uv_bin, venv_python, [f"{name}=={version}"], index_url=simple_url, no_deps=True),
        timeout=deadline,
        check=False,
        **common,
    )
    if own.returncode != 0:
        kind, why = uv.install_failure(own.output)
        where = "could not be reached" if kind == "unreachable" else "does not install"
        raise _Failed("install", f"{name}=={version} from {simple_url} {where} on Python {python}: {why}")
    reqs = proc.run([venv_python, "-I", "-c", _REQUIRES_CHILD, name], what=f"read {name}'s requirements", **common)
    wanted = [r.strip() for r in reqs.output.split("\n") if r.strip()]
    if wanted:
        deps = proc.run(uv.pip_install_command(uv_bin, venv_python, wanted), cwd=tmp, timeout=deadline, check=False)
        if deps.returncode != 0:
            raise _Failed("dependency", _dependency_detail(name, python, deps.output, cfg.smoke_test.reuse))
    out = proc.run([venv_python, "-I", "-c", _SMOKE_CHILD, name], check=False, **common)
    if out.returncode != 0:
        last = out.output.strip().splitlines()[-1:] or ["no output"]
        raise _Failed("import", f"{name} installed but does not import on Python {python}: {last[0]}")
    lines = out.output.strip().splitlines()
    return (lines[-2], lines[-1]) if len(lines) >= 2 else ("-", "")


def _dependency_detail(name: str, python: str, output: str, reused: tuple[str, ...]) -> str:
    """A requirement that could not be fetched is not a broken wheel: say which and what to do."""
    from kestrel_release.adapters import uv

    kind, why = uv.install_failure(output)
    head = f"{name} installed, but a dependency could not be fetched on Python {python}"
    if kind == "unreachable":
        fix = "the host cannot reach the index: give it access, or let the venv use the host's copy with "
        fix += f"smoke_test.reuse (now {list(reused)})" if reused else 'smoke_test.reuse (e.g. ["torch"])'
        return f"{head}: {why}; {fix}"
    if kind == "unresolvable":
        return f"{head}: no matching distribution: {why}"
    return f"{name} installed, but installing its dependencies failed on Python {python}: {why}"


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run_command(cfg: Config, python: str, tmp: Path) -> dict[str, Any]:
    """`smoke_test.command` in the smoke venv (its bin first on PATH), from an empty dir so the
    project's sources cannot shadow the installed wheel; output to a log kept after the venv goes."""
    import shlex
    import time

    from kestrel_release import proc, statedir
    from kestrel_release.errors import KestrelError

    venv = tmp / "venv"
    venv_python = _venv_python(venv)
    text = cfg.smoke_test.command.replace("{python}", shlex.quote(str(venv_python)))
    text = text.replace("{project}", shlex.quote(str(cfg.project_dir)))
    log = statedir.build_logs(cfg.project_dir) / f"smoke-command-{python}.log"
    bin_dir = venv_python.parent
    env = {"VIRTUAL_ENV": str(venv), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = ["cmd", "/c", text] if os.name == "nt" else ["/bin/sh", "-c", text]
    console.step(f"smoke test: running smoke_test.command on Python {python}")
    started = time.monotonic()
    workdir = tmp / "run"
    workdir.mkdir(exist_ok=True)
    try:
        proc.run_logged(argv, log=log, cwd=workdir, env=env, what=f"smoke_test.command on Python {python}", error=PublishError,
                        show_tail=False)  # fmt: skip
    except KestrelError as exc:
        return {"ok": False, "detail": exc.message, "log": str(log),
                "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    seconds = round(time.monotonic() - started, 1)
    return {"ok": True, "detail": f"smoke_test.command passed in {seconds} s", "log": str(log), "seconds": seconds}


def failure_hint(rows: list[dict[str, Any]], where: str) -> str:
    """What a failed smoke test means, by what failed first: the wheels, a dependency, or the command."""
    kinds = {r.get("failure") for r in rows if not r.get("ok")}
    if kinds <= {"dependency"}:
        return f"the wheels on {where} installed; a dependency of them could not be fetched"
    if kinds <= {"command"}:
        return f"the wheels on {where} installed and imported; smoke_test.command failed: read its log"
    return f"the wheels on {where} do not install/import"


def summary(rows: list[dict[str, Any]], where: str) -> str:
    """One line for a passed smoke test: where from, which Pythons, and the command's result."""
    text = f"installed and imported from {where} on Python {', '.join(str(r.get('python')) for r in rows)}"
    reused = sorted({d for r in rows for d in r.get("reused") or ()})
    if reused:
        text += f" (reusing the host's {', '.join(reused)})"
    ran = [r["command"] for r in rows if r.get("command")]
    if ran:
        text += f"; smoke_test.command passed on {len(ran)} Python(s)"
    return text


def _same_version(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return False
