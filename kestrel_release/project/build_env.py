"""Reusable build environments: one venv per (interpreter, build requirements).

`uv build` with build isolation makes a fresh venv at a random path for every
wheel, so scikit-build-core's persistent build dir sees a new Python each time
and CMake configures from scratch. Instead, each interpreter gets one venv per
set of build requirements under `<cache>/build-envs/`, and the wheel is built in
it with `--no-build-isolation`: a warm rebuild only re-runs ninja's incremental
steps.

Isolation stays honest: the env is created without system site-packages and
contains exactly the project's [build-system].requires (and their
dependencies), plus whatever the backend's get_requires_for_build_wheel asks for,
as an isolated frontend would install (asked again whenever pyproject.toml
changes). Other requirements make another env; nothing from the interpreter's
or this tool's site-packages is visible to the backend.

Creation is atomic (a temp dir, renamed into place once a marker file records
what it holds) and serialised by a file lock, so concurrent builds share one env
and an interrupted creation leaves nothing that looks usable.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kestrel_release._compat import tomllib
from kestrel_release.adapters import toolchain
from kestrel_release.adapters import uv as uv_adapter
from kestrel_release.errors import BuildError
from kestrel_release.files import fsutil
from kestrel_release.process import proc
from kestrel_release.project import source_copy
from kestrel_release.ui import console

MARKER = "kestrel-build-env.json"
DEFAULT_SYSTEM = {"requires": ["setuptools>=40.8.0"], "build-backend": "setuptools.build_meta:__legacy__"}

# Runs in the build env, in the project dir: the backend's extra requirements as a JSON list (PEP 517).
_PROBE = r"""
import importlib, json, os, sys
backend, paths, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
sys.path[:0] = [os.path.abspath(p) for p in paths]
module, _, attr = backend.partition(":")
obj = importlib.import_module(module)
for part in filter(None, attr.split(".")):
    obj = getattr(obj, part)
hook = getattr(obj, "get_requires_for_build_wheel", None)
with open(out, "w") as fh:
    json.dump(list(hook() if hook else []), fh)
"""


@dataclass(frozen=True)
class TorchPin:
    """The torch a variant's build env holds (config/variants.py): `torch==2.13.*` from PyPI or from `index`
    (PyTorch's per-CUDA index), or, with `reuse`, the one the interpreter already has (the env sees the
    interpreter's site-packages then: an offline GPU host with torch installed)."""

    requirement: str
    index: str = ""
    reuse: bool = False

    def requires(self, requires: list[str]) -> list[str]:
        """The build requirements with the project's own torch requirement replaced by the pin."""
        rest = [r for r in requires if _req_name(r) != "torch"]
        return rest if self.reuse else [*rest, self.requirement]


def _req_name(requirement: str) -> str:
    import re

    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return m.group(1).lower().replace("_", "-") if m else ""


def build_system(project: Path, extra: Sequence[str] = ()) -> dict:
    """The project's [build-system] table, with PEP 517's defaults filled in; `extra`: build.requires,
    the requirements the user adds without editing the project (a setup.py importing an undeclared torch)."""
    data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    table = data.get("build-system", {})
    return {
        "requires": [str(r) for r in table.get("requires", DEFAULT_SYSTEM["requires"])] + list(extra),
        "build-backend": str(table.get("build-backend", DEFAULT_SYSTEM["build-backend"])),
        "backend-path": [str(p) for p in table.get("backend-path", [])],
    }


def env_dir(python: Path, requires: list[str], torch: TorchPin | None = None) -> Path:
    """Where the env for this interpreter (identified by path, size and mtime) and requirements lives."""
    st = python.resolve().stat()
    payload: dict = {"python": str(python), "size": st.st_size, "mtime": st.st_mtime_ns, "requires": sorted(requires)}
    if torch is not None:  # a variant's env: its own directory per index and reuse
        payload["torch"] = {"index": torch.index, "reuse": torch.reuse}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
    return toolchain.cache_dir() / "build-envs" / digest


def env_python(root: Path) -> Path:
    return root / "bin" / "python"


def _marker(root: Path) -> dict | None:
    try:
        data = json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and env_python(root).exists() else None


def ensure(
    uv: Path,
    python: Path,
    project: Path,
    *,
    log_dir: Path,
    tag: str,
    env: dict[str, str],
    torch: TorchPin | None = None,
    extra: Sequence[str] = (),
) -> Path:
    """The python of a ready build env for `project` on `python`; BuildError when it cannot be made.
    `torch`: a variant's env (its torch pinned, or reused from the interpreter); `extra`: build.requires."""
    from filelock import FileLock

    try:
        system = build_system(project, extra)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"cannot read {project / 'pyproject.toml'}: {exc}") from None
    if torch is not None:
        system = {**system, "requires": torch.requires(system["requires"])}
    root = env_dir(python, system["requires"], torch)
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{root}.lock"):
        marker = _marker(root)
        if marker is None:
            marker = _create(uv, python, system["requires"], root, log_dir / f"env-{tag}.log", env, torch)
        pyproject = fsutil.sha256_file(project / "pyproject.toml")
        if pyproject not in marker.get("checked", []):
            log = log_dir / f"env-{tag}-backend.log"
            _add_backend_requires(uv, root, project, system, log, env, bool(marker.get("reuse")))
            marker["checked"] = [*marker.get("checked", []), pyproject][-20:]
            fsutil.atomic_write_text(root / MARKER, json.dumps(marker, indent=1))
    return env_python(root)


def _create(
    uv: Path, python: Path, requires: list[str], root: Path, log: Path, env: dict[str, str], torch: TorchPin | None
) -> dict:
    # Under the lock, any temp dir or unmarked env is a dead creator's leftover.
    for stale in [*root.parent.glob(f"{root.name}.tmp-*"), root]:
        shutil.rmtree(stale, ignore_errors=True)
    tmp = root.with_name(f"{root.name}.tmp-{os.getpid()}")
    # --relocatable: entry points (cmake, ninja...) must keep working once tmp is renamed to root.
    proc.run_logged(
        uv_adapter.venv_command(uv, python, tmp, relocatable=True),
        log=log,
        cwd=root.parent,
        env=env,
        what=f"creating the build env for {python}",
        show_tail=False,
    )
    reuse = bool(torch and torch.reuse)
    if reuse:  # the interpreter's packages (its torch) seen by the env; only what it lacks is installed
        _see_interpreter(python, tmp, log)
        requires = _missing(env_python(tmp), requires, log)
    if requires:
        proc.run_logged(
            uv_adapter.pip_install_command(
                uv, env_python(tmp), requires, compile_bytecode=True, extra_index=torch.index if torch else ""
            ),
            log=log.with_name(log.stem + "-install.log"),
            cwd=root.parent,
            env=env,
            what=f"installing {', '.join(requires)} into the build env for {python}",
            show_tail=False,
        )
    marker = {"python": str(python), "requires": sorted(requires), "checked": [], "reuse": reuse}
    fsutil.atomic_write_text(tmp / MARKER, json.dumps(marker, indent=1))
    os.replace(tmp, root)
    return marker


def _add_backend_requires(
    uv: Path, root: Path, project: Path, system: dict, log: Path, env: dict[str, str], reuse: bool = False
) -> None:
    answer = root / f".backend-requires-{os.getpid()}.json"
    try:
        # In a clean copy: setuptools answers by running egg_info, which writes into the tree it runs in.
        with source_copy.temporary(project) as src:
            proc.run_logged(
                [env_python(root), "-c", _PROBE, system["build-backend"], json.dumps(system["backend-path"]), answer],
                log=log,
                cwd=src,
                env={**env, "PYTHONDONTWRITEBYTECODE": "1", "PATH": _path_with(root, env)},
                what="asking the build backend for its requirements",
                show_tail=False,
            )
        extra = json.loads(answer.read_text(encoding="utf-8"))
    finally:
        answer.unlink(missing_ok=True)
    if reuse and extra:
        extra = _missing(env_python(root), extra, log)
    if extra:
        proc.run_logged(
            uv_adapter.pip_install_command(uv, env_python(root), extra, compile_bytecode=True),
            log=log,
            cwd=root.parent,
            env=env,
            what=f"installing {', '.join(extra)} into the build env",
            show_tail=False,
        )


# Runs in the interpreter whose packages a variant's env reuses: its site-packages directories.
_SITE_DIRS = "import json, site, sys; print(json.dumps([p for p in site.getsitepackages() if p]))"
# Runs in the env: which requirements (argv[1], JSON) its packages do not satisfy.
_MISSING = r"""
import json, re, sys, importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:
    Requirement = None
out = []
for text in json.loads(sys.argv[1]):
    req = Requirement(text) if Requirement else None
    name = req.name if req else re.match(r"\s*([A-Za-z0-9._-]+)", text).group(1)
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        out.append(text)
        continue
    if req is not None and req.specifier and not req.specifier.contains(have, prereleases=True):
        out.append(text)
print(json.dumps(out))
"""


def _see_interpreter(python: Path, env_root: Path, log: Path) -> None:
    """Make the interpreter's site-packages visible to the env through a .pth file, after the env's own.

    Not `venv --system-site-packages`: that exposes the base interpreter's packages, and the Python
    holding torch is often itself a venv (/opt/torch/.venv on the GPU hosts), whose packages it would miss."""
    found = proc.probe([python, "-c", _SITE_DIRS], timeout=60)
    try:
        dirs = json.loads(found.output.strip().splitlines()[-1]) if found and found.returncode == 0 else None
    except (ValueError, IndexError):
        dirs = None
    site = sorted(env_root.glob("lib/python*/site-packages")) or sorted(env_root.glob("Lib/site-packages"))
    if not isinstance(dirs, list) or not site:
        raise BuildError(f"could not read {python}'s site-packages to reuse its torch", f"see {log}")
    fsutil.atomic_write_text(site[0] / "_kestrel_reuse.pth", "".join(f"{d}\n" for d in dirs))


def _missing(python: Path, requires: list[str], log: Path) -> list[str]:
    """The requirements the env (with the interpreter's packages) does not satisfy; all of them when unsure."""
    found = proc.probe([python, "-c", _MISSING, json.dumps(requires)], timeout=120)
    try:
        out = json.loads(found.output.strip().splitlines()[-1]) if found and found.returncode == 0 else requires
    except (ValueError, IndexError):
        out = requires
    return [str(r) for r in out] if isinstance(out, list) else requires


def _path_with(root: Path, env: dict[str, str]) -> str:
    """PATH with the env's bin dir first, as an activated env has it (meson-python runs `meson` from PATH)."""
    return os.pathsep.join([str(root / "bin"), env.get("PATH") or os.environ.get("PATH", "")])


class Envs:
    """Prepare every Python's build env in the background (overlapping precompile); get() waits for one.

    A failure (typically: offline, requirements not in uv's cache) is not fatal: get()
    returns None and the build falls back to uv's isolated build, said once.
    """

    def __init__(
        self,
        uv: Path,
        pythons: dict[str, Path],
        project: Path,
        log_dir: Path,
        env: dict[str, str],
        torch: dict[str, TorchPin] | None = None,
        extra: Sequence[str] = (),
    ) -> None:
        from kestrel_release import run_context

        self._pool = ThreadPoolExecutor(  # the workers print in the run's context (-v): a new thread starts without it
            max_workers=max(1, min(2, len(pythons))),
            thread_name_prefix="build-env",
            initializer=run_context.inherit,
            initargs=(run_context.current(),),
        )
        # No fallback to uv's isolated build for a variant's env (wrong torch) or with build.requires (uv's
        # own env would lack them: the build fails later, at `import torch`, instead of saying why now).
        self.strict = torch is not None or bool(extra)
        self._futures: dict[str, Future] = {
            py: self._pool.submit(
                ensure, uv, path, project, log_dir=log_dir, tag=py, env=env, torch=(torch or {}).get(py), extra=extra
            )
            for py, path in pythons.items()
        }
        self._warned = False
        self._lock = threading.Lock()

    def get(self, py: str) -> Path | None:
        try:
            return self._futures[py].result()
        except BuildError as exc:
            if proc.stopping() or self.strict:
                raise
            with self._lock:
                first, self._warned = not self._warned, True
            if first:
                console.warn(
                    f"no reusable build env ({exc}); building with uv's isolated envs instead "
                    "(slower: every build configures from scratch)"
                )
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
