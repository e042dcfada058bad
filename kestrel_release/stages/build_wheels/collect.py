"""Moving the built wheels into the staging output with their manifest entries and SHA256SUMS.

A variant build (variant_build.py) makes each wheel its variant wheel here, before it is hashed, and
records the variant and the torch it was built against in each entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from kestrel_release import __version__
from kestrel_release.adapters import git
from kestrel_release.config.model import Config
from kestrel_release.files import fsutil
from kestrel_release.output_dir import built_with, manifest
from kestrel_release.records import serde
from kestrel_release.records.manifest import GitState, Manifest, Wheel
from kestrel_release.stages.build_wheels import native as build_native
from kestrel_release.stages.build_wheels import platforms as build_platforms
from kestrel_release.stages.build_wheels import precompile
from kestrel_release.stages.build_wheels import variant_build as _variant
from kestrel_release.stages.build_wheels.plan import Plan


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
    wheels: list[Wheel] = []
    version = cfg.version or version_of([w.name for w in built.values()])
    for py, wheel in sorted(built.items()):
        final = out / wheel.name
        os.replace(wheel, final)
        if variant is not None:  # torch pinned, +cuXYZ or <name>-cuXY: METADATA, RECORD and filename together
            final = _variant.finish_wheel(cfg, variant, final, version or "", plan.source_date_epoch)
        _, _, _, tags = parse_wheel_filename(final.name)
        glibc = build_native.glibc_facts(final.name)
        wheels.append(
            Wheel(
                filename=final.name,
                python=py,
                python_tag=".".join(sorted({t.interpreter for t in tags})),
                platform_tag=".".join(sorted({t.platform for t in tags})),
                size=final.stat().st_size,
                sha256=fsutil.sha256_file(final),
                glibc_floor=glibc.get("glibc_floor"),
                installs_on=glibc.get("installs_on"),
                platform=plats.build or None,
                variant=variant.record() if variant else None,
                torch=plan.tool_versions.get("torch") if variant else None,
            )
        )
    state = git.state(cfg.project_dir)
    plain = cfg.version or version_of([w.filename for w in wheels]) or ""
    manifest.save(
        out,
        Manifest(
            package=variant.package(cfg.name) if variant else cfg.name,
            version=variant.version(version or "") if variant else plain,
            variant=variant.record() if variant else None,
            git=GitState(state.commit, state.dirty),
            source_date_epoch=plan.source_date_epoch,
            toolchain={**plan.toolchain(), "kestrel-release": __version__},
            builder=manifest.builder(),  # assemble records which machine / CI job built each wheel
            wheels=tuple(wheels),
            kernels=pre.kernels,
            platforms=plats.to_json(),  # what this machine built, and the pairs left for others
            built_with=built_with.record(cfg.project_dir),  # verify and publish compare it with now
        ),
    )
    manifest.sign_sums(manifest.write_sums(out, wheels), cfg.sign_key, cfg.project_dir)
    return [serde.to_json(w) for w in wheels]  # the rows of build's result (and its --json)


def version_of(filenames: list[str]) -> str | None:
    return filenames[0].split("-")[1] if filenames else None
