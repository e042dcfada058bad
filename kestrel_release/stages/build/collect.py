"""Moving the built wheels into the staging output with their manifest entries and SHA256SUMS.

A variant build (variant_build.py) makes each wheel its variant wheel here, before it is hashed, and
records the variant and the torch it was built against in each entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from kestrel_release import __version__, built_with, fsutil, manifest
from kestrel_release.adapters import git
from kestrel_release.config_model import Config
from kestrel_release.stages.build import native as build_native
from kestrel_release.stages.build import platforms as build_platforms
from kestrel_release.stages.build import precompile
from kestrel_release.stages.build import variant_build as _variant
from kestrel_release.stages.build.plan import Plan


def collect(
    cfg: Config,
    plan: Plan,
    built: dict[str, Path],
    pre: precompile.PrecompileResult,
    out: Path,
    plats: build_platforms.PlatformPlan,
    variant: _variant.VariantRun | None = None,
) -> list[dict]:
    from packaging.utils import parse_wheel_filename

    out.mkdir()
    wheels = []
    version = cfg.version or version_of([{"filename": w.name} for w in built.values()])
    for py, wheel in sorted(built.items()):
        final = out / wheel.name
        os.replace(wheel, final)
        if variant is not None:  # torch pinned, +cuXYZ or <name>-cuXY: METADATA, RECORD and filename together
            final = _variant.finish_wheel(cfg, variant, final, version or "", plan.source_date_epoch)
        _, _, _, tags = parse_wheel_filename(final.name)
        wheels.append(
            {
                "filename": final.name,
                "python": py,
                "python_tag": ".".join(sorted({t.interpreter for t in tags})),
                "platform_tag": ".".join(sorted({t.platform for t in tags})),
                "size": final.stat().st_size,
                "sha256": fsutil.sha256_file(final),
                **build_native.glibc_facts(final.name),
                **({"platform": plats.build} if plats.build else {}),
                **({"variant": variant.record(), "torch": plan.tool_versions.get("torch")} if variant else {}),
            }
        )
    state = git.state(cfg.project_dir)
    manifest.save(
        out,
        {
            "package": variant.package(cfg.name) if variant else cfg.name,
            "version": variant.version(version or "") if variant else cfg.version or version_of(wheels),
            **({"variant": variant.record()} if variant else {}),
            "git": {"commit": state.commit, "dirty": state.dirty},
            "source_date_epoch": plan.source_date_epoch,
            "toolchain": {**plan.toolchain(), "kestrel-release": __version__},
            "builder": manifest.builder(),  # assemble records which machine / CI job built each wheel
            "wheels": wheels,
            "kernels": pre.kernels,
            "platforms": plats.to_json(),  # what this machine built, and the pairs left for others
            built_with.KEY: built_with.record(cfg.project_dir),  # verify and publish compare it with now
        },
    )
    manifest.sign_sums(manifest.write_sums(out, wheels), cfg.sign_key, cfg.project_dir)
    return wheels


def version_of(wheels: list[dict]) -> str | None:
    return wheels[0]["filename"].split("-")[1] if wheels else None
