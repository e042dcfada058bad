"""Which configured Pythons a set of wheels covers, per platform (abi3, abi3t and py3 aware).

`cp312-cp312` covers 3.12 only and `cp314-cp314t` the free-threaded 3.14t only; `cp310-abi3` covers
every regular CPython >= 3.10 but no free-threaded one; `cp315-abi3t` every free-threaded CPython
>= 3.15t; `py3-none` covers every Python 3 and `py310-none` every Python >= 3.10 (packaging's tags:
pyversions.serves). A configured Python an open-ended wheel does not reach stays uncovered, and says why.
"""

from __future__ import annotations

from kestrel_release.facts import pyversions
from kestrel_release.stages.verify.finding import Finding


def covered_by(tag: str, pythons: tuple[str, ...]) -> tuple[set[str], int | None]:
    """(configured Pythons this tag installs on, the minor floor when it is an open-ended tag).

    A tag for one Python only (cp312-cp312, cp314-cp314t) names that Python even when the
    configuration does not list it (the matrix warns about it)."""
    interp, abi, _plat = tag.split("-")
    floor = pyversions.floor(interp, abi)
    served = {py for py in pythons if pyversions.serves(interp, abi, py)}
    if floor is None and not served:
        own = pyversions.parse(abi if abi.startswith("cp") else interp, loose=True)
        served = {own.name} if own else set()
    return served, floor


def _why_not(py: str, open_tags: list[str]) -> str:
    """Why the open-ended tags seen on a platform leave `py` out: " (cp310-abi3 ...)" or ""."""
    target = pyversions.parse(py)
    reasons = []
    for tag in sorted(set(open_tags)):
        interp, abi = tag.split("-")
        floor = pyversions.floor(interp, abi) or 0
        if target is not None and target.free_threaded and abi == "abi3":
            reasons.append(f"{tag} does not serve free-threaded builds; an abi3t wheel would")
        elif target is not None and not target.free_threaded and abi == "abi3t":
            reasons.append(f"{tag} serves free-threaded builds only")
        elif target is not None and floor > target.minor:
            reasons.append(f"{tag} starts above it")
    return f" ({'; '.join(reasons)})" if reasons else ""


def check(
    wheels: list,
    pythons: tuple[str, ...],
    platforms: tuple[str, ...] = (),
    required: tuple[str, ...] | None = None,
    partial: bool = False,
) -> list[Finding]:
    """Every configured Python covered by exactly one wheel on every platform of the set.

    With `platforms` (the configured ones), wheels are grouped by the configured platform their
    tag serves (platforms.covers) and each of `required` (default: all of them) must be
    covered: a platform without wheels is one `matrix` finding per Python, an error unless
    `partial` (one machine's build before `assemble`).
    """
    required = platforms if required is None else required
    by_plat: dict[str, dict[str, list[str]]] = {}
    floors: dict[str, list[str]] = {}  # platform -> open-ended tags seen ("cp310-abi3")
    unlisted: set[str] = set()
    names = _platform_names(wheels) if not platforms else {}
    for w in wheels:
        # One wheel is one cell covering its whole tag set (py2.py3-none-manylinux1_x86_64.manylinux_2_28_x86_64
        # expands to four tags): its Pythons are the union over the set, its platforms one key.
        plats = sorted({tag.rsplit("-", 1)[-1] for tag in w.tags})
        keys = _wheel_keys(plats, platforms, required) if platforms else [names[w.filename]]
        if platforms and not _wheel_keys(plats, platforms, platforms):
            unlisted.add(".".join(plats))
        served: set[str] = set()
        for tag in w.tags:
            tag_served, floor = covered_by(tag, pythons)
            served |= tag_served
            if floor is not None:
                for key in keys:
                    floors.setdefault(key, []).append("-".join(tag.split("-")[:2]))
        for key in keys:
            for py in served:
                files = by_plat.setdefault(key, {}).setdefault(py, [])
                if w.filename not in files:
                    files.append(w.filename)
    out: list[Finding] = _missing_platforms(by_plat, pythons, required, partial) if platforms else []
    out += [
        Finding("matrix", "warning", "", f"wheels for {plat}, which `platforms` does not list")
        for plat in sorted(unlisted)
    ]
    many = len(by_plat) > 1 or bool(platforms)
    for plat, covered in sorted(by_plat.items()):
        where = f" on {plat}" if many else ""
        for py in pythons:
            if py not in covered:
                why = _why_not(py, floors.get(plat, []))
                on = f" on a {plat} machine" if platforms else ""
                out.append(
                    Finding(
                        "matrix",
                        "error",
                        "",
                        f"no wheel for Python {py}{where}{why}: build it{on} (kestrel-release build --python {py})",
                    )
                )
            elif len(covered[py]) > 1:
                out.append(
                    Finding(
                        "matrix",
                        "error",
                        "",
                        f"{len(covered[py])} wheels for Python {py}{where}: keep one ({', '.join(covered[py])})",
                    )
                )
        for py in sorted(set(covered) - set(pythons), key=pyversions.sort_key):
            out.append(
                Finding("matrix", "warning", "", f"a wheel for Python {py}, which the configuration does not list")
            )
    if not by_plat and not platforms:
        out += [
            Finding("matrix", "error", "", f"no wheel for Python {py}: build it (kestrel-release build --python {py})")
            for py in pythons
        ]
    return out


def _platform_names(wheels: list) -> dict[str, str]:
    """filename -> the name of its platform when no platforms are configured: wheels whose platform
    tag sets share a tag are one platform, named by the set's tags joined as a compressed tag."""
    groups: list[set[str]] = []
    for w in wheels:
        plats = {tag.rsplit("-", 1)[-1] for tag in w.tags}
        touching = [g for g in groups if g & plats]
        merged = plats.union(*touching)
        groups = [g for g in groups if not g & plats] + [merged]
    out = {}
    for w in wheels:
        plats = {tag.rsplit("-", 1)[-1] for tag in w.tags}
        group = next((g for g in groups if g & plats), plats)
        out[w.filename] = ".".join(sorted(group))
    return out


def _wheel_keys(plats: list[str], platforms: tuple[str, ...], required: tuple[str, ...]) -> list[str]:
    """The configured platforms a wheel with these platform tags counts for: those it names exactly,
    else every one any of its tags serves."""
    exact = [p for p in plats if p in platforms]
    if exact:
        return [p for p in exact if p in required]
    return sorted({key for plat in plats for key in _keys(plat, platforms, required)})


def _keys(plat: str, platforms: tuple[str, ...], required: tuple[str, ...]) -> list[str]:
    """The configured platforms a wheel tag counts for: its own when it is one of them (two glibc
    flavours of x86_64 are two platforms, each with its wheels), else every one it serves."""
    from kestrel_release.platforms import covers

    if plat in platforms:
        return [plat] if plat in required else []
    if plat == "any":  # a pure wheel installs everywhere
        return list(required)
    return [c for c in required if covers(plat, c)]


def _missing_platforms(
    by_plat: dict, pythons: tuple[str, ...], required: tuple[str, ...], partial: bool
) -> list[Finding]:
    """A configured platform without any wheel: each of its Pythons, named. Expected in one
    machine's build before `assemble` (a warning with `partial`), never in a release."""
    out = []
    for plat in required:
        if plat in by_plat:
            continue
        for py in pythons:
            if partial:
                out.append(
                    Finding(
                        "matrix",
                        "warning",
                        "",
                        f"no wheel for Python {py} on {plat}: left for another "
                        "machine (expected before `kestrel-release assemble`)",
                    )
                )
            else:
                out.append(
                    Finding(
                        "matrix",
                        "error",
                        "",
                        f"no wheel for Python {py} on {plat}: build it on a {plat} "
                        "machine (or let `ci init`'s workflow do it) and `kestrel-release assemble` the "
                        "outputs; to check one machine's build alone, `verify --partial` or --platform",
                    )
                )
    return out
