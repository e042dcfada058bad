"""release-manifest.json and SHA256SUMS: what was built, and what verify passed.

build writes the manifest; verify adds a `verified` record (sha256 of each
wheel it passed); publish refuses any wheel whose bytes changed since.

An output folder may be shared by several projects. Each project's manifest and sums are its own:
the first project in a folder writes `release-manifest.json` and `SHA256SUMS` (what a folder of
one project, and every reader before shared folders, expects); a project that finds another
project's manifest there writes `<name>.release-manifest.json` and `<name>.SHA256SUMS` (`<name>`
as in its wheel filenames) and keeps them. Readers that know the project ask `load(dir, package)`;
readers that start from a wheel ask `for_wheel` (the manifest naming it).

What a manifest holds is records/manifest.py's typed record (`Manifest`); this module reads and writes
its files. A manifest from a kestrel-release whose schema this one cannot read stops every reader
with one line (records/versions.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from kestrel_release.errors import IncompatibleRecordError, PublishError, UsageError
from kestrel_release.files.fsutil import atomic_write_text, sha256_file
from kestrel_release.records import manifest as record
from kestrel_release.records.manifest import Builder, Manifest, Wheel

MANIFEST = "release-manifest.json"
SUMS = "SHA256SUMS"
SIG = ".sig"  # sign_key's OpenSSH signature of the sums, beside them (adapters/ssh_sign.py)
MAX_BYTES = 32 * 1024 * 1024  # a manifest of thousands of wheels is a few MiB


def norm(package: str) -> str:
    """A project name as its wheel filenames spell it (`Mini-Ext` -> `mini_ext`)."""
    return re.sub(r"[-_.]+", "_", package).lower()


def project_names(package: str) -> tuple[str, str]:
    """(manifest, sums) file names of `package` in a folder another project's manifest holds."""
    return f"{norm(package)}.{MANIFEST}", f"{norm(package)}.{SUMS}"


def sums_for(manifest_path: Path) -> Path:
    """The SHA256SUMS that goes with a manifest file (`x.release-manifest.json` -> `x.SHA256SUMS`)."""
    name = manifest_path.name
    return manifest_path.with_name(SUMS if name == MANIFEST else name[: -len(MANIFEST)] + SUMS)


def manifest_files(out_dir: Path) -> list[Path]:
    """Every manifest file in `out_dir`: the plain one first, then the per-project ones."""
    out_dir = Path(out_dir)
    found = [out_dir / MANIFEST] if (out_dir / MANIFEST).is_file() else []
    return found + sorted(p for p in out_dir.glob(f"*.{MANIFEST}") if p.is_file())


def _package_of(path: Path) -> str | None:
    from kestrel_release.files import safejson

    try:
        data = safejson.load_file(path, str(path), max_bytes=MAX_BYTES)
    except (OSError, ValueError):  # safejson.Unusable is a ValueError
        return None
    package = data.get("package") if isinstance(data, dict) else None
    return package if isinstance(package, str) and package else None


def locate(out_dir: Path, package: str | None = None) -> Path | None:
    """The manifest file of `package` in `out_dir` (any project's when None: the plain one, else the
    only per-project one); None when the folder holds none of it."""
    out_dir = Path(out_dir)
    plain = out_dir / MANIFEST
    if package is None:
        if plain.is_file():
            return plain
        others = manifest_files(out_dir)
        return others[0] if len(others) == 1 else None
    own = out_dir / project_names(package)[0]
    if own.is_file():
        return own
    if plain.is_file():
        owner = _package_of(plain)
        if owner is None or norm(owner) == norm(package):  # unreadable: load reports it as today
            return plain
    return None


def load(out_dir: Path, package: str | None = None) -> Manifest | None:
    """The manifest of `package` (see locate) in `out_dir`, or None when there is none."""
    path = locate(out_dir, package)
    return None if path is None else read(path)


def read(path: Path) -> Manifest:
    """One manifest file; UsageError when it is damaged, IncompatibleRecordError when another
    kestrel-release's schema wrote it."""
    from kestrel_release.files import safejson

    try:  # an output may come from another machine (assemble, publish of a CI artifact): bounded
        data = safejson.load_file(path, str(path), max_bytes=MAX_BYTES)
    except safejson.Unusable as exc:
        raise UsageError(str(exc), "rebuild with kestrel-release build") from None
    return record.from_json(data, str(path))


def names_in(path: Path) -> set[str]:
    """The wheel filenames a manifest of any schema names, read without its record: only to know which
    files another kestrel-release wrote (a build replaces them; nothing else is trusted)."""
    from kestrel_release.files import safejson

    try:
        data = safejson.load_file(path, str(path), max_bytes=MAX_BYTES)
    except (OSError, ValueError):  # safejson.Unusable is a ValueError
        return set()
    rows = data.get("wheels") if isinstance(data, dict) else None
    return {r["filename"] for r in rows or [] if isinstance(r, dict) and isinstance(r.get("filename"), str)}


def save(out_dir: Path, manifest: Manifest, name: str = MANIFEST) -> Path:
    path = Path(out_dir) / name
    atomic_write_text(path, json.dumps(record.to_json(manifest), indent=2, sort_keys=True) + "\n")
    return path


def for_wheel(wheel: Path) -> tuple[Path, Manifest] | None:
    """(manifest file, its record) of the manifest in the wheel's folder that names it; None if none does."""
    for path in manifest_files(Path(wheel).parent):
        try:
            data = read(path)
        except IncompatibleRecordError:
            raise  # it may well name the wheel: say why it cannot be read, not that nothing names it
        except UsageError:
            continue
        if data.wheel(Path(wheel).name) is not None:
            return path, data
    return None


# Who built an output: lets `assemble` record per wheel which machine or CI job made it.
BUILDER_ENV = "KESTREL_RELEASE_BUILDER"  # a label the CI workflow sets per matrix leg
_CI_ENV = {
    "job": "GITHUB_JOB",
    "run_id": "GITHUB_RUN_ID",
    "run_attempt": "GITHUB_RUN_ATTEMPT",
    "workflow": "GITHUB_WORKFLOW",
    "repository": "GITHUB_REPOSITORY",
    "runner": "RUNNER_NAME",
}


def builder(env: dict[str, str] | None = None) -> Builder:
    """The machine (and the CI job, when on GitHub Actions) that is building now."""
    import os
    import platform
    import socket
    import sysconfig

    env = dict(os.environ if env is None else env)
    ci = {key: env[name] for key, name in _CI_ENV.items() if env.get(name)}
    return Builder(
        host=socket.gethostname(),
        platform=sysconfig.get_platform(),
        machine=platform.machine(),
        label=env.get(BUILDER_ENV) or None,
        ci=ci if "run_id" in ci else None,
    )


def wheel_paths(out_dir: Path, package: str | None = None) -> list[Path]:
    """The wheels `package`'s manifest in `out_dir` names (the build's own, in a possibly shared folder)."""
    data = load(out_dir, package)
    return [Path(out_dir) / name for name in data.filenames()] if data else []


def write_sums(out_dir: Path, wheels: Sequence[Wheel], name: str = SUMS) -> Path:
    """SHA256SUMS in the format `sha256sum -c` accepts (two spaces, relative names)."""
    lines = [f"{w.sha256}  {w.filename}\n" for w in sorted(wheels, key=lambda w: w.filename)]
    path = Path(out_dir) / name
    atomic_write_text(path, "".join(lines))
    return path


def sign_sums(sums: Path, key: str, project_dir: Path) -> Path | None:
    """`sums` + ".sig" signed with the OpenSSH key `sign_key` names (relative to the project); None unsigned."""
    if not key:
        return None
    from kestrel_release.adapters import ssh_sign

    path = Path(key).expanduser()
    return ssh_sign.sign(sums, path if path.is_absolute() else Path(project_dir) / path)


def record_verified(out_dir: Path, target: str | None, hashes: dict[str, str]) -> None:
    """Remember which bytes verify passed, in the manifest that names those wheels (each project's own
    in a shared folder); a no-op without a manifest."""
    by_manifest: dict[Path, dict[str, str]] = {}
    files = manifest_files(out_dir)
    for filename, sha in hashes.items():
        found = for_wheel(Path(out_dir) / filename)
        if found is not None:
            by_manifest.setdefault(found[0], {})[filename] = sha
        elif len(files) == 1:  # a wheel the folder's only manifest does not name (as before shared folders)
            by_manifest.setdefault(files[0], {})[filename] = sha
    for path, passed in by_manifest.items():
        save(path.parent, read(path).with_verified(target or "default", passed), path.name)


def verified_hashes(out_dir: Path, target: str | None = None, data: Manifest | None = None) -> dict[str, str]:
    """sha256 by filename that verify recorded (for `target`, or any target) in `data`, else in the
    folder's manifest."""
    data = load(out_dir) if data is None else data
    return data.verified_hashes(target) if data else {}


def check_unchanged(wheels: list[Path], target: str | None) -> None:
    """Refuse bytes that differ from what build recorded and verify passed for `target` (exit 6, both
    hashes): the one integrity gate of every publisher, index or GitHub."""
    for wheel in wheels:
        found = for_wheel(wheel)
        if found is None:
            if manifest_files(wheel.parent):
                raise PublishError(
                    f"{wheel.name} is not in any manifest in {wheel.parent}",
                    "publish only wheels that kestrel-release build produced",
                )
            continue  # ad-hoc wheels outside a build output: verify is the only gate
        data = found[1]
        built = data.wheel(wheel.name)
        actual = sha256_file(wheel)
        verified = data.verified_hashes(target).get(wheel.name)
        for what, expected in (("built", built.sha256 if built else None), ("verified", verified)):
            if expected and actual != expected:
                raise PublishError(
                    f"{wheel.name} changed since it was {what}: sha256 {actual} != {what} {expected}",
                    "the file was modified or replaced; rebuild with kestrel-release build",
                )
