"""Building inside an image (build.container): wheels that link against the image's glibc.

A wheel's glibc floor is the glibc it was linked on, so a modern host makes wheels that older
systems refuse; building in an older image (a manylinux one, or any root) gives them its floor.
Per Python: the clean source copy (never the user's tree), the build requirements and auditwheel
(resolved here by uv for the image's Python and platform, so the image needs no index or network),
uv and patchelf (static or glibc 2.17 binaries) go into one workspace; the image's Python builds
the wheel there (uv build, no isolation: the carried requirements are the build env) and the image's
auditwheel run repairs it against the image's libraries (`--plat auto` resolved there, with the
image's libc: adapters/_auditwheel_auto.py); the host takes the wheels out and goes on as for a
host build (normalize, floor checks, staging). The run sees only the workspace and the
variables the build needs (build.env and the fixed ones, listed with -v); no credential is passed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kestrel_release import platforms
from kestrel_release.adapters import auditwheel, container, frontend, git, toolchain
from kestrel_release.adapters import uv as uv_adapter
from kestrel_release.config.model import CONTAINER_ENGINES, Config
from kestrel_release.errors import BuildError
from kestrel_release.files import statedir
from kestrel_release.process import proc
from kestrel_release.project import source_copy
from kestrel_release.ui import console
from kestrel_release.ui import progress as _progress

# Finds each configured Python (`X.Y path` lines), then the image's glibc and CPU. A free-threaded "3.14t" is
# manylinux's /opt/python/cp314-cp314t or python3.14t, and must say so itself (Py_GIL_DISABLED).
_PROBE = r"""
said='import sys, sysconfig; print("%d.%d" % sys.version_info[:2] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))'
for v in {versions}; do
  b=${{v%t}}; n=${{b#3.}}; t=${{v#$b}}
  for p in /opt/python/cp3$n-cp3$n$t/bin/python "$(command -v python$v 2>/dev/null)" \
           /usr/local/bin/python$v /usr/bin/python$v; do
    if [ -n "$p" ] && [ -x "$p" ] && [ "$("$p" -c "$said" 2>/dev/null)" = "$v" ]; then
      echo "python $v $p"; break
    fi
  done
done
echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)"
echo "arch $(uname -m)"
# A CUDA toolkit is found as on a host: CUDA_HOME/CUDA_PATH, nvcc on PATH, /usr/local/cuda*, newest first.
for n in "${{CUDACXX:-}}" "${{CUDA_HOME:+$CUDA_HOME/bin/nvcc}}" "${{CUDA_PATH:+$CUDA_PATH/bin/nvcc}}" \
         "$(command -v nvcc 2>/dev/null)" /usr/local/cuda/bin/nvcc $(ls -d /usr/local/cuda-*/bin/nvcc 2>/dev/null | sort -rV); do
  if [ -n "$n" ] && [ -x "$n" ]; then
    echo "nvcc $n"; echo "nvcc-version $("$n" --version 2>/dev/null | grep -o 'V[0-9][0-9.]*' | head -1)"; break
  fi
done
echo "cc $(cc --version 2>/dev/null | head -1)"
echo "c++ $(c++ --version 2>/dev/null | head -1)"
"""


@dataclass
class Target:
    """The image a build runs in, as preflight found it."""

    engine: container.Engine
    image: str
    pythons: dict[str, str]  # "3.9" -> its path inside
    glibc: tuple[int, int] | None
    arch: str
    notes: list[str] = field(default_factory=list)
    nvcc: str = ""  # the image's nvcc, its path inside ("" = none)
    nvcc_version: str = ""  # "13.0.88"
    compilers: dict[str, str] = field(default_factory=dict)  # cc/c++ -> the first line of --version there

    def platform(self) -> str:
        """uv's --python-platform for the image: its CPU and glibc (clamped to what uv knows)."""
        major, minor = self.glibc or (2, 17)
        minor = max(17, min(minor, 40)) if major == 2 else 17
        return f"{self.arch}-manylinux_2_{minor}"

    def to_json(self) -> dict:
        return {"engine": self.engine.name, "image": self.image, "pythons": self.pythons, "notes": self.notes}


def preflight(cfg: Config, problems: list[str]) -> Target | None:
    """Engine, image and Pythons of build.container; one problem line each (exit 3 from plan)."""
    image = cfg.build.container
    name = container.engine_name(cfg.build.container_engine, image)
    engine = container.find(name)
    if engine is None:
        problems.append(
            f"the container engine {name} is not installed (build.container = {image}) — install it, "
            f"or set build.container_engine to an installed one ({', '.join(CONTAINER_ENGINES)})"
        )
        return None
    why = container.cannot_run(engine)
    if why:
        problems.append(f"{name} cannot run containers here: {why} — {container.failure_hint(engine, why)}")
        return None
    if not container.image_present(engine, image):
        console.info(f"pulling {image} with {name}")
        why = container.pull(engine, image)
        if why:
            problems.append(f"the image {image} is not here and cannot be pulled: {why} — check its name, or pull it")
            return None
    engine, result = _probe(engine, image, cfg.python)
    if result.returncode != 0:
        last = result.tail(1).strip()
        problems.append(f"{name} cannot run containers here: {last} — {container.failure_hint(engine, result.output)}")
        return None
    target = _parse_probe(engine, image, result.output)
    for note in engine.notes:
        console.debug(f"container: {note}")
    missing = [py for py in cfg.python if py not in target.pythons]
    for py in missing:
        problems.append(
            f"the image {image} has no Python {py} (looked for /opt/python/{_manylinux_dir(py)}/bin/python and "
            f"python{py}) — use an image that has it, or drop {py} from `python`"
        )
    parsed = platforms.parse(cfg.build.plat) if cfg.build.plat != "auto" else None
    floor = parsed.floor if parsed is not None else None
    if floor and target.glibc and target.glibc < floor:
        problems.append(
            f"the image {image} has glibc {target.glibc[0]}.{target.glibc[1]}, older than {cfg.build.plat} needs "
            "— use a newer image or a lower build.plat"
        )
    return target


def _manylinux_dir(name: str) -> str:
    """Where a manylinux image keeps Python `name`: cp314-cp314, cp314-cp314t for "3.14t"."""
    from kestrel_release.facts import pyversions

    py = pyversions.parse(name)
    return f"{py.interpreter}-{py.abi}" if py else f"cp3{name[2:]}-*"


def _probe(engine: container.Engine, image: str, versions: tuple[str, ...]) -> tuple[container.Engine, proc.Result]:
    """Run the probe script in the image (the engine adjusted to this host: container.usable)."""
    with workspace(engine, image) as ws:
        (ws / "probe.sh").write_text(_PROBE.format(versions=" ".join(versions)), encoding="utf-8")
        return container.usable(engine, image, ws, f"{engine.inside(ws, image)}/probe.sh")


def doctor(cfg: Config) -> list[tuple[str, str, str, str]]:
    """doctor's rows for build.container (name, ok/warn/fail, detail, fix): the engine and its
    version, whether it runs containers here (and what it needed), the image present locally (never
    pulled here), its glibc and the configured Pythons in it."""
    image = cfg.build.container
    if not image:
        return []
    name = container.engine_name(cfg.build.container_engine, image)
    engine = container.find(name)
    if engine is None:
        return [("container engine", "fail", f"{name} is not installed", "install it, or set build.container_engine")]
    why = container.cannot_run(engine)
    if why:
        hint = container.failure_hint(engine, why)
        return [("container engine", "fail", f"{name} cannot run containers here: {why}", hint)]
    rows = []
    if not container.image_present(engine, image):
        fix = "build.container must be a root directory" if name == "chroot" else f"{name} pull {image}"
        return [
            ("container engine", "ok", container.version(engine) or name, ""),
            ("container image", "fail", f"{image} is not present locally", fix),
        ]
    engine, result = _probe(engine, image, cfg.python)
    if result.returncode != 0:
        detail = f"{name} cannot run containers here: {result.tail(1).strip()}"
        return [("container engine", "fail", detail, container.failure_hint(engine, result.output))]
    ran = "; ".join(engine.notes) or "runs containers with its defaults"
    rows.append(("container engine", "ok", f"{container.version(engine) or name}: {ran}", ""))
    target = _parse_probe(engine, image, result.output)
    glibc = ".".join(map(str, target.glibc)) if target.glibc else "unknown"
    rows.append(("container image", "ok", f"{image} (present locally; glibc {glibc}, {target.arch})", ""))
    for py in cfg.python:
        if py in target.pythons:
            rows.append((f"Python {py} (in {image})", "ok", target.pythons[py], ""))
        else:
            rows.append((f"Python {py} (in {image})", "fail", "not in the image", f"use an image with Python {py}"))
    return rows


def _parse_probe(engine: container.Engine, image: str, output: str) -> Target:
    pythons: dict[str, str] = {}
    glibc, arch = None, os.uname().machine
    extra: dict = {"compilers": {}}
    for line in output.splitlines():
        parts = line.split()
        word, _, rest = line.partition(" ")
        if word in ("cc", "c++") and rest.strip():
            extra["compilers"][word] = rest.strip()
        elif word == "nvcc" and rest.strip():
            extra["nvcc"] = rest.strip()
        elif word == "nvcc-version" and rest.strip().startswith("V"):
            extra["nvcc_version"] = rest.strip()[1:]
        if len(parts) == 3 and parts[0] == "python":
            pythons[parts[1]] = parts[2]
        elif len(parts) == 2 and parts[0] == "glibc" and parts[1].count(".") == 1:
            major, minor = parts[1].split(".")
            glibc = (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None
        elif len(parts) == 2 and parts[0] == "arch":
            arch = parts[1]
    return Target(engine, image, pythons, glibc, arch, list(engine.notes), **extra)


@contextlib.contextmanager
def workspace(engine: container.Engine, image: str) -> Iterator[Path]:
    """One run's directory: a tool-owned temp dir (inside the root for chroot), removed after."""
    parent = engine.workspace_parent(image, statedir.root() / "containers")
    if engine.name == "chroot":  # the root's /tmp: a plain temp dir (the owner scheme's marker is ours)
        parent.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix="kestrel-release-", dir=parent))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
        return
    with statedir.temp_dir("container", parent) as path:
        path.chmod(0o755)  # a container user other than ours may need to read it
        yield path


def carried_env(uv: Path, target: Target, py: str, requirements: list[str], log: Path) -> Path:
    """A directory of `requirements` installed for the image's Python `py` and platform, cached
    (key: the requirements, the Python, the platform), with a sitecustomize that makes its .pth
    files work from PYTHONPATH (setuptools' distutils shim)."""
    key = json.dumps({"r": sorted(requirements), "py": py, "plat": target.platform()}, sort_keys=True)
    root = toolchain.cache_dir() / "container-envs" / hashlib.sha256(key.encode()).hexdigest()[:16]
    if (root / ".complete").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{root.name}.tmp-", dir=root.parent))
    try:
        if requirements:
            proc.run_logged(
                uv_adapter.target_install_command(uv, tmp, requirements, python=py, platform=target.platform()),
                log=log,
                what=f"resolving {', '.join(requirements)} for the image's Python {py}",
            )
        (tmp / "sitecustomize.py").write_text(
            "import os, site\nsite.addsitedir(os.path.dirname(os.path.abspath(__file__)))\n", encoding="utf-8"
        )
        (tmp / ".complete").write_text(key, encoding="utf-8")
        shutil.rmtree(root, ignore_errors=True)
        os.replace(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _carry(src: Path, dst: Path) -> None:
    """Copy a cached tree into the workspace (hard links where the filesystem allows)."""

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, symlinks=True, copy_function=link)


def build_env_script(env: dict[str, str], inside: str, py_env: str) -> str:
    """The exports every run starts with: the build's variables and the carried tools' paths."""
    fixed = {
        "HOME": f"{inside}/home",
        "TMPDIR": f"{inside}/tmp",
        "PATH": f"{inside}/{py_env}/bin:{inside}/bin:$PATH",
        "PYTHONPATH": f"{inside}/{py_env}",
        "UV_CACHE_DIR": f"{inside}/uv-cache",
        "UV_OFFLINE": "1",
        "UV_NO_CONFIG": "1",
    }
    lines = ["set -e"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines += [f'export {k}="{v}"' for k, v in fixed.items()]
    return "\n".join(lines) + "\n"


def build_one(
    cfg: Config,
    plan: Any,  # plan.Plan (plan.py imports this module)
    py: str,
    root: Path,
    logs: Path,
    steps: _progress.Steps,
    copy_rules: dict,
) -> Path:
    """Build and repair Python `py`'s wheel in the image; returns it (normalized) under `root`."""
    from kestrel_release.stages.build_wheels import native as build_native
    from kestrel_release.stages.build_wheels import pure as _pure
    from kestrel_release.stages.build_wheels import wheelzip as _wheelzip
    from kestrel_release.stages.verify.pypi import check_built_wheel

    target: Target = plan.container
    name, log = f"python {py}", logs / f"build-{py}.log"
    engine, image = target.engine, target.image
    python = target.pythons[py]
    try:
        with workspace(engine, image) as ws:
            inside = engine.inside(ws, image)
            steps.start(name, "building")
            src = source_copy.make(cfg.project_dir, ws / "src", **copy_rules)
            if (ws / "src" / ".git").is_dir():
                git.dissociate(ws / "src")  # the objects it borrows are outside the image
            requires = [*_requires(src), *cfg.build.requires]
            _carry(carried_env(plan.uv, target, py, requires, logs / f"env-{py}.log"), ws / "env")
            (ws / "bin").mkdir()
            shutil.copy2(plan.uv, ws / "bin" / "uv")
            patchelf = toolchain.find_patchelf()
            if patchelf is not None:
                shutil.copy2(patchelf, ws / "bin" / "patchelf")
            for sub in ("home", "tmp", "raw", "fixed"):
                (ws / sub).mkdir()
            env = plan.build_env(cfg)
            console.debug(f"container build env for Python {py}: {', '.join(sorted(env))} (no other host variable)")
            head = build_env_script(env, inside, "env")
            rel = src.relative_to(ws).as_posix()
            argv = frontend.wheel_command(
                Path(f"{inside}/bin/uv"),
                Path(python),
                Path(f"{inside}/{rel}"),
                Path(f"{inside}/raw"),
                frontend="uv",
                isolation=False,
                config_settings={},
            )
            (ws / "build.sh").write_text(head + f"cd {inside}/{rel}\n" + shlex.join(argv) + "\n", encoding="utf-8")
            what = f"build for Python {py} in {image}"
            proc.run_logged(engine.run_argv(image, ws, f"{inside}/build.sh"), log=log, what=what)
            raw = _wheelzip.only_wheel(ws / "raw", py, f"the {cfg.build.frontend} frontend")
            out = root / f"raw-{py}"
            out.mkdir(parents=True, exist_ok=True)
            wheel = Path(shutil.copy2(raw, out / raw.name))
            if not _pure.needs_repair(wheel):
                final = _wheelzip.normalize(wheel, plan.source_date_epoch)
            else:
                steps.start(name, "repairing")
                log = logs / f"repair-{py}.log"
                _carry(carried_env(plan.uv, target, py, ["auditwheel"], logs / f"tools-{py}.log"), ws / "tools")
                rep = auditwheel.repair_args(Path(f"{inside}/raw/{raw.name}"), Path(f"{inside}/fixed"), cfg.build.plat,
                                             cfg.build.exclude)  # fmt: skip
                script = build_env_script({"SOURCE_DATE_EPOCH": str(plan.source_date_epoch)}, inside, "tools")
                # Not `python -m auditwheel`: its --plat auto reads the libc from the extension (adapters/_auditwheel_auto.py)
                shutil.copy2(auditwheel.in_root_script(), ws / "tools" / "kestrel_auditwheel.py")
                repair = [python, f"{inside}/tools/kestrel_auditwheel.py", *rep]
                (ws / "repair.sh").write_text(script + shlex.join(repair) + "\n")
                with build_native.floor_explained(cfg, wheel, logs / f"glibc-floor-{py}.log"):
                    what = f"auditwheel repair for Python {py} in {image}"
                    proc.run_logged(engine.run_argv(image, ws, f"{inside}/repair.sh"), log=log, what=what)
                    fixed = _wheelzip.only_wheel(ws / "fixed", py, "auditwheel")
                    dest = root / f"repaired-{py}"
                    dest.mkdir(parents=True, exist_ok=True)
                    final = _wheelzip.normalize(Path(shutil.copy2(fixed, dest / fixed.name)), plan.source_date_epoch)
                    build_native.check_min_glibc(cfg, final)
        check_built_wheel(final)
    except BuildError:
        steps.finish(name, "stopped" if proc.stopping() else "failed", f"log: {log}")
        raise
    steps.finish(name, "ok", f"{final.name} (built in {image})")
    return final


def _requires(src: Path) -> list[str]:
    from kestrel_release.project import build_env

    try:
        return build_env.build_system(src)["requires"]
    except OSError:
        return list(build_env.DEFAULT_SYSTEM["requires"])
    except Exception as exc:  # a broken pyproject.toml: the build would fail the same way
        raise BuildError(f"cannot read {src / 'pyproject.toml'}: {exc}") from None
