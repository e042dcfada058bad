"""Integrity, metadata, index acceptance and matrix rules (docs/pypi-rules.md).

Pure functions over what the single read pass collected: each returns a list
of Findings and never raises on bad input.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from kestrel_release import platforms
from kestrel_release.artifacts import core_metadata
from kestrel_release.artifacts.wheel import Member, WheelFile
from kestrel_release.stages.verify.finding import Finding
from kestrel_release.ui import sizes

if TYPE_CHECKING:
    from packaging.tags import Tag
    from packaging.utils import NormalizedName

GITHUB_ASSET_LIMIT = 2 * 1024**3
UNSIGNED = (".jws", ".p7s")  # RECORD lists these without a hash (PEP 491)


def error(rule: str, member: str, message: str) -> Finding:
    return Finding(rule, "error", member, message)


def check_record(wheel: WheelFile) -> list[Finding]:
    """Every member is in RECORD with a matching hash and size; RECORD lists nothing missing."""
    record_name = next((n for n in wheel.dist_info if n.endswith("/RECORD")), None)
    if record_name is None:
        return [error("metadata", "", "no .dist-info/RECORD: rebuild the wheel")]
    try:
        rows = list(csv.reader(io.StringIO(wheel.dist_info[record_name].decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return [error("record-mismatch", record_name, "RECORD is not valid UTF-8 CSV: rebuild the wheel")]
    members = {m.name: m for m in wheel.members if not m.is_dir}
    listed: set[str] = set()
    out = []
    for row in rows:
        if not row or not row[0]:
            continue
        path, digest, size = [*row, "", ""][:3]
        listed.add(path)
        member = members.get(path)
        if member is None:
            out.append(error("record-mismatch", path, "listed in RECORD but missing from the wheel: rebuild it"))
        elif (
            path != record_name
            and not path.endswith(UNSIGNED)
            and member.digest is not None
            and (
                digest != member.digest or (size and member.actual_size is not None and size != str(member.actual_size))
            )
        ):
            out.append(
                error("record-mismatch", path, "hash or size differs from RECORD (modified after build): rebuild")
            )
    for name in sorted(set(members) - listed):
        out.append(error("record-mismatch", name, "not listed in RECORD (added after build): rebuild the wheel"))
    return out


def check_metadata(wheel: WheelFile) -> tuple[list[Finding], dict]:
    """METADATA/WHEEL parse, and filename, METADATA and WHEEL agree. Returns (findings, facts)."""
    facts: dict = {"name": None, "version": None, "tags": []}
    out: list[Finding] = []
    try:
        fname, fversion, _build, ftags = parse_wheel_filename(wheel.filename)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        return [error("metadata", "", f"bad wheel filename ({exc}): rebuild the wheel")], facts
    facts.update(name=str(fname), version=str(fversion), tags=sorted(str(t) for t in ftags))
    dirs = {n.split("/", 1)[0] for n in wheel.dist_info}
    if len(dirs) != 1:
        out.append(error("metadata", "", f"expected one .dist-info directory, found {len(dirs)}: rebuild the wheel"))
        return out, facts
    dist_info = dirs.pop()
    out += _check_metadata_file(wheel, f"{dist_info}/METADATA", fname, fversion)
    out += _check_wheel_file(wheel, f"{dist_info}/WHEEL", ftags)
    return out, facts  # an unnormalized filename prefix is PyPI's pypi-filename rule (verify_pypi)


def requirements(wheel: WheelFile) -> list[str]:
    """METADATA's Requires-Dist lines ([] when it has none or cannot be read)."""
    from kestrel_release.artifacts.pypi_rules import parse_metadata

    path = next((n for n in wheel.dist_info if n.endswith(".dist-info/METADATA")), None)
    if path is None:
        return []
    return list(parse_metadata(wheel.dist_info[path]).get("requires_dist") or [])


def _check_metadata_file(wheel: WheelFile, path: str, fname: NormalizedName, fversion: Version) -> list[Finding]:
    from packaging.metadata import ExceptionGroup, InvalidMetadata, Metadata

    from kestrel_release.artifacts.pypi_rules import parse_metadata

    data = wheel.dist_info.get(path)
    if data is None:
        return [error("metadata", path, "missing: rebuild the wheel")]
    too_big = core_metadata.problem(data)
    if too_big:  # what installers and indexes would choke on: nothing else of it is worth reading
        return [error("metadata", path, too_big)]
    # PyPI's Metadata-Version limit is the pypi-metadata rule; here only what installers need.
    raw = parse_metadata(data)
    try:
        meta = Metadata.from_raw(raw, validate=True)
    except InvalidMetadata as exc:
        return [error("metadata", path, f"invalid: {exc}")]
    except ExceptionGroup as exc:  # packaging collects every InvalidMetadata
        problems = "; ".join(str(e) for e in exc.exceptions)
        return [error("metadata", path, f"invalid: {problems}")]
    out = []
    if canonicalize_name(meta.name) != fname:
        out.append(error("metadata", path, f"Name '{meta.name}' does not match the filename's '{fname}'"))
    if meta.version != fversion:
        out.append(error("metadata", path, f"Version '{meta.version}' does not match the filename's '{fversion}'"))
    return out


def metadata_version(wheel: WheelFile) -> str | None:
    """METADATA's Version as written (None when there is no single METADATA or no Version)."""
    metas = [n for n in wheel.dist_info if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(metas) != 1:
        return None
    return core_metadata.headers(wheel.dist_info[metas[0]]).get("Version")


def _check_wheel_file(wheel: WheelFile, path: str, ftags: frozenset[Tag]) -> list[Finding]:
    data = wheel.dist_info.get(path)
    if data is None:
        return [error("metadata", path, "missing: rebuild the wheel")]
    from email.parser import BytesHeaderParser  # linear: only get/get_all of known names below

    headers = BytesHeaderParser().parsebytes(data)
    if not headers.get("Wheel-Version"):
        return [error("metadata", path, "no Wheel-Version: rebuild the wheel")]
    tags = set(headers.get_all("Tag") or [])
    if tags != {str(t) for t in ftags}:
        # Its own rule: installers and PyPI go by the filename's tags (cupy-cuda12x ships WHEEL files that
        # say linux_aarch64 in manylinux2014 wheels), so outside a project it is a warning.
        return [error("wheel-tags", path, f"Tag lines {sorted(tags)} do not match the filename's tags: rebuild")]
    return []


def largest_members(members: Sequence[Member], count: int = 3) -> tuple[str, str]:
    """(the largest member's name, "a 95.0 MiB, b 3.0 MiB, ...") by stored (compressed) size: what a
    too-large wheel is made of, so the user knows what to shrink or split out."""
    files = sorted((m for m in members if not m.is_dir), key=lambda m: m.compressed_size, reverse=True)[:count]
    listed = ", ".join(f"{m.name} {sizes.size(m.compressed_size)}" for m in files)
    return (files[0].name if files else ""), listed


def check_target(
    facts: dict, size: int, target: str, max_file_size: int, members: Sequence[Member] = (), kind: str = "index"
) -> list[Finding]:
    """The target's acceptance rules for one wheel (`members`: its inspect.wheel.Member list, to name what
    makes a wheel too large). `kind`, the target's verify_rules (targets/): "index" (PyPI's upload rules),
    "asset" (GitHub's per-asset limit) or "" (none)."""
    if not kind:
        return []
    if kind == "asset":
        if size > GITHUB_ASSET_LIMIT:
            biggest, listed = largest_members(members)
            return [
                error(
                    "asset-size",
                    biggest,
                    f"{sizes.size(size)} is over GitHub's 2 GiB per asset; largest members (compressed): {listed}",
                )
            ]
        return []
    out = []
    for tag in facts["tags"]:
        platform = tag.rsplit("-", 1)[-1]
        for plat in platform.split("."):
            if not platforms.pypi_accepts(plat):  # warehouse's list, from each platform's own
                out.append(
                    error(
                        "platform-tag",
                        "",
                        f"{target} refuses the platform tag '{plat}': repair the wheel to manylinux (auditwheel)",
                    )
                )
    version = facts["version"]
    if version and Version(version).local:
        out.append(
            error(
                "local-version",
                "",
                f"{target} refuses the local version '{version}': use a .devN version for nightlies",
            )
        )
    if size > max_file_size:
        biggest, listed = largest_members(members)
        out.append(
            error(
                "file-size",
                biggest,
                f"{sizes.size(size)} is over the {sizes.size(max_file_size)} "
                f"per-file limit of {target} (largest members, compressed: {listed}): shrink the wheel or "
                "raise verify.max_file_size after PyPI grants it",
            )
        )
    return out


def check_binary_platform(tags: list[str], binaries: list) -> list[Finding]:
    """Each host binary (name, binformat.BinaryKind) must be what every platform tag of the wheel
    calls for: an x86_64 .so in an aarch64 wheel or a DLL in a Linux wheel fails at import."""
    from kestrel_release.artifacts import binformat

    wanted = {}
    for tag in tags:
        expected = binformat.expected_binary(tag.rsplit("-", 1)[-1])
        if expected is not None:
            wanted[tag.rsplit("-", 1)[-1]] = expected
    out = []
    for name, kind in binaries:
        if kind.format in ("cubin", "fatbin"):
            continue  # device code: no host platform
        bad = next((p for p, e in sorted(wanted.items()) if not binformat.matches(kind, e)), None)
        if bad:
            out.append(
                error(
                    "binary-platform",
                    name,
                    f"is {binformat.describe(kind)}, but the wheel's platform "
                    f"'{bad}' needs {wanted[bad].describe()}: build it on (or for) that platform",
                )
            )
    return out


def check_set(
    wheels: list,
    pythons: tuple[str, ...],
    target: str,
    budget: int,
    project: tuple[str, str | None] = ("", None),
    platforms: tuple[str, ...] = (),
    required: tuple[str, ...] | None = None,
    partial: bool = False,
    index: bool = False,
) -> list[Finding]:
    """The matrix: one wheel per configured Python (on each configured platform: verify_matrix),
    one name and version, identical kernels, and all of it this project's package (`project` = (name,
    version); the version against the release's is versions.py's rule). `index`: the target is an index
    (its project size budget applies)."""
    out: list[Finding] = _project_identity(wheels, project[0])
    versions = sorted({w.version for w in wheels if w.version})
    if len({w.name for w in wheels if w.name}) > 1 or len(versions) > 1:
        out.append(
            error(
                "matrix",
                "",
                f"the wheels disagree on name or version ({', '.join(versions)}): verify one release at a time",
            )
        )
    from kestrel_release.stages.verify import matrix as verify_matrix

    out += verify_matrix.check(
        wheels, pythons, platforms, required, partial
    )  # abi3/py3 cover Pythons above their floor
    out += _same_kernels(wheels)
    total = sum(w.size for w in wheels)
    if index and total > budget:
        largest = sorted(wheels, key=lambda w: w.size, reverse=True)[:3]
        listed = ", ".join(f"{w.filename} {sizes.size(w.size)}" for w in largest)
        out.append(
            error(
                "file-size",
                "",
                f"{sizes.size(total)} in total is over the project budget of {sizes.size(budget)} on {target} "
                f"(largest wheels: {listed})",
            )
        )
    return out


def _project_identity(wheels: list, name: str) -> list[Finding]:
    """A wheel of another package must never ride along into a publish (another version: versions.py)."""
    from packaging.utils import canonicalize_name

    out = []
    for w in wheels:
        if name and w.name and canonicalize_name(w.name) != canonicalize_name(name):
            out.append(
                error(
                    "matrix",
                    w.filename,
                    f"this wheel is package '{w.name}', not this project's '{name}': remove it from the release",
                )
            )
    return out  # the version: versions.py (METADATA and the modules against the release's version)


def _same_kernels(wheels: list) -> list[Finding]:
    """Every wheel must carry the same cubins/fatbins, byte for byte."""
    if len(wheels) < 2:
        return []
    first = wheels[0]
    out = []
    for other in wheels[1:]:
        for member in sorted(set(first.kernels) | set(other.kernels)):
            if first.kernels.get(member) != other.kernels.get(member):
                out.append(
                    error(
                        "matrix",
                        member,
                        f"differs between {first.filename} and {other.filename}: build every wheel from one precompile",
                    )
                )
    return out
