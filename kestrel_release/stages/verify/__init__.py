"""verify: the gate every wheel passes before publish.

Each wheel is read once (inspect.wheel.read_wheel); integrity, leaks, CUDA
architectures and index acceptance are checked from that single pass, then the
set is checked as a matrix. Without --target the PyPI rules apply, as errors:
a release must be PyPI-acceptable. A clean run records the sha256 of each wheel
in the release manifest, so publish can refuse bytes that changed afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kestrel_release import early
from kestrel_release.artifacts.wheel import WheelError, read_wheel
from kestrel_release.config.model import Config
from kestrel_release.errors import UsageError
from kestrel_release.process import pools
from kestrel_release.stages.verify.finding import Finding
from kestrel_release.stages.verify.leaks import (
    check_cuda,
    check_names,
)
from kestrel_release.stages.verify.report import VerifyReport, WheelReport, raise_for
from kestrel_release.ui import console

# The rules, the verdict store, the matrix and the target registry are imported by the functions that use
# them: the child early.py forks imports this package only to read a wheel (part.py), and each module it
# skips is time it does not spend before the parent needs its answer.


def _default_target() -> str:
    """The target whose rules apply without --target (config_model's: verify never imports the registry)."""
    from kestrel_release.config.model import VERIFY_DEFAULT

    return VERIFY_DEFAULT


SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz")

__all__ = ["Attested", "Finding", "VerifyReport", "WheelReport", "raise_for", "render", "resolve_wheels", "run"]


def resolve_wheels(cfg: Config, paths: list[Path]) -> list[Path]:
    """Wheels to check: the given files, the *.whl of given dirs, else the build output dir."""
    from kestrel_release.output_dir import manifest

    if not paths and manifest.load(cfg.out_path, cfg.name):
        # The build output may be a shared wheelhouse: the build's own wheels are the ones its manifest names.
        paths = manifest.wheel_paths(cfg.out_path, cfg.name)
    elif not paths and cfg.name and manifest.manifest_files(cfg.out_path):
        # Only other projects' builds are there: never their wheels, at most stray ones of this project.
        prefix = manifest.norm(cfg.name) + "-"
        paths = [p for p in sorted(cfg.out_path.glob("*.whl")) if p.name.lower().startswith(prefix)]
        if not paths:
            raise UsageError(
                f"no wheels of {cfg.name} in {cfg.out_path} (it holds other projects' builds)",
                "run kestrel-release build, or pass wheel files",
            )
    paths = [Path(p) for p in paths] or [cfg.out_path]
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.whl"))
            if not found:
                raise UsageError(f"no wheels in {path}", "run kestrel-release build, or pass wheel files")
            for wheel in found:
                if not wheel.is_file():  # a FIFO or device named *.whl would block the reader forever
                    raise UsageError(f"{wheel} is not a regular file", "remove it or pass wheel files")
            out += found
        elif path.name.endswith(SDIST_SUFFIXES):
            raise UsageError(f"{path.name} is an sdist; verify checks wheels", "pass .whl files")
        elif not path.exists():
            hint = "run kestrel-release build first" if path == cfg.out_path else "check the path"
            raise UsageError(f"{path} does not exist", hint)
        elif path.suffix != ".whl":
            raise UsageError(f"{path.name} is not a wheel (.whl)", "pass .whl files or a directory")
        elif not path.is_file():  # a FIFO or device named *.whl would block the reader forever
            raise UsageError(f"{path} is not a regular file", "pass wheel files")
        else:
            out.append(path)
    return list(dict.fromkeys(p.resolve() for p in out))


def run(
    cfg: Config,
    paths: list[Path],
    target: str | None = None,
    record: bool = True,
    project: bool = True,
    ask_index: bool = False,
    platforms: tuple[str, ...] = (),
    partial: bool = False,
    attest: Attested | None = None,
) -> VerifyReport:
    """Verify the wheels at `paths` (see resolve_wheels) against `target`'s rules.
    project=False (no kernel project; cfg from verify_pypi.standalone_config): no matrix, no
    config rules, nothing recorded. ask_index: read the target index's upload times for the
    14-day rule (the CLI does when --target names an index). `platforms` (--platform) checks the
    matrix of those configured platforms only, `partial` makes configured platforms without wheels
    warnings (one machine's build before assemble); either way nothing is recorded for publish,
    which needs the whole matrix. `attest` (--attestation): each wheel is checked against that attestation
    (stages/verify/attestation.py)."""
    from kestrel_release.stages.verify import dedupe as verify_dedupe
    from kestrel_release.stages.verify import part as verify_part
    from kestrel_release.stages.verify import pypi as verify_pypi
    from kestrel_release.stages.verify import variant_rules, verdicts

    if project:  # a project without [project]: named by the wheels' manifest, else the backend
        from kestrel_release.project import meta as project_meta

        cfg = project_meta.resolve(cfg, paths)
    target = target or _default_target()
    kind = _rules(cfg, target)
    if not project and not paths:
        raise UsageError(
            "no kernel project here (no pyproject.toml with [tool.kestrel-release] in this "
            "directory or above) and no wheels given",
            "pass wheel files or directories, or --project DIR",
        )
    required = _required_platforms(cfg, platforms)
    wheels = resolve_wheels(cfg, paths)
    statements = _attestation(attest)  # a file that is no attestation stops here, before any wheel is read
    plan = _planned_version(cfg, wheels) if project else None
    # Variant wheels (a manifest entry with a `variant` record): each variant is a release of its own.
    records = {p: r for p in wheels if (r := variant_rules.entry(p))} if project and cfg.variants else {}
    workers = min(len(wheels), os.cpu_count() or 1)
    ctx = verdicts.context(cfg, target, project, plan, verify_part.build_dirs(cfg, project))
    if early.pending() and not console.json_mode():
        # The report's modules (Rich's tables) load while the child forked at start-up still reads.
        from kestrel_release.stages.verify import display  # noqa: F401
    with pools.threads(workers) as pool:  # zlib and hashlib release the GIL
        reports = list(
            pool.map(lambda p: _verify_cached(cfg, p, target, project, plan, ctx, kind, records.get(p)), wheels)
        )
    if attest is not None:
        _check_attested(reports, attest, statements)
    found = (
        variant_rules.check_sets(
            cfg, reports, records, target, plan, cfg.platforms or platforms, required, partial, kind == "index"
        )
        if project
        else []
    )
    found += _stale(cfg, wheels) if project else []
    found += verify_dedupe.check(reports)  # a hint (warning): what one abi3/py3 wheel per platform would save
    if ask_index and kind == "index":
        found += verify_pypi.release_age_set(reports, cfg, target)
    report = VerifyReport(target, reports, found, "project" if project else "standalone")
    from kestrel_release.stages.verify import summary as ci_summary

    ci_summary.publish(report)  # a CI job's summary page and annotations (nothing elsewhere)
    if project:
        _forget_stale(reports)
    if record and project and report.ok and not (platforms or partial):  # publish needs the whole matrix
        _record(report)
    return report


@dataclass(frozen=True)
class Attested:
    """--attestation FILE, and the signer the user expects (--identity, --issuer)."""

    path: Path
    identity: str | None = None
    issuer: str | None = None
    offline: bool = False  # --sigstore-offline


def _attestation(attest: Attested | None) -> list:
    if attest is None:
        return []
    from kestrel_release.stages.verify import attestation

    return attestation.load(attest.path)


def _check_attested(reports: list[WheelReport], attest: Attested, statements: list) -> None:
    """Each wheel against the attestation, hashed again now (a stored verdict's sha256 is not evidence)."""
    from kestrel_release.files.fsutil import sha256_file
    from kestrel_release.stages.verify import attestation

    for report in reports:
        issuer = attest.issuer or attestation.GITHUB_ISSUER
        digest = sha256_file(report.path)
        found = attestation.check(report.path, digest, statements, attest.identity, issuer, attest.offline)
        report.findings = [*report.findings, *found]


def _stale(cfg: Config, wheels: list[Path]) -> list[Finding]:
    """An output built under another configuration than the project's now: named, with the build to run."""
    from kestrel_release.output_dir import built_with, manifest

    found: list[Finding] = []
    seen: set[Path] = set()
    for wheel in wheels:
        entry = manifest.for_wheel(wheel)
        if entry is None or entry[0] in seen:
            continue
        seen.add(entry[0])
        changed = built_with.differences(cfg.project_dir, entry[1])
        if changed:
            message = (
                f"{wheel.parent.name}/ was built under another configuration ({'; '.join(changed)}): "
                "its wheels are not what the project builds now"
            )
            hint = "rebuild it with kestrel-release build (release rebuilds it too), then verify again"
            found.append(Finding("stale-output", "error", entry[0].name, f"{message} — {hint}", hint))
    return found


def _forget_stale(reports: list[WheelReport]) -> None:
    """A wheel that says another version is dropped from the wheel cache: the rebuild the advice asks
    for must really build (an in-tree build/'s old copy would otherwise come back from the cache)."""
    from kestrel_release.stages.verify.versions import RULE

    stale = {w.filename: w.sha256 for w in reports if any(f.rule == RULE and f.severity == "error" for f in w.findings)}
    if not stale:
        return
    from kestrel_release.stages.build_wheels import wheelcache

    try:
        for name in wheelcache.drop(stale):
            console.debug(f"wheel cache: dropped {name} (it says another version than the release)")
    except OSError as exc:  # the rebuild may then be served the same wheel; verify says so again
        console.debug(f"wheel cache: could not drop the stale wheels ({exc})")


def _planned_version(cfg: Config, wheels: list[Path]) -> str | None:
    """The version being released: the project's (release fills in a dynamic one from the backend),
    else the one build recorded in the output's manifest after checking it against the backend."""
    if cfg.version is not None:
        return cfg.version
    from packaging.utils import canonicalize_name

    from kestrel_release.output_dir import identity as output_identity

    found = output_identity.from_outputs(wheels, cfg.out_path)
    return found[1] if found and canonicalize_name(found[0]) == canonicalize_name(cfg.name or found[0]) else None


def _required_platforms(cfg: Config, narrow: tuple[str, ...]) -> tuple[str, ...] | None:
    """--platform: configured platforms whose matrix is checked (UsageError, exit 2, for others)."""
    if not narrow:
        return None
    from kestrel_release.platforms import EXAMPLES, parse

    for name in narrow:
        if cfg.platforms and name not in cfg.platforms:
            raise UsageError(
                f"--platform {name} is not one of the configured platforms ({', '.join(cfg.platforms)})",
                "pick a listed one, or add it to `platforms` in [tool.kestrel-release]",
            )
        if parse(name) is None:
            raise UsageError(f"--platform {name} is not a wheel platform tag", f"e.g. {EXAMPLES}")
    return narrow


def _rules(cfg: Config, target: str) -> str:
    """Which acceptance rules `target` has: its settings say (targets/ defines them; config.load puts every
    configured and built-in target in cfg.targets). UsageError (exit 2) for a name no target has."""
    settings = cfg.targets.get(target)
    if settings is None and target != _default_target():
        known = list(dict.fromkeys([_default_target(), *cfg.targets]))
        raise UsageError(f"unknown verify target '{target}'", f"use one of {', '.join(known)}")
    return str(getattr(settings, "verify_rules", "index"))


def _verify_cached(
    cfg: Config,
    path: Path,
    target: str,
    project: bool,
    plan: str | None,
    ctx: str,
    kind: str = "index",
    variant: dict | None = None,
) -> WheelReport:
    """The stored verdict of an unchanged wheel under unchanged rules (verdicts.py), else a full read.
    A variant wheel is always read: its rules depend on its manifest's variant record too."""
    from kestrel_release.stages.verify import verdicts

    if variant is not None:
        return _verify_one(cfg, path, target, project, plan, kind, variant)
    stored = verdicts.lookup(path, ctx)
    if stored is not None:
        console.debug(f"verify: {path.name} unchanged since its last clean verify (sha256 {stored['sha256'][:12]})")
        return WheelReport(path, **verdicts.load(stored))
    report = _verify_one(cfg, path, target, project, plan, kind)
    if report.sha256:
        verdicts.store(path, ctx, report.sha256, verdicts.dump(report) if verdicts.cacheable(report) else None)
    return report


def _verify_one(
    cfg: Config,
    path: Path,
    target: str,
    project: bool = True,
    plan: str | None = None,
    kind: str = "index",
    variant: dict | None = None,
) -> WheelReport:
    from kestrel_release.stages.verify import cuda_matrix, rules, size_forecast, stable_abi, variant_rules
    from kestrel_release.stages.verify import dedupe as verify_dedupe
    from kestrel_release.stages.verify import native as verify_native
    from kestrel_release.stages.verify import part as verify_part
    from kestrel_release.stages.verify import pypi as verify_pypi
    from kestrel_release.stages.verify import versions as verify_versions

    # No project: no build dir. With one, the dirs build compiled in (the clean copies) are its too.
    scan = verify_part.Scan.new(
        str(cfg.project_dir) if project else "", verify_part.build_dirs(cfg, project), cfg.build.exclude
    )
    scanner, native, modules = scan.content, scan.native, scan.modules
    try:
        wheel = read_wheel(path, scan.visit, scan.work, verify_part.splitter(path, scan))
    except WheelError as exc:
        from kestrel_release.files.fsutil import sha256_file

        size = path.stat().st_size
        return WheelReport(
            path, path.name, sha256_file(path), size, findings=[Finding("zip-format", "error", "", exc.message)]
        )
    report = WheelReport(path, wheel.filename, wheel.sha256, wheel.size, cuda=scanner.cuda)
    report.binaries = verify_dedupe.binaries_of(wheel, scanner.binaries)
    findings = [Finding(rule, "error", member, message) for rule, member, message in wheel.problems]
    meta_findings, facts = rules.check_metadata(wheel)
    report.name, report.version, report.tags = facts["name"], facts["version"], facts["tags"]
    findings += rules.check_record(wheel) + meta_findings
    meta_version = rules.metadata_version(wheel)
    plan = variant["version"] if variant else plan  # a variant wheel's version is its variant's (+cu130)
    findings += verify_versions.check(
        modules.sources,
        {m.name for m in wheel.members},
        report.name,
        meta_version,
        plan,
        cfg.project_dir if project else None,
    )
    findings += check_names([m.name for m in wheel.members if not m.is_dir], cfg.verify.forbid, cfg.verify.allow)
    findings += scanner.findings
    v = cfg.verify
    for info in scanner.cuda:
        findings += check_cuda(
            info, v.required_sass, v.allow_ptx, v.allow_debug, scanner.project_dir, scanner.build_dirs
        )
    matrix_findings, report.coverage = cuda_matrix.check(cfg, scanner.cuda) if project else ([], {})
    findings += matrix_findings
    findings += rules.check_binary_platform(facts["tags"], scanner.binaries)
    findings += rules.check_target(facts, wheel.size, target, v.max_file_size, wheel.members, kind)
    report.cuda_sizes = size_forecast.per_arch(scanner.cuda, wheel.members)
    if kind == "index":
        findings += size_forecast.check(wheel.filename, wheel.size, v.max_file_size, report.cuda_sizes, scanner.cuda)
    native_findings, report.native = verify_native.check_wheel(path, report.tags, cfg.build.min_glibc)
    report.native["needed"] = native.needed
    findings += native.findings + native_findings
    if variant:
        findings += variant_rules.wheel_findings(variant, rules.requirements(wheel), native.needed)
        findings += stable_abi.findings(variant["variant"], native.torch_cxx)
    if kind == "index":
        findings += verify_pypi.pypi_findings(path)
    report.findings = findings if project else verify_pypi.standalone_severity(findings)
    report.kernels = {m.name: m.digest or "" for m in wheel.members if m.name.endswith((".cubin", ".fatbin"))}
    return report


def _record(report: VerifyReport) -> None:
    from kestrel_release.output_dir import manifest

    by_dir: dict[Path, dict[str, str]] = {}
    for w in report.wheels:
        by_dir.setdefault(w.path.parent, {})[w.filename] = w.sha256
    for out_dir, hashes in by_dir.items():
        manifest.record_verified(out_dir, report.target, hashes)


def render(report: VerifyReport) -> None:
    """One table per wheel (CUDA members, architectures), the findings, then the verdict."""
    from kestrel_release.stages.verify.display import render as _render

    _render(report)
