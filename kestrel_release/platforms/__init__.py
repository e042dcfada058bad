"""Platforms: one module per OS family behind one protocol (base.OSPlatform), and this registry,
the one list of them (cibuildwheel's platforms/ is the model).

Everything that depends on the OS a wheel is for asks here: config validation (`problems`),
build's per-host plan (`buildable`, `for_system(...).build_env`), repair (`for_system(...).repair`, the tool's name; adapters/repair.for_system runs it), ci
init's runners (`runner_key`, `ci_runner`), verify's matrix and explain (`covers`), doctor.
Adding a platform is one module and one line in REGISTRY. Pure, below the stages.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from kestrel_release.errors import UsageError
from kestrel_release.platforms import linux, macos, windows
from kestrel_release.platforms.base import OSPlatform, Platform

if TYPE_CHECKING:
    from kestrel_release.platforms.base import Host

__all__ = [
    "CI_EXAMPLES",
    "EXAMPLES",
    "REGISTRY",
    "OSPlatform",
    "Platform",
    "buildable",
    "ci_plat",
    "ci_runner",
    "covers",
    "for_sys_platform",
    "for_system",
    "for_tag",
    "host_tag",
    "parse",
    "problems",
    "pypi_accepts",
    "runner_key",
    "systems",
]

REGISTRY: dict[str, OSPlatform] = {p.system: p for p in (linux.PLATFORM, windows.PLATFORM, macos.PLATFORM)}
# The running system when no platform claims its sys.platform (another Unix): read as Linux, glibc else musl.
HOST_FALLBACK = linux.PLATFORM

EXAMPLES = ", ".join(tag for p in REGISTRY.values() for tag in p.examples)
CI_EXAMPLES = ", ".join(tag for p in REGISTRY.values() for tag in p.ci_examples)


def for_system(system: str) -> OSPlatform:
    """The OS family module for a system name ("linux", "windows", "macos"; Host.system)."""
    try:
        return REGISTRY[system]
    except KeyError:
        raise ValueError(f"no platform {system!r} (known: {', '.join(REGISTRY)})") from None


def systems() -> tuple[str, ...]:
    """The OS names a variant's `os` and Host.system take, in registry order."""
    return tuple(REGISTRY)


def pypi_accepts(tag: str) -> bool:
    """Does PyPI accept a wheel of platform tag `tag` (warehouse's list: `any`, and each OS's own)?"""
    return _pypi_pattern(tuple(p.pypi_tags for p in REGISTRY.values() if p.pypi_tags)).match(tag) is not None


@functools.lru_cache(maxsize=4)
def _pypi_pattern(fragments: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"^(any|{'|'.join(fragments)})$")


def for_sys_platform(sys_platform: str) -> OSPlatform:
    """The OS family of a `sys.platform` value (adapters/host: the running system)."""
    found = (p for p in REGISTRY.values() if p.sys_platform and sys_platform.startswith(p.sys_platform))
    return next(found, HOST_FALLBACK)


def variant_word(system: str) -> str:
    """How kernel-builder names OS `system` in a variant's name (config/variants)."""
    os_ = REGISTRY.get(system)
    return (os_.variant_word or os_.system) if os_ is not None else system


def parse(name: str) -> Platform | None:
    """A wheel platform tag (or a sysconfig platform name) as a Platform; None if no OS knows it."""
    return next((p for os_ in REGISTRY.values() if (p := os_.parse(name)) is not None), None)


def for_tag(name: str) -> OSPlatform:
    """The OS family a platform tag belongs to (ValueError when none)."""
    p = parse(name)
    if p is None:
        raise ValueError(f"no platform for the tag {name!r}")
    return REGISTRY[p.system]


def problems(names: tuple[str, ...]) -> list[str]:
    """Configuration problems of a `platforms` list (config.load reports them, exit 2)."""
    out = [f"platforms: '{n}' is not a wheel platform tag (e.g. {EXAMPLES})" for n in names if parse(n) is None]
    dupes = sorted({n for n in names if names.count(n) > 1})
    out += [f"platforms: '{n}' is listed twice" for n in dupes]
    return out


def covers(wheel_platform: str, configured: str) -> bool:
    """Does a wheel tagged `wheel_platform` install wherever the configured platform does?

    The same family and CPU, and a floor at or below the configured one: a manylinux_2_17 wheel
    serves a manylinux_2_28 platform, a macosx_11_0_arm64 wheel a macosx_14_0_arm64 one, and a
    universal2 wheel either macOS CPU.
    """
    w, c = parse(wheel_platform), parse(configured)
    if w is None or c is None or w.family != c.family or not set(c.arches) <= set(w.arches):
        return False
    return c.floor is None or w.floor is None or w.floor <= c.floor


def buildable(p: Platform, host: Host) -> str | None:
    """None when this host can produce wheels for `p`; else why not (one phrase)."""
    os_ = REGISTRY[p.system]
    if p.system != host.system or not os_.runs_on(p, host.arch):
        return f"needs a {p.system} {'/'.join(os_.arch_word(a) for a in sorted(p.arches))} machine"
    return os_.host_problem(p, host)


def host_tag(host: Host) -> str:
    """The most specific platform tag `host` installs."""
    return for_system(host.system).host_tag(host)


def _ci_platform(name: str) -> tuple[OSPlatform, Platform, str]:
    p = parse(name)
    arch = p.arches[0] if p is not None and len(p.arches) == 1 else None
    os_ = REGISTRY[p.system] if p is not None else None
    if p is None or os_ is None or arch not in os_.runners:
        raise UsageError(f"platforms: '{name}' is not a platform this workflow can build on", f"use e.g. {CI_EXAMPLES}")
    return os_, p, arch


def runner_key(name: str) -> str:
    """'linux-x86_64', 'windows-arm64', 'macos-arm64'...: the CI runner family that builds `name`
    (a wheel platform tag or a sysconfig platform); UsageError for one no hosted or GPU runner builds."""
    os_, p, arch = _ci_platform(name)
    return f"{p.system}-{os_.arch_word(arch)}"


def ci_runner(name: str, cuda: bool, gpu_labels: tuple[str, ...]) -> str | list[str]:
    """The runs-on of the CI job that builds `name` (cuda: the build needs a GPU runner)."""
    os_, _p, arch = _ci_platform(name)
    return os_.ci_runner(arch, cuda, gpu_labels)


def ci_plat(name: str) -> str | None:
    """The tag the CI job for `name` passes as build.plat; None = the runner's own platform."""
    p = parse(name)
    return REGISTRY[p.system].ci_plat(p) if p is not None else None
