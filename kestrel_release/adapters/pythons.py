"""Find CPython interpreters the way users have them installed.

Search order for a version like "3.12" or the free-threaded "3.14t" (first working CPython wins,
cheapest first): PATH `python3.12` / `python3.14t`, pyenv's versions directory, `uv python find` (uv-managed
and others uv knows; never downloading), conda environments. Every candidate is
run once to confirm it really is CPython X.Y. pyenv shims are skipped: they exist
for every version but fail for the non-global ones (and cost ~0.2 s each).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from kestrel_release.errors import PreflightError
from kestrel_release.process import pools, proc

_PROBE = (
    "import sys, platform; "
    "print(platform.python_implementation(), '%d.%d' % sys.version_info[:2], getattr(sys, 'abiflags', ''))"
)


def _split(version: str) -> tuple[str, bool]:
    """ "3.14t" -> ("3.14", True): the X.Y and whether the free-threaded build is asked for."""
    return (version[:-1], True) if version.endswith("t") else (version, False)


def _probe(path: Path, version: str) -> bool:
    """True when `path` runs and is CPython `version`: free-threaded for "3.14t", regular for "3.14"."""
    out = proc.probe([path, "-c", _PROBE])
    if out is None:
        return False
    fields = out.output.split()
    base, threaded = _split(version)
    return out.returncode == 0 and fields[:2] == ["CPython", base] and ("t" in "".join(fields[2:])) == threaded


def _from_uv(version: str) -> Iterator[Path]:
    uv = shutil.which("uv")
    if not uv:
        return
    # --system: a project's .venv is not an installation to build with.
    out = proc.probe(
        [uv, "python", "find", "--system", "--no-project", version], timeout=60, env={"UV_PYTHON_DOWNLOADS": "never"}
    )
    if out is not None and out.returncode == 0 and out.output.strip():
        yield Path(out.output.strip().splitlines()[-1])


def _from_path(version: str) -> Iterator[Path]:
    found = shutil.which(f"python{version}")
    if found and Path(found).parent.name != "shims":
        yield Path(found)


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in name.split("."))


def _from_pyenv(version: str) -> Iterator[Path]:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    versions = root / "versions"
    if not versions.is_dir():
        return
    base, threaded = _split(version)  # pyenv names a free-threaded build "3.14.0t"
    dirs = [
        d
        for d in versions.iterdir()
        if (d.name == version or d.name.startswith(base + ".")) and d.name.endswith("t") == threaded
    ]
    for d in sorted(dirs, key=lambda d: _version_key(d.name.rstrip("t")), reverse=True):  # newest patch first
        yield d / "bin" / f"python{version}"


def _conda_roots() -> list[Path]:
    roots = []
    if os.environ.get("CONDA_EXE"):
        roots.append(Path(os.environ["CONDA_EXE"]).parent.parent)
    home = Path.home()
    roots += [home / n for n in ("miniforge3", "mambaforge", "miniconda3", "anaconda3")]
    return [r for r in roots if r.is_dir()]


def _from_conda(version: str) -> Iterator[Path]:
    prefixes = [Path(os.environ["CONDA_PREFIX"])] if os.environ.get("CONDA_PREFIX") else []
    for root in _conda_roots():
        prefixes.append(root)
        envs = root / "envs"
        if envs.is_dir():
            prefixes += sorted(envs.iterdir())
    for prefix in prefixes:
        yield prefix / "bin" / f"python{version}"


def _from_manylinux(version: str) -> Iterator[Path]:
    """A manylinux image's interpreters (not on its PATH): where `ci init`'s container jobs build."""
    base, threaded = _split(version)
    minor = base.split(".", 1)[-1]
    yield Path(f"/opt/python/cp3{minor}-cp3{minor}{'t' if threaded else ''}/bin/python{version}")


SOURCES = (
    ("PATH", _from_path),
    ("pyenv ($PYENV_ROOT or ~/.pyenv)/versions", _from_pyenv),
    ("uv python find", _from_uv),
    ("conda envs", _from_conda),
    ("/opt/python (manylinux images)", _from_manylinux),
)


@functools.cache
def find_interpreter(version: str) -> Path:
    """The path of a working CPython `version` ("3.12"), or PreflightError naming what was searched."""
    seen: set[Path] = set()
    for _label, source in SOURCES:
        for cand in source(version):
            if cand in seen or not cand.is_file():
                continue
            seen.add(cand)
            if _probe(cand, version):
                return cand
    searched = ", ".join(label for label, _ in SOURCES)
    raise PreflightError(
        f"no working CPython {version} found (searched: {searched})",
        f"install it (e.g. 'uv python install {version}' or 'pyenv install {version}') "
        f"or drop it from --python / [tool.kestrel-release].python",
    )


def find_all(versions: Iterable[str]) -> dict[str, Path]:
    """Every requested interpreter; one PreflightError listing all the missing ones."""
    versions = list(dict.fromkeys(versions))
    with pools.threads(len(versions)) as pool:
        results = list(pool.map(_try_find, versions))
    missing = [v for v, r in zip(versions, results, strict=True) if isinstance(r, PreflightError)]
    if missing:
        searched = ", ".join(label for label, _ in SOURCES)
        raise PreflightError(
            f"no working CPython {', '.join(missing)} found (searched: {searched})",
            "install them (e.g. 'uv python install X.Y' or 'pyenv install X.Y') or pass --python with the ones you have",
        )
    return {v: r for v, r in zip(versions, results, strict=True)}  # type: ignore[misc]


def _try_find(version: str) -> Path | PreflightError:
    try:
        return find_interpreter(version)
    except PreflightError as exc:
        return exc


# Run in the build's environment: the interpreter's default compilers (what setuptools calls when CC
# is unset) and the installed versions of the build requirements and their dependencies (markers other
# than extras ignored: a superset is safe for a cache key), and where torch's headers are when torch is
# installed (found, not imported: seconds of a build otherwise). argv[1]: the requirement names as JSON.
FACTS_PROBE = r"""
import json, os, re, sys, sysconfig, importlib.metadata as m, importlib.util as u
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
dists = {}
for d in m.distributions():
    name = (d.metadata["Name"] or "").strip()
    if name:
        dists.setdefault(norm(name), d)
roots = [norm(n) for n in json.loads(sys.argv[1])]
todo, seen = list(roots), {}
while todo:
    name = todo.pop()
    if name in seen:
        continue
    d = dists.get(name)
    if d is None and name not in roots:
        continue
    seen[name] = d.version if d else None
    for req in (d.requires or []) if d else []:
        if "extra" in req.partition(";")[2]:
            continue
        hit = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if hit:
            todo.append(norm(hit.group(1)))
cvars = {k: sysconfig.get_config_var(k) for k in ("CC", "CXX", "LDSHARED")}
spec = u.find_spec("torch")
where = list(spec.submodule_search_locations or []) if spec else []
include = os.path.join(where[0], "include") if where else ""
facts = {"requirements": seen, "sysconfig": {k: v for k, v in cvars.items() if isinstance(v, str)}}
if os.path.isdir(include):
    facts["torch_include"] = include
print(json.dumps(facts))
"""


def build_facts(python: Path, requirements: list[str], env: dict[str, str] | None = None) -> dict | None:
    """{"requirements": {name: version or None}, "sysconfig": {CC, CXX, LDSHARED}, "torch_include": dir (when
    torch is there)} of `python` in `env`: what a build there compiles with and against; None when the
    interpreter does not answer."""
    import json

    out = proc.probe([python, "-c", FACTS_PROBE, json.dumps(sorted(requirements))], timeout=120, env=env)
    if out is None or out.returncode != 0:
        return None
    try:
        data = json.loads(out.output.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return data if isinstance(data, dict) else None
