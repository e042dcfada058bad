"""The configured platforms (`platforms = [...]`): what a wheel platform tag means, which of them
this host can build, and what is left for other machines.

A release covers platforms x Pythons; each platform's binaries can only be built on that
platform, so `build` builds the one this host can produce and names the rest (build them on
such a machine, or let `ci init`'s workflow do it, then `kestrel-release assemble`). verify's
matrix reads the same definitions (`covers`) to check completeness per platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kestrel_release import platforms
from kestrel_release.adapters.host import Host
from kestrel_release.errors import PreflightError, UsageError

# Re-exported for build and its tests; the platforms themselves live in kestrel_release/platforms.
from kestrel_release.platforms import EXAMPLES, Platform, buildable, covers, parse, problems  # noqa: F401
from kestrel_release.records import documents
from kestrel_release.records.build_documents import LeftDocument, PlatformsDocument

if TYPE_CHECKING:
    from kestrel_release.config.model import Config


@dataclass
class PlatformPlan:
    configured: tuple[str, ...]  # () = this machine's platform only
    build: str | None  # the configured platform built here; None = this machine's (no `platforms`)
    left: list[dict] = field(default_factory=list)  # [{"platform", "python", "why"}]

    def left_pairs(self) -> list[tuple[str, str]]:
        return [(row["platform"], row["python"]) for row in self.left]

    def left_documents(self) -> list[LeftDocument]:
        return [LeftDocument(row["platform"], row["python"], row["why"]) for row in self.left]

    def document(self) -> PlatformsDocument:
        return PlatformsDocument(list(self.configured), self.build, self.left_documents())

    def to_json(self) -> dict[str, Any]:  # the manifest's `platforms`
        return documents.to_json(self.document())


def plan(
    configured: tuple[str, ...], pythons: tuple[str, ...], host: Host, narrow: tuple[str, ...] = (), plat: str = "auto"
) -> PlatformPlan:
    """Which configured platform to build here (one per run) and which pairs are left for others.

    `narrow`: --platform; an explicit build.plat (what `ci init`'s jobs set) that names a
    configured platform narrows too. Among several buildable flavours of one CPU (two manylinux
    glibc floors), the highest floor this host meets is its own: a lower one holds only if the
    code uses no newer symbols (build it in an older manylinux image, or name it with --platform).
    """
    if not configured and not narrow:
        return PlatformPlan((), None)
    configured = configured or narrow
    for name in narrow:
        if name not in configured:
            raise UsageError(
                f"--platform {name} is not one of the configured platforms ({', '.join(configured)})",
                "add it to `platforms` in [tool.kestrel-release], or pick a listed one",
            )
    if not narrow and plat != "auto":  # build.plat names the platform (`ci init`'s jobs set it)
        served = [c for c in configured if c == plat or covers(plat, c)]
        if not served:
            raise UsageError(
                f"build.plat {plat} is not one of the configured platforms ({', '.join(configured)})",
                "add it to `platforms`, or pick one with --platform",
            )
        narrow = (served[0] if plat not in configured else plat,)
    parsed = {name: parse(name) for name in configured}
    why = {name: buildable(p, host) for name, p in parsed.items() if p is not None}
    if narrow:
        bad = [n for n in narrow if why.get(n)]
        if bad:
            raise PreflightError(
                f"cannot build {bad[0]} on this {host.describe()} host: it {why[bad[0]]}",
                "run `kestrel-release build` on such a machine (or let `ci init`'s workflow "
                "do it), then `kestrel-release assemble` the outputs",
            )
        if len(narrow) > 1:
            raise UsageError(
                f"--platform names {len(narrow)} platforms; build makes one per run",
                "run build once per platform with separate --out directories, then `kestrel-release assemble` them",
            )
        chosen = narrow[0]
    else:
        candidates = [n for n in configured if not why.get(n)]
        if not candidates:
            listed = "; ".join(f"{n} {why[n]}" for n in configured)
            raise PreflightError(
                f"none of the configured platforms can be built on this {host.describe()} host ({listed})",
                "run `kestrel-release build` on those machines (or let `ci init`'s "
                "workflow do it), then `kestrel-release assemble` the outputs",
            )
        chosen = max(candidates, key=lambda n: parsed[n].floor or (0, 0))  # type: ignore[union-attr]
    left = [
        {"platform": name, "python": py, "why": why.get(name) or _same_host_why(name, chosen)}
        for name in configured
        if name != chosen
        for py in pythons
    ]
    return PlatformPlan(tuple(configured), chosen, left)


def _same_host_why(name: str, chosen: str) -> str:
    return (
        f"one platform per build run ({chosen} here); build it with --platform {name} "
        "in an environment that meets its floor"
    )


def repair_plat(chosen: str | None, plat: str) -> str:
    """The repair target for the platform built here: its own tag where its platform repairs to one
    (manylinux/musllinux, as `ci init`'s jobs pass it), else build.plat unchanged."""
    p = parse(chosen) if chosen else None
    return (platforms.for_system(p.system).repair_target(p) if p is not None else None) or plat


def hint(left: list[dict]) -> str:
    """The one line that says how the rest of the release gets built."""
    plats = list(dict.fromkeys(row["platform"] for row in left))
    return (
        f"left for other machines: {', '.join(plats)} — run `kestrel-release build` on such a machine "
        "(or let `ci init`'s workflow do it), then `kestrel-release assemble` the outputs"
    )


def for_build(cfg: Config, plats: PlatformPlan, environ: Mapping[str, str] | None = None) -> Config:
    """cfg with build.plat set to the chosen platform's repair target, and for macOS the build env
    that makes the wheel's tag the configured one (see macos_env)."""
    import dataclasses
    import os

    plat = repair_plat(plats.build, cfg.build.plat)
    env = {**macos_env(plats.build, {**(os.environ if environ is None else environ), **cfg.build.env}), **cfg.build.env}
    if plat == cfg.build.plat and env == cfg.build.env:
        return cfg
    return dataclasses.replace(cfg, build=dataclasses.replace(cfg.build, plat=plat, env=env))


def macos_env(chosen: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The build environment the chosen platform needs so the wheel carries its tag (macOS: the
    deployment target and CPUs, platforms/macos.py). What the user set (environment or build.env) is kept."""
    p = parse(chosen) if chosen else None
    return platforms.for_system(p.system).build_env(p, environ) if p is not None else {}


def check_built(plats: PlatformPlan, filenames: list[str]) -> None:
    """Every wheel built here serves the platform it was built for (BuildError, exit 4): a macOS
    deployment target above the configured one, or a repair that picked another tag. Pure wheels
    (`any`) serve every platform: nothing is left for other machines then."""
    from packaging.utils import parse_wheel_filename

    from kestrel_release.errors import BuildError

    chosen = plats.build
    if not chosen:
        return
    if filenames and all({t.platform for t in parse_wheel_filename(n)[3]} == {"any"} for n in filenames):
        plats.left = []
        return
    for name in filenames:
        tags = {t.platform for t in parse_wheel_filename(name)[3]}
        if "any" not in tags and not any(covers(t, chosen) for t in tags):
            raise BuildError(
                f"{name} was built for {', '.join(sorted(tags))}, which does not serve the configured "
                f"platform {chosen}",
                "build in an environment that meets that platform's floor "
                "(macOS: set MACOSX_DEPLOYMENT_TARGET; Linux: an older manylinux image)",
            )


def render_left(plats: PlatformPlan) -> None:
    """What this run built, and the platform x Python pairs other machines must build."""
    from kestrel_release.ui import console

    if plats.build and plats.configured:
        console.info(f"built for {plats.build} (platforms: {', '.join(plats.configured)})")
    by_plat: dict[str, list[str]] = {}
    for row in plats.left:
        by_plat.setdefault(row["platform"], []).append(row["python"])
    for name, pys in by_plat.items():
        why = next(r["why"] for r in plats.left if r["platform"] == name)
        console.info(f"  left: {name} x Python {', '.join(pys)} ({why})")
    if plats.left:
        console.info(hint(plats.left))


def check_release_here(cfg: Config) -> None:
    """`release` builds on this machine only: with platforms it cannot build, refuse before any bump
    (exit 2) and say how such a release is made."""
    if not cfg.platforms:
        return
    from kestrel_release.adapters import host

    plats = plan(cfg.platforms, cfg.python, host.current(), plat=cfg.build.plat)
    if plats.left:
        names = ", ".join(dict.fromkeys(row["platform"] for row in plats.left))
        raise UsageError(
            f"release builds on this machine only, and `platforms` also lists {names}",
            "build each platform on its machine (or let `ci init`'s workflow do it), "
            "`kestrel-release assemble DIR... --out OUT`, then `kestrel-release release --from OUT`",
        )
