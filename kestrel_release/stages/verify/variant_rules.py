"""verify's rules for torch x CUDA variant wheels (the manifest entry's `variant` record says which).

A torch extension is bound to the torch minor it was built against and to its CUDA major, so a
variant wheel must say so and be so: its METADATA pins `torch==X.Y.*` of its variant
(`variant-torch-pin`), and the CUDA libraries its binaries load (DT_NEEDED libcudart.so.13, ...) are
its toolkit's major (`variant-cuda-major`). Across variants no filename may be shipped twice with
other bytes (`variant-filename`): two variants' wheels of one name would overwrite each other on
an index. PyPI's refusal of `+cu130` local versions is the `local-version` rule (rules.check_target).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kestrel_release.output_dir import manifest
from kestrel_release.stages.verify.finding import Finding

PIN = "variant-torch-pin"
CUDA = "variant-cuda-major"
CLASH = "variant-filename"
# CUDA libraries whose soname major is the CUDA major (cuFFT, cuRAND, cuSPARSE, cuSOLVER number theirs apart).
_SAME_MAJOR = re.compile(r"lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.(\d+)$")


def entry(path: Path) -> dict[str, Any] | None:
    """The release manifest beside `path`, when its entry for this wheel carries a variant record."""
    found = manifest.for_wheel(path)
    if found is None:
        return None
    data = found[1]
    row = data.wheel(path.name)
    if row is None or row.variant is None:
        return None
    return {"variant": row.variant, "version": data.version, "package": data.package}


def wheel_findings(record: dict[str, Any], requires: list[str], needed: dict[str, list[str]]) -> list[Finding]:
    """The pin and CUDA-major rules for one wheel of variant `record` (its METADATA Requires-Dist, and
    each binary's DT_NEEDED)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    variant = record["variant"]
    torch, cuda = str(variant.get("torch", "")), str(variant.get("cuda", ""))
    out: list[Finding] = []
    pins = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == "torch" and req.marker is None:
            pins.append(str(req.specifier))
    stable = str(variant.get("stable_abi") or "")
    if stable and pins != [f">={stable}"]:
        found = ", ".join(f"torch{p}" for p in pins) or "no torch requirement"
        out.append(
            Finding(
                PIN,
                "error",
                "METADATA",
                f"built for the torch {stable} stable ABI ({variant.get('name')}) but requires {found}: it must "
                f"require torch>={stable} (it loads on every torch from {stable} up, and on none before); rebuild it",
            )
        )
    elif not stable and pins != [f"=={torch}.*"]:
        found = ", ".join(f"torch{p}" for p in pins) or "no torch requirement"
        out.append(
            Finding(
                PIN,
                "error",
                "METADATA",
                f"built against torch {torch} ({variant.get('name')}) but requires {found}: it must pin "
                f"torch=={torch}.* (an extension is bound to the torch minor it was built against); rebuild it",
            )
        )
    major = cuda.split(".")[0]
    for member, libs in sorted(needed.items()):
        for lib in libs:
            m = _SAME_MAJOR.match(lib)
            if m and m.group(2) != major:
                out.append(
                    Finding(
                        CUDA,
                        "error",
                        member,
                        f"needs {lib} (CUDA {m.group(2)}) but is the CUDA {cuda} variant ({variant.get('name')}): "
                        f"build it with CUDA {major}'s toolkit and a torch of that CUDA",
                    )
                )
    return out


def set_findings(reports: list[Any], records: dict[Path, dict[str, Any]]) -> list[Finding]:
    """No filename shipped by two variants with different bytes (the same bytes twice: the default
    variant's wheels also in the output's root)."""
    seen: dict[str, dict[str, str]] = {}  # filename -> sha256 -> variant name
    for w in reports:
        record = records.get(w.path)
        if record is None:
            continue
        seen.setdefault(w.filename, {})[w.sha256] = str(record["variant"].get("name"))
    out = []
    for filename, by_bytes in sorted(seen.items()):
        if len(by_bytes) > 1:
            names = ", ".join(sorted(set(by_bytes.values())))
            out.append(
                Finding(
                    CLASH,
                    "error",
                    filename,
                    f"shipped by several variants with different bytes ({names}): one index would hold only one "
                    "of them; give each variant its own version (naming = 'local') or project (package-suffix)",
                )
            )
    return out


def groups(reports: list[Any], records: dict[Path, dict[str, Any]]) -> dict[str, list[Any]]:
    """The reports by variant ("" for plain wheels): each variant is its own release (one version)."""
    out: dict[str, list[Any]] = {}
    for w in reports:
        record = records.get(w.path)
        out.setdefault(str(record["variant"].get("name")) if record else "", []).append(w)
    return out


def unique(reports: list[Any]) -> list[Any]:
    """One report per (filename, bytes): the default variant's wheels are also in the output's root."""
    seen: dict[tuple[str, str], Any] = {}
    for w in reports:
        seen.setdefault((w.filename, w.sha256), w)
    return list(seen.values())


def pythons(cfg: Any) -> tuple[str, ...]:
    """The Pythons each variant covers: variants.python within python."""
    only = cfg.variants.python if cfg.variants else ()
    return tuple(p for p in cfg.python if not only or p in only) or cfg.python


def check_sets(
    cfg: Any,
    reports: list[Any],
    records: dict[Path, dict[str, Any]],
    target: str,
    plan: str | None,
    platforms: tuple[str, ...],
    required: tuple[str, ...] | None,
    partial: bool,
    index: bool = True,
) -> list[Finding]:
    """rules.check_set on each release among the wheels (each variant its own: one name and version),
    then the rule across variants."""
    from kestrel_release.stages.verify import rules

    found: list[Finding] = []
    for group in groups(reports, records).values():
        release = records.get(group[0].path)
        found += rules.check_set(
            unique(group),
            pythons(cfg) if release else cfg.python,
            target,
            cfg.verify.project_size_budget,
            (release["package"], release["version"]) if release else (cfg.name, plan),
            platforms,
            required,
            partial,
            index=index,
        )
    return found + set_findings(reports, records)
