"""The smoke test after a publish: install the release from the index it was uploaded to, then import it.

One fresh venv per Python (uv, 2-4 at a time). The upload's index is the only source of the release
itself (uv's and pip's extra sources neutralised), read with the upload's credentials: an index that
needs them to read gets them through the child's environment (never argv, never printed). Its
dependencies come from uv's own configuration. A failure says what really failed (smoke_explain.py):
the index refused or lacks the version, no wheel fits, a dependency cannot be fetched, a module fails
to import (which, and why), or a version is wrong.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kestrel_release.config.model import Config
from kestrel_release.errors import PublishError
from kestrel_release.process import pools
from kestrel_release.ui import console

if TYPE_CHECKING:
    from kestrel_release.stages.publish import smoke_reuse
from kestrel_release.stages.publish import smoke_explain

# The package's own fault: only a new version gets past it (its files on the index can never be replaced).
PACKAGE_FAULTS = frozenset({"no-wheel", "install", "import", "version"})


class SmokeTestError(PublishError):
    """A failed smoke test; `kind` is the first failing Python's `failure`."""

    def __init__(self, message: str, hint: str | None, target: str, kind: str) -> None:
        super().__init__(message, hint)
        self.target, self.kind = target, kind

    @property
    def package_fault(self) -> bool:
        return self.kind in PACKAGE_FAULTS


def smoke_test(
    cfg: Config, simple_url: str, version: str, pythons: list[str], credentials: tuple[str, str] | None = None
) -> list[dict[str, Any]]:
    """Install NAME==VERSION from `simple_url` alone into a fresh venv per Python and import it, then
    run `smoke_test.command` there (one Python at a time: it may hold the GPU).

    Returns one row per Python: {python, ok, detail, interpreter, failure, reused, command}. `failure`
    says which part failed: the index ("auth", "missing", "unreachable"), the release's wheel ("no-wheel",
    "install"), "dependency" (a requirement that could not be fetched or resolved), "import", "version",
    "command", or the machine ("environment"). Runs 2-4 at a time.
    """
    from kestrel_release.adapters import uv
    from kestrel_release.project import meta as project_meta

    cfg = project_meta.resolve(cfg)  # it installs the project by name
    if not simple_url:  # never "from None": uv would fall back to its default index (another release)
        raise PublishError(f"no index to smoke-test {cfg.name} {version} from", "pass the index's simple URL")
    console.step(f"smoke test: {cfg.name}=={version} from {simple_url} on Python {', '.join(pythons)}")
    uv.find_uv()  # resolve once, before the threads (see uv.find_uv)
    env = {**_ISOLATED_ENV, **uv.index_env(simple_url, credentials)}
    with pools.threads(max(2, min(4, len(pythons)))) as pool:
        return list(pool.map(lambda py: _smoke_one(cfg, version, simple_url, py, env, bool(credentials)), pythons))


# Only the target index may serve the install: neutralise uv's and pip's extra sources.
_ISOLATED_ENV = {
    "UV_PYTHON_DOWNLOADS": "never",
    "COLUMNS": "4096",  # uv wraps its errors at COLUMNS: smoke_explain matches them by phrase, unwrapped
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


# Run in the smoke venv: import every top-level module the installed distribution provides and report,
# as one JSON line, the installed version, each module's __version__ and file, or the first import's
# failure. The import names come from the distribution itself (top_level.txt, else RECORD), never from
# its project name: MarkupSafe imports as markupsafe, PyYAML as yaml. A line before each import names
# it, so a crash (a segfault in an extension) still says which module.
_SMOKE_CHILD = """
import importlib, importlib.metadata as md, json, sys, traceback, warnings
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
report = {"dist_version": dist.version, "modules": names, "versions": {}, "error": None}
first = sys.argv[2:]  # what its users import first (torch, for binaries that link it)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # MarkupSafe 3 deprecates its __version__ but still answers
    for n in first + [n for n in names if n not in first]:
        print("KESTREL-SMOKE-IMPORT " + n, flush=True)
        try:
            module = importlib.import_module(n)
        except BaseException as exc:
            tb = traceback.extract_tb(exc.__traceback__)
            where = f"{tb[-1].filename.split('site-packages/')[-1]}:{tb[-1].lineno}" if len(tb) > 1 else ""
            report["error"] = {"module": n, "type": type(exc).__name__, "message": str(exc), "where": where}
            break
        if n not in names:
            continue
        v = getattr(module, "__version__", None)
        if isinstance(v, str):
            report["versions"][n] = [v, (getattr(module, "__file__", "") or "").split("site-packages/")[-1]]
print("KESTREL-SMOKE " + json.dumps(report))
"""


# The installed distribution's Requires-Dist, less those of extras (uv evaluates the other markers).
_REQUIRES_CHILD = """
import importlib.metadata as md, re, sys
for r in md.requires(sys.argv[1]) or ():
    if not re.search(r"\\bextra\\s*==", r):
        print(r)
"""


_command_lock = threading.Lock()


def _smoke_one(
    cfg: Config, version: str, simple_url: str, python: str, env: dict[str, str], credentials: bool = False
) -> dict[str, Any]:
    from kestrel_release.errors import KestrelError
    from kestrel_release.files import statedir

    row: dict[str, Any] = {
        "python": python,
        "ok": False,
        "detail": "",
        "interpreter": "",
        "failure": None,
        "reused": [],
        "undeclared": None,
        "command": None,
    }
    with statedir.temp_dir("smoke") as tmp:  # a killed run's venv is collected by the next one
        try:
            report = _install_and_import(cfg, version, simple_url, python, Path(tmp), row, env, credentials)
            wrong = smoke_explain.version_mismatch(report, cfg.name, version)
            if wrong:
                raise _Failed(*wrong)
        except _Failed as exc:
            row["failure"], row["detail"] = exc.kind, exc.detail
            return row
        except KestrelError as exc:  # no interpreter, no venv, a deadline: the machine, not the package
            row["failure"], row["detail"] = row["failure"] or "environment", str(exc)
            return row
        said = [v[0] for v in (report.get("versions") or {}).values()] or [report.get("dist_version", "")]
        row["detail"] = f"installed and imported {' '.join(report.get('modules') or ['-'])} {said[0]}"
        if row.get("undeclared"):
            row["detail"] += (
                f" with {row['undeclared']} installed first (its binaries link torch; it does not require it)"
            )
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


def _install_and_import(
    cfg: Config, version: str, simple_url: str, python: str, tmp: Path, row: dict, env: dict, credentials: bool
) -> dict[str, Any]:
    from kestrel_release.adapters import pythons, uv
    from kestrel_release.process import proc
    from kestrel_release.stages.publish import smoke_reuse, smoke_torch

    name, deadline = cfg.name, _install_deadline(cfg.publish.timeout)
    venv_python = _venv_python(tmp / "venv")
    interpreter = pythons.find_interpreter(python)
    row["interpreter"] = str(interpreter)
    uv_bin = uv.find_uv()
    common: dict[str, Any] = {"env": env, "cwd": tmp, "error": PublishError}
    proc.run(uv.venv_command(uv_bin, interpreter, tmp / "venv", isolated=True), what=f"uv venv (Python {python})",
             **common)  # fmt: skip
    closure = smoke_reuse.host_closure(interpreter, cfg.smoke_test.reuse, tmp) if cfg.smoke_test.reuse else None
    if closure is not None:
        row["reused"] = smoke_reuse.expose(tmp / "venv", python, closure.dists)
    # The release itself from the target index alone; its dependencies from where a user's come from
    # (uv's own configuration: PyPI): a sandbox or TestPyPI rarely holds them (Levenshtein needs rapidfuzz).
    own = proc.run(
        uv.pip_install_command(uv_bin, venv_python, [f"{name}=={version}"], isolated=True, no_deps=True),
        timeout=deadline,
        check=False,
        **common,
    )
    if own.returncode != 0:
        raise _Failed(*smoke_explain.install_failure(own.output, name, version, python, simple_url, credentials))
    reqs = proc.run([venv_python, "-I", "-c", _REQUIRES_CHILD, name], what=f"read {name}'s requirements", **common)
    wanted = [r.strip() for r in reqs.output.split("\n") if r.strip()]
    read = functools.cache(lambda *argv: proc.run(list(argv), what=f"read {name}'s libraries", **common).output)
    undeclared = smoke_torch.missing_torch(cfg, venv_python, name, wanted, lambda argv: read(*argv))
    if undeclared:  # what its users must install first: said in the row, never added to the wheel
        wanted.append(undeclared)
        row["undeclared"] = undeclared
    if wanted:
        deps = proc.run(uv.pip_install_command(uv_bin, venv_python, wanted), cwd=tmp, timeout=deadline, check=False)
        if deps.returncode != 0:
            raise _Failed("dependency", _dependency_detail(name, python, deps.output, cfg.smoke_test.reuse, closure))
    first = smoke_torch.imported_first(venv_python, name, lambda argv: read(*argv))
    out = proc.run([venv_python, "-I", "-c", _SMOKE_CHILD, name, *first], check=False, **common)
    return _import_report(out.output, out.returncode, name, python)


def _import_report(output: str, code: int, name: str, python: str) -> dict[str, Any]:
    """The import child's JSON report, or _Failed naming the module it was importing when it failed or died."""
    lines = output.strip().splitlines()
    found = next((ln.split(" ", 1)[1] for ln in reversed(lines) if ln.startswith("KESTREL-SMOKE ")), None)
    if found is None:
        module = next((ln.split(" ", 1)[1] for ln in reversed(lines) if ln.startswith("KESTREL-SMOKE-IMPORT ")), "?")
        tail = " | ".join(ln for ln in lines[-3:] if not ln.startswith("KESTREL-SMOKE"))
        raise _Failed(
            "import", f"`import {module}` killed Python {python} (exit code {code}){': ' + tail if tail else ''}"
        )
    report = json.loads(found)
    if report.get("error"):
        raise _Failed(*smoke_explain.import_failure(report, name, python))
    return report


def _dependency_detail(
    name: str, python: str, output: str, reused: tuple[str, ...], closure: smoke_reuse.Closure | None = None
) -> str:
    """A requirement that could not be fetched is not a broken wheel: say which and what to do. With
    smoke_test.reuse set, the fix is never that setting again: it names what the host lacks."""
    from kestrel_release.adapters import uv

    kind, why = uv.install_failure(output)
    head = f"{name} installed, but a dependency could not be fetched on Python {python}"
    if kind == "unreachable":
        return f"{head}: {why}; {_offline_fix(why, reused, closure)}"
    if kind == "unresolvable":
        return f"{head}: no matching distribution: {why}"
    return f"{name} installed, but installing its dependencies failed on Python {python}: {why}"


def _offline_fix(why: str, reused: tuple[str, ...], closure: smoke_reuse.Closure | None) -> str:
    """What to do when the index cannot be reached: the setting when it is not set (or does not name the
    package fetched), else what the host lacks of what the reused packages require."""
    import re

    from kestrel_release.stages.publish import smoke_reuse

    fetched = re.search(r"/simple/([^/\s]+)/", why)
    wanted = smoke_reuse.norm(fetched.group(1)) if fetched else ""
    named = {smoke_reuse.norm(n) for n in reused}
    if not reused:
        return 'the host cannot reach the index: give it access, or let the venv use the host\'s copy with smoke_test.reuse (e.g. ["torch"])'
    lacking = closure.lacking() if closure is not None else ""
    if lacking:
        return f"the host lacks what its reused packages require: {lacking}; install that on the host (offline: from a wheel) or give the host access to the index"
    if (
        wanted
        and wanted not in named
        and closure is not None
        and wanted not in {smoke_reuse.norm(d["name"]) for d in closure.dists}
    ):
        return f"{wanted} is not among the host's packages that smoke_test.reuse exposes ({', '.join(reused)} and what they require): install it on the host and add it to smoke_test.reuse, or give the host access to the index"
    return f"the host's copy of {wanted or 'a reused package'} does not satisfy the release's requirement (check its version against the release's Requires-Dist), or give the host access to the index"


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run_command(cfg: Config, python: str, tmp: Path) -> dict[str, Any]:
    """`smoke_test.command` in the smoke venv (its bin first on PATH), from an empty dir so the
    project's sources cannot shadow the installed wheel; output to a log kept after the venv goes."""
    import shlex
    import time

    from kestrel_release.errors import KestrelError
    from kestrel_release.files import statedir
    from kestrel_release.process import proc

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
        said = _last_error_line(log)
        return {"ok": False, "detail": exc.message + (f": {said}" if said else ""), "log": str(log),
                "seconds": round(time.monotonic() - started, 1)}  # fmt: skip
    seconds = round(time.monotonic() - started, 1)
    return {"ok": True, "detail": f"smoke_test.command passed in {seconds} s", "log": str(log), "seconds": seconds}


def _last_error_line(log: Path) -> str:
    """What the command said last about its failure: the last exception line of a traceback (`AssertionError:
    ...`), else its last line; so the one error line says why without opening the log."""
    import re

    try:
        with log.open("rb") as f:  # the tail only: a test suite's log can be large
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    lines = [ln for ln in lines if not ln.startswith("+ ")]  # the tool's own echo of the command
    found = next((ln for ln in reversed(lines) if re.match(r"[\w.]*(Error|Exception|Interrupt)\b", ln)), "")
    line = found or (lines[-1] if lines else "")
    return line if len(line) <= 300 else line[:297] + "..."


def failure_hint(rows: list[dict[str, Any]], where: str) -> str:
    """What a failed smoke test means, by what failed first: the index, the wheels, a dependency, the command."""
    bad = [r for r in rows if not r.get("ok")]
    kinds = {r.get("failure") for r in bad}
    first = str(bad[0].get("failure")) if bad else ""
    if kinds <= {"dependency"}:
        return f"the wheels on {where} installed; a dependency of them could not be fetched"
    if kinds <= {"command"}:
        return f"the wheels on {where} installed and imported; smoke_test.command failed: read its log"
    return {
        "auth": f"{where} must let the upload's credentials read what they upload",
        "missing": f"{where} does not list the upload yet: wait until it does",
        "unreachable": f"check the network to {where}",
        "environment": "this machine could not run the smoke test",
    }.get(first, f"the wheels on {where} do not install/import")


def publish_hint(rows: list[dict[str, Any]], version: str, target: str, simple_url: str) -> str:
    """publish --smoke-test's hint: a new version when the package is at fault, else the same command again."""
    bad = [r for r in rows if not r.get("ok")]
    if bad and bad[0].get("failure") in PACKAGE_FAULTS:
        return (
            f"{version}'s files on {target} can never be replaced: fix the package, then publish a new version "
            "(kestrel-release version bump patch, build, publish --smoke-test)"
        )
    return f"{failure_hint(rows, simple_url)}; then run the same publish --smoke-test again (files already on the index are skipped)"


def forget_rejected(rows: list[dict[str, Any]], wheels: dict[str, str]) -> int:
    """A failure that is the package's own (PACKAGE_FAULTS): drop these wheels (filename -> sha256) from the
    wheel cache, so no later build or rehearsal serves them again."""
    from kestrel_release.stages.build_wheels import wheelcache

    if not any(r.get("failure") in PACKAGE_FAULTS for r in rows if not r.get("ok")):
        return 0
    removed = len(wheelcache.drop(wheels))
    if removed:
        console.info(f"dropped {removed} rejected wheel(s) from the wheel cache: the next build compiles them afresh")
    return removed


def summary(rows: list[dict[str, Any]], where: str) -> str:
    """One line for a passed smoke test: where from, which Pythons, and the command's result."""
    text = f"installed and imported from {where} on Python {', '.join(str(r.get('python')) for r in rows)}"
    reused = sorted({d for r in rows for d in r.get("reused") or ()})
    if reused:
        text += f" (reusing the host's {', '.join(reused)})"
    undeclared = sorted({str(r["undeclared"]) for r in rows if r.get("undeclared")})
    if undeclared:  # its users must install it first: the release does not say so
        text += (
            f"; with {', '.join(undeclared)} installed first: its binaries link torch, its metadata does not require it"
        )
    ran = [r["command"] for r in rows if r.get("command")]
    if ran:
        text += f"; smoke_test.command passed on {len(ran)} Python(s)"
    return text
