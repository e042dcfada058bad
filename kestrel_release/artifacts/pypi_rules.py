"""PyPI's 2025-2026 upload rules for a wheel's bytes: one implementation for verify,
build and the strict sandbox.

Each rule is a function returning Violations whose message is Warehouse's 400
reason word for word (warehouse forklift/legacy.py, forklift/metadata.py,
utils/zipfiles.py, utils/wheel.py, utils/scanner_rules/*.yar), so a verify finding
and the sandbox's answer read like PyPI's. `check_wheel` runs them all in the
order PyPI does, so its first violation is the one PyPI would answer with.

Rule ids (README's verify rules table): pypi-metadata, pypi-zip, pypi-encrypted,
pypi-filename, pypi-license-file, pypi-entry-points, pypi-release-age.
"""

from __future__ import annotations

import configparser
import datetime as dt
import io
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, TYPE_CHECKING

from kestrel_release.artifacts.binformat import ByteData
from kestrel_release.artifacts.errors import UNREADABLE_ZIP
from kestrel_release.artifacts.zipstruct import ZIP_ERROR_PREFIX, is_tar, validate_zip

if TYPE_CHECKING:
    from packaging.metadata import Metadata, RawMetadata

__all__ = ["MAX_RELEASE_AGE", "Violation", "check_wheel", "release_age", "zip_violations"]

SUPPORTED_METADATA_VERSIONS = {"1.0", "1.1", "1.2", "2.1", "2.2", "2.3", "2.4", "2.5"}
MAX_RELEASE_AGE = dt.timedelta(days=14)
INVALID = "Invalid distribution file. "
_CORE_METADATA = "See https://packaging.python.org/specifications/core-metadata for more information."
_ARCHIVES = "See https://docs.pypi.org/archives for more information"
_RATIO_MIN_SIZE, _RATIO_MAX = 64 * 1024 * 1024, 50  # a zip bomb, as PyPI measures it
_SCAN_SUFFIXES = (".py", ".pye")
_SCAN_MAX = 5 * 1024 * 1024  # PyPI scans members up to 5 MiB
_PYARMOR = (
    b"__pyarmor__(__name__, __file__,",
    b"__pyarmor_enter__",
    b"__pyarmor_exit__",
    b"__pyarmor_assert__",
    b"__pyarmor_bcc__",
)
_AUP = "See https://pypi.org/policy/acceptable-use-policy/ for more information."
_ENTRY_POINT_NAME = re.compile(r"[\w.-]+")
_FIELD_ORDER = ["metadata-version", "name", "version"]  # PyPI answers with these fields' errors first


@dataclass(frozen=True)
class Violation:
    rule: str
    member: str
    message: str  # PyPI's words


def check_wheel(filename: str, data: ByteData, fh: IO[bytes] | None = None) -> list[Violation]:
    """Every PyPI rule the wheel `data` (bytes, or an mmap of the open file `fh`) named `filename`
    breaks, in PyPI's order. An unreadable zip gives one pypi-zip violation; nothing is extracted
    or executed."""
    try:
        archive = zipfile.ZipFile(fh if fh is not None else io.BytesIO(data))
        infos = archive.infolist()
    except UNREADABLE_ZIP:
        return [Violation("pypi-zip", "", INVALID + "File is not a zipfile")]
    except OSError:  # read through the open file `fh`: a seek outside it fails as OSError
        return [Violation("pypi-zip", "", INVALID + "File is not a zipfile")]
    with archive:
        dist, names = _dist_info(filename), {i.filename for i in infos}
        metadata = _read(archive, f"{dist}/METADATA")
        out = metadata_violations(metadata) if metadata is not None else []
        out += _archive_violations(data, infos)
        if f"{dist}/WHEEL" not in names:
            out.append(Violation("pypi-metadata", f"{dist}/WHEEL", f"{INVALID}WHEEL not found at {dist}/WHEEL"))
        out += _encrypted(archive, infos)
        out += _structure_violations(data, infos)
        if metadata is not None:
            out += filename_violations(filename, metadata)
            out += license_file_violations(filename, metadata, names)
        if f"{dist}/RECORD" not in names:
            out.append(
                Violation(
                    "pypi-metadata",
                    f"{dist}/RECORD",
                    f"Wheel '{filename}' does not contain the required RECORD file: {dist}/RECORD",
                )
            )
        out += entry_points_violations(filename, _read(archive, f"{dist}/entry_points.txt"))
        if f"{dist}/METADATA" not in names:
            out.append(
                Violation(
                    "pypi-metadata",
                    f"{dist}/METADATA",
                    f"Wheel '{filename}' does not contain the required METADATA file: {dist}/METADATA",
                )
            )
    return out


def _dist_info(filename: str) -> str:
    name, version = [*filename.split("-", 2), "", ""][:2]  # PyPI's own split, not a normalizing parse
    return f"{name}-{version}.dist-info"


def _read(archive: zipfile.ZipFile, name: str, limit: int = _SCAN_MAX) -> bytes | None:
    try:
        info = archive.getinfo(name)
        if info.file_size > limit:
            return None
        with archive.open(info) as fh:
            return fh.read(limit)
    except (
        KeyError,
        zipfile.BadZipFile,
        NotImplementedError,
        OSError,
        ValueError,
        EOFError,
        RuntimeError,
        zlib.error,
        OverflowError,
        struct.error,
    ):
        return None  # missing or unreadable: the integrity rules report it


def zip_violations(data: ByteData, infos: list[zipfile.ZipInfo]) -> list[Violation]:
    """Polyglots, compression methods and the byte-level framing (zipstruct)."""
    return _archive_violations(data, infos) + _structure_violations(data, infos)


def _archive_violations(data: ByteData, infos: list[zipfile.ZipInfo]) -> list[Violation]:
    out = []
    declared = sum(i.file_size for i in infos)  # never inflated: the central directory's word is enough
    if declared > _RATIO_MIN_SIZE and declared / max(len(data), 1) > _RATIO_MAX:
        return [Violation("pypi-zip", "", f"{INVALID}File exceeds compression ratio of {_RATIO_MAX}")]
    if is_tar(data):
        out.append(Violation("pypi-zip", "", INVALID + "File is both a zip and a tar file"))
    bad = [i.filename for i in infos if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)]
    if bad:
        out.append(Violation("pypi-zip", bad[0], INVALID + "File does not use a supported compression type"))
    return out


def _structure_violations(data: ByteData, infos: list[zipfile.ZipInfo]) -> list[Violation]:
    out = []
    sizes = {i.orig_filename: (i.compress_size, i.file_size) for i in infos}
    error = validate_zip(data, sizes)
    if error:
        out.append(Violation("pypi-zip", "", f"{INVALID}{ZIP_ERROR_PREFIX}{error}. {_ARCHIVES}"))
    return out


def _encrypted(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> list[Violation]:
    """PyPI's YARA rules pyarmor.yar and sourcedefender.yar, on .py/.pye members up to 5 MiB."""
    for info in infos:
        if info.filename.endswith("/") or PurePosixPath(info.filename).suffix.lower() not in _SCAN_SUFFIXES:
            continue
        blob = _read(archive, info.filename)
        if blob is None:
            continue
        if any(marker in blob for marker in _PYARMOR):
            return [
                Violation("pypi-encrypted", info.filename, f"{INVALID}PyArmor-encrypted content is not allowed. {_AUP}")
            ]
        if b"---BEGIN PYE FILE---" in blob and b"---END PYE FILE---" in blob:
            return [
                Violation(
                    "pypi-encrypted", info.filename, f"{INVALID}SourceDefender-encrypted content is not allowed. {_AUP}"
                )
            ]
    return []


def metadata_violations(metadata: bytes) -> list[Violation]:
    """forklift/metadata.py's rules on top of packaging's, most important field first."""
    from packaging.metadata import ExceptionGroup, InvalidMetadata, Metadata

    try:
        raw = parse_metadata(metadata)  # PyPI reads form fields: unknown headers never reach it
        meta = Metadata.from_raw(raw, validate=True)
    except ExceptionGroup as group:
        errors = [e for e in group.exceptions if isinstance(e, InvalidMetadata)]
        return _metadata_findings([(e.field, str(e)) for e in errors])
    except (InvalidMetadata, ValueError) as exc:
        return _metadata_findings([(getattr(exc, "field", "metadata"), str(exc))])
    return _metadata_findings(_pypi_metadata_errors(meta))


def parse_metadata(metadata: bytes) -> RawMetadata:
    """METADATA as the upload form carries it (twine 6+): setuptools' License-File lines under a
    Metadata-Version before 2.4 (pre-PEP 639, not PyPI's field) are dropped, not refused."""
    from packaging.metadata import parse_email
    from packaging.version import InvalidVersion, Version

    from kestrel_release.artifacts import core_metadata

    raw, _unparsed = parse_email(core_metadata.bounded(metadata))  # linear, whatever the wheel holds
    try:
        old = Version(str(raw.get("metadata_version", "0"))) < Version("2.4")
    except InvalidVersion:
        old = False
    if old:
        raw.pop("license_files", None)
    return raw


def _pypi_metadata_errors(meta: Metadata) -> list[tuple[str, str]]:
    from trove_classifiers import all_classifiers, deprecated_classifiers

    errors = []
    if meta.metadata_version not in SUPPORTED_METADATA_VERSIONS:
        errors.append(("metadata-version", f"{meta.metadata_version!r} is not a valid metadata version"))
    for c in sorted(set(meta.classifiers or []) - set(all_classifiers)):
        errors.append(("classifier", f"{c!r} is not a valid classifier."))
    for c in sorted(set(meta.classifiers or []) & deprecated_classifiers.keys()):
        by = deprecated_classifiers[c]
        errors.append(
            ("classifier", f"The classifier {c!r} has been deprecated" + (f", use one of {by} instead." if by else "."))
        )
    for field in ("provides_dist", "obsoletes_dist"):
        for text in getattr(meta, field) or []:
            errors += _direct_url(field.replace("_", "-"), text)
    for req in meta.requires_dist or []:
        if req.url is not None:
            errors.append(("requires-dist", f"Can't have direct dependency: {req}"))
    if meta.license and meta.license_expression:
        errors.append(
            (
                "license",
                (
                    "License is deprecated when License-Expression is present. "
                    "Only License-Expression should be present."
                ),
            )
        )
    return errors


def _direct_url(field: str, text: str) -> list[tuple[str, str]]:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return [(field, f"{text!r} is invalid: {exc}")]
    return [(field, f"Can't have direct dependency: {text!r}")] if req.url is not None else []


def _metadata_findings(errors: list[tuple[str, str]]) -> list[Violation]:
    def rank(item: tuple[str, str]) -> tuple[int, str]:
        field = item[0]
        return (_FIELD_ORDER.index(field) if field in _FIELD_ORDER else len(_FIELD_ORDER), field)

    out = []
    for field, text in sorted(errors, key=rank):
        text = text if text.endswith(".") else text + "."
        out.append(Violation("pypi-metadata", field, f"{text} {_CORE_METADATA}"))
    return out


def filename_violations(filename: str, metadata: bytes) -> list[Violation]:
    """PEP 427/503: the name part must be the project's normalized name with underscores."""
    from packaging.utils import canonicalize_name

    from kestrel_release.artifacts import core_metadata

    name = core_metadata.headers(metadata).get("Name")
    if not name:
        return []
    normalized = canonicalize_name(str(name)).replace("-", "_")
    given = filename.split("-", 1)[0]
    if given != normalized:
        return [
            Violation(
                "pypi-filename",
                "",
                f"Filename {filename!r} should contain the normalized project name {normalized!r}, not {given!r}.",
            )
        ]
    return []


def license_file_violations(filename: str, metadata: bytes, names: set[str]) -> list[Violation]:
    """PEP 639: every License-File must be in the wheel under .dist-info/licenses/."""
    dist = _dist_info(filename)
    out = []
    for license_file in parse_metadata(metadata).get("license_files") or []:
        path = f"{dist}/licenses/{license_file}"
        if path not in names:
            out.append(
                Violation(
                    "pypi-license-file",
                    path,
                    f"License-File {license_file} does not exist in distribution file {filename} at {path}",
                )
            )
    return out


def entry_points_violations(filename: str, data: bytes | None) -> list[Violation]:
    """utils/wheel.py validate_entrypoints: UTF-8, an INI file with '=', sane script names."""
    if data is None:
        return []
    message = f"Wheel '{filename}' has invalid entry points defined in the entry_points.txt file"
    member = f"{_dist_info(filename)}/entry_points.txt"
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(data.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return [Violation("pypi-entry-points", member, message)]
    for section in ("console_scripts", "gui_scripts"):
        if section in parser and any(not _ENTRY_POINT_NAME.fullmatch(n) for n in parser[section]):
            return [Violation("pypi-entry-points", member, message)]
    return []


def release_age(first_upload: dt.datetime | None, now: dt.datetime | None = None) -> Violation | None:
    """Since 2026-07 PyPI refuses new files for a release created more than 14 days ago
    (an identical re-upload still succeeds: callers skip files the index already has)."""
    if first_upload is None:
        return None  # a new release
    now = now or dt.datetime.now(dt.timezone.utc)
    if first_upload.tzinfo is None:
        first_upload = first_upload.replace(tzinfo=dt.timezone.utc)
    if now - first_upload <= MAX_RELEASE_AGE:
        return None
    return Violation("pypi-release-age", "", "Uploading new files to releases older than 14 days is not allowed.")
