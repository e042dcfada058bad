"""What build does for native extensions: abi3/py3 (one wheel per platform), the glibc floor,
metadata agreement with the backend, and the torch a wheel was built against.

Kept out of build.py so the pipeline there stays a pipeline; each function is one hook.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from kestrel_release._compat import tomllib
from kestrel_release.config.model import Config
from kestrel_release.errors import BuildError
from kestrel_release.facts import pyversions
from kestrel_release.ui import console

_CFG_LIMITED = re.compile(r"^\s*py[_-]limited[_-]api\s*=\s*(cp3\d+)", re.MULTILINE)
_PY_LIMITED = re.compile(r"""["']py_limited_api["']\s*:\s*["'](cp3\d+)["']""")


_minor = pyversions.sort_key  # "3.14" before "3.14t" before "3.15"


def detect_abi(project: Path) -> str | None:
    """ "abi3" or "py3" when the project's build config says so (setup.cfg/setup.py bdist_wheel
    py_limited_api, [tool.distutils.bdist_wheel], scikit-build-core wheel.py-api); else None."""
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    skb = tool.get("scikit-build", {}) if isinstance(tool.get("scikit-build"), dict) else {}
    py_api = str((skb.get("wheel") or {}).get("py-api", "") if isinstance(skb.get("wheel"), dict) else "")
    if py_api.startswith("cp3"):
        return "abi3"
    if py_api.startswith("py3"):
        return "py3"
    bdist = (tool.get("distutils") or {}).get("bdist_wheel", {}) if isinstance(tool.get("distutils"), dict) else {}
    if isinstance(bdist, dict) and str(bdist.get("py-limited-api", bdist.get("py_limited_api", ""))).startswith("cp3"):
        return "abi3"
    for name, pattern in (("setup.cfg", _CFG_LIMITED), ("setup.py", _PY_LIMITED)):
        path = project / name
        if path.is_file() and pattern.search(path.read_text("utf-8", "replace")):
            return "abi3"
    return None


def abi_mode(cfg: Config) -> str:
    """abi = "auto": the project's build config, else what an earlier build's wheel tag showed."""
    if cfg.abi != "auto":
        return cfg.abi
    return detect_abi(cfg.project_dir) or _remembered(cfg.project_dir) or "auto"


def _memo(project: Path) -> Path:
    import hashlib

    from kestrel_release.adapters import toolchain

    return toolchain.cache_dir() / "abi" / hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:16]


def _remembered(project: Path) -> str | None:
    try:
        found = _memo(project).read_text().strip()
    except OSError:
        return None
    return found if found in ("abi3", "py3") else None


def _remember(project: Path, mode: str | None) -> None:
    """Record (or forget) the abi3/py3 tag a build produced, so the next build runs once."""
    from kestrel_release.files import fsutil

    memo = _memo(project)
    if mode is None:
        memo.unlink(missing_ok=True)
        return
    memo.parent.mkdir(parents=True, exist_ok=True)
    fsutil.atomic_write_text(memo, mode + "\n")


def pythons_to_build(cfg: Config, pythons: dict[str, Path]) -> dict[str, Path]:
    """abi3/py3: one build with the oldest configured Python serves them all; an abi3 wheel serves
    no free-threaded build, so each free-threaded Python (3.14t) keeps a build of its own."""
    mode = abi_mode(cfg)
    if mode not in ("abi3", "py3") or len(pythons) < 2:
        return pythons
    own = [py for py in pythons if mode == "abi3" and (pyversions.parse(py) or pyversions.Py(0)).free_threaded]
    shared = [py for py in pythons if py not in own]
    if not shared:
        return pythons
    oldest = min(shared, key=_minor)
    console.info(
        f"{mode}: one wheel per platform, built with Python {oldest}, "
        f"for Python {', '.join(sorted(shared, key=_minor))}"
        + (f"; free-threaded {', '.join(sorted(own, key=_minor))} built each on its own" if own else "")
    )
    return {py: pythons[py] for py in sorted([oldest, *own], key=_minor)}


def one_per_wheel(cfg: Config, built: dict[str, Path]) -> dict[str, Path]:
    """Builds that produced the same wheel (abi3 found from the tags): keep the oldest Python's.

    With abi = "auto" the tag is remembered, so the next build runs once (recognised from the wheel).
    """
    seen: dict[str, str] = {}
    for py in sorted(built, key=_minor):
        seen.setdefault(built[py].name, py)
    if cfg.abi == "auto" and detect_abi(cfg.project_dir) is None:
        from packaging.utils import parse_wheel_filename

        was = _remembered(cfg.project_dir)
        abis = {t.abi for py in seen.values() for t in parse_wheel_filename(built[py].name)[3]}
        mode = "abi3" if abis == {"abi3"} else "py3" if abis == {"none"} else None
        _remember(cfg.project_dir, mode)
        if was and mode is None:  # built once on an earlier build's word; the project changed since
            raise BuildError(
                f"an earlier build gave a {was} wheel, this one is per-Python "
                f"({', '.join(sorted(w.name for w in built.values()))})",
                "run the build again: it now builds every configured Python",
            )
        if mode and len(built) > len(seen):
            console.info(f'the wheel is {mode}: later builds run once (set abi = "{mode}" to say so)')
    return {py: built[py] for py in seen.values()}


def check_metadata(cfg: Config, built: dict[str, Path]) -> None:
    """Every wheel's METADATA names the project with one version, as its filename does, and that version
    is the known one where there is one (static [project], the backend's answer config took, a release's
    plan); exit 4 naming the wheel.

    Read from the wheels themselves, never by asking the backend again: where it has no metadata hook
    (meson-python) that is a second full build (114 s beside a 54 s wheel), in an environment that may
    lack the build's tools."""
    from packaging.utils import canonicalize_name, parse_wheel_filename

    where = "the planned version (from the build backend)" if cfg.version_dynamic else "pyproject.toml"
    known = (str(cfg.version), where) if cfg.version is not None else None
    for py in sorted(built, key=_minor):
        wheel = built[py]
        name, version = wheel_identity(wheel)
        fname, fversion, _, _ = parse_wheel_filename(wheel.name)
        if canonicalize_name(name) != fname or not _same_version(version, str(fversion)):
            raise BuildError(
                f"{wheel.name} holds METADATA for {name} {version}, not what its filename says",
                "the build backend wrote an inconsistent wheel: rebuild, and report it to the backend",
            )
        if cfg.name and canonicalize_name(name) != canonicalize_name(cfg.name):
            named = "pyproject.toml" if cfg.metadata_source == "pyproject" else "the build backend's metadata"
            raise BuildError(f"{wheel.name} is {name}, but {named} names {cfg.name}", _CHANGED)
        if known is not None and not _same_version(version, known[0]):
            raise BuildError(f"{wheel.name} is {name} {version}, but {known[1]} says {known[0]}", _CHANGED)
        known = known or (version, f"the wheel for Python {py} built in the same run")


_CHANGED = "the version must not change during a build (setup.py reading the clock or git?)"


def _same_version(a: str, b: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def wheel_identity(wheel: Path) -> tuple[str, str]:
    """(Name, Version) from a built wheel's .dist-info/METADATA; BuildError when it has none."""
    import zipfile

    from kestrel_release.artifacts import core_metadata

    try:
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            if len(names) != 1:
                raise BuildError(f"{wheel.name} holds {len(names)} .dist-info/METADATA files, not one")
            headers = core_metadata.headers(zf.read(names[0]))
    except (OSError, zipfile.BadZipFile) as exc:
        raise BuildError(f"cannot read {wheel.name}: {exc}") from None
    name, version = headers.get("Name"), headers.get("Version")
    if not name or not version:
        raise BuildError(f"{wheel.name}'s METADATA has no Name or Version")
    return str(name).strip(), str(version).strip()


def wanted_floor(cfg: Config) -> tuple[int, int] | None:
    """The glibc the wheel must install on: build.min_glibc, else an explicit build.plat's."""
    from kestrel_release.adapters.glibc_floor import plat_floor

    if cfg.build.min_glibc:
        major, minor = cfg.build.min_glibc.split(".")
        return int(major), int(minor)
    return plat_floor(cfg.build.plat) if cfg.build.plat != "auto" else None


class FloorTooHighError(BuildError):
    """The repaired wheel's tag is above build.min_glibc (replaced by check_floor's explanation)."""


def check_min_glibc(cfg: Config, final: Path) -> None:
    """After repair (plat auto picks the best tag): is that tag within build.min_glibc?"""
    wanted = wanted_floor(cfg)
    floor = glibc_facts(final.name).get("glibc_floor")
    if wanted and floor and tuple(int(p) for p in floor.split(".")) > wanted:
        raise FloorTooHighError(f"{final.name} needs glibc {floor}")


@contextlib.contextmanager
def floor_explained(cfg: Config, wheel: Path, log: Path) -> Iterator[None]:
    """When repair fails or the tag is above the floor, and the floor is why: exit 4 naming the symbols.

    auditwheel's own analysis runs only on this failure path, so a good build pays nothing for it.
    """
    try:
        yield
    except BuildError as exc:
        if wanted_floor(cfg) is None or _jobs_stopping():
            raise
        check_floor(cfg, wheel, log)  # raises the explained error when the floor is the cause
        if isinstance(exc, FloorTooHighError):  # analysis disagrees with the tag: still refuse
            raise BuildError(str(exc) + f", above the configured floor {cfg.build.min_glibc}") from None
        raise


def _jobs_stopping() -> bool:
    from kestrel_release.process import proc

    return proc.stopping()


def check_floor(cfg: Config, wheel: Path, log: Path) -> None:
    """BuildError (exit 4) when the wheel cannot meet the configured floor, naming the symbols."""
    from kestrel_release.adapters import glibc_floor
    from kestrel_release.stages.verify.native import floor_text

    wanted = wanted_floor(cfg)
    if wanted is None:
        return
    found = glibc_floor.analyze(wheel, wanted, cfg.build.exclude, log)
    if found.floor is not None and found.floor <= wanted:
        return
    what = f"build.min_glibc = {cfg.build.min_glibc}" if cfg.build.min_glibc else f"build.plat = {cfg.build.plat}"
    symbols = ", ".join(found.symbols[:6]) + (f" and {len(found.symbols) - 6} more" if len(found.symbols) > 6 else "")
    why = f"symbols {symbols} raise it" if symbols else "auditwheel's policy analysis (see the log) raises it"
    best = f"{found.floor[0]}.{found.floor[1]}" if found.floor else "?"
    raise BuildError(
        f"{wheel.name} needs glibc {best} ({found.policy}), above {what}: {why}"
        + (f"; {floor_text(found.floor)}" if found.floor else ""),
        "build in a manylinux image (e.g. PyTorch's pytorch/manylinux2_28-builder images) or with an "
        "older toolchain, or raise the floor",
    )


def torch_record(python: Path | None) -> dict | None:
    """torch version, CUDA and C++ ABI in the build's Python (a child imports torch, never the tool)."""
    from kestrel_release.adapters import torch_probe

    return torch_probe.probe(python)


def glibc_facts(filename: str) -> dict:
    """The floor of a built wheel (from its tag) and the distributions that can install it."""
    from packaging.utils import parse_wheel_filename

    from kestrel_release.stages.verify.native import glibc_floor, installs_on

    floor = glibc_floor([str(t) for t in parse_wheel_filename(filename)[3]])
    if floor is None:
        return {}
    return {"glibc_floor": f"{floor[0]}.{floor[1]}", "installs_on": installs_on(floor)[0]}
