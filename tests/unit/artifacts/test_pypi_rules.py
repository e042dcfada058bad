"""PyPI's 2025-2026 upload rules on in-memory wheels: the byte-level ZIP reader, the metadata and
wheel rules, the 14-day rule and the build's gate. Each message is PyPI's own."""

from __future__ import annotations

import datetime as dt
import io
import struct
import zipfile

import pytest

from kestrel_release.artifacts import pypi_rules, zipstruct
from kestrel_release.errors import BuildError
from kestrel_release.stages.verify import pypi as verify_pypi
from tests import pypi_rule_wheels as W


def _zip_verdict(data: bytes) -> str | None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        sizes = {i.orig_filename: (i.compress_size, i.file_size) for i in zf.infolist()}
    return zipstruct.validate_zip(data, sizes)


def test_a_wheel_written_to_a_seekable_file_is_accepted():
    assert _zip_verdict(W.valid()) is None
    assert pypi_rules.check_wheel(W.FILENAME, W.valid()) == []


@pytest.mark.parametrize("case", sorted(W.CASES))
def test_each_rule_is_found_in_pypis_words(case):
    make, rule, words = W.CASES[case]
    violations = pypi_rules.check_wheel(W.FILENAME, make())
    assert any(v.rule == rule and words in v.message for v in violations), violations


def test_the_first_violation_is_the_one_pypi_answers_with():
    # Metadata comes first on PyPI (form fields), then the archive.
    data = W.zip_bytes(W.members("License: MIT\nLicense-Expression: MIT\n"), stream=True)
    first, *rest = pypi_rules.check_wheel(W.FILENAME, data)
    assert first.rule == "pypi-metadata" and [v.rule for v in rest] == ["pypi-zip"]


def test_an_archive_comment_is_refused_as_trailing_data():
    # PyPI's rule refuses "an archive comment or any data after the end-of-central-directory
    # record" (stricter than warehouse's current code, which skips it): one zipfile comment is enough.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in W.members().items():
            zf.writestr(name, data)
        zf.comment = b"archive comment"
    assert _zip_verdict(buf.getvalue()) == "Trailing data"
    [violation] = pypi_rules.check_wheel(W.FILENAME, buf.getvalue())
    assert violation.rule == "pypi-zip" and violation.message.startswith(W.ZIP + "Trailing data. ")
    assert _zip_verdict(W.valid()) is None  # the same members without the comment pass


def test_a_zip64_end_record_without_extensible_data_is_accepted():
    data = W.valid()
    eocd = data.rfind(b"PK\x05\x06")
    entries, cd_size, cd_offset = struct.unpack_from("<HLL", data, eocd + 10)
    record = struct.pack("<4sQHHLLQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, cd_size, cd_offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, eocd, 1)
    assert _zip_verdict(data[:eocd] + record + locator + data[eocd:]) is None


def test_a_size_that_disagrees_only_in_the_uncompressed_field_is_named():
    data = bytearray(W.valid())
    pos = data.find(b"PK\x03\x04")
    struct.pack_into("<I", data, pos + 22, struct.unpack_from("<I", data, pos + 22)[0] + 1)
    assert _zip_verdict(bytes(data)) == "Mis-matched file size"


@pytest.mark.parametrize("cut", [1, 10, 22, 40, 100])
def test_truncated_and_garbage_input_ends_in_a_verdict_not_an_exception(cut):
    data = W.valid()
    sizes = {"x": (1, 1)}
    assert zipstruct.validate_zip(data[:-cut], sizes) is not None
    assert zipstruct.validate_zip(b"PK\x03\x04" + b"\xff" * 26, sizes) == "Malformed zip file"
    assert zipstruct.validate_zip(b"", sizes) == "Malformed zip file"


def test_a_huge_declared_size_is_never_allocated():
    # A local header that claims 4 GiB of data: the walk skips, it never reads it.
    data = bytearray(W.valid())
    pos = data.find(b"PK\x03\x04")
    struct.pack_into("<I", data, pos + 18, 0xFFFFFFF0)
    name = bytes(data[pos + 30 : pos + 30 + struct.unpack_from("<H", data, pos + 26)[0]]).decode()
    assert zipstruct.validate_zip(bytes(data), {name: (0xFFFFFFF0, 0)}) is not None


def test_tar_detection_reads_only_the_first_block():
    assert zipstruct.is_tar(W.tar_polyglot(b""))
    assert not zipstruct.is_tar(W.valid())
    assert not zipstruct.is_tar(b"\x1f\x8b" + b"\0" * 100)  # a broken gzip header is no tar
    assert not zipstruct.is_tar(b"")


def test_setuptools_license_file_under_an_old_metadata_version_is_not_refused():
    # twine drops License-File below Metadata-Version 2.4 (setuptools wrote them under 2.1): PyPI never sees them.
    data = W.zip_bytes(W.members("License-File: LICENSE\n", metadata_version="2.1"))
    assert pypi_rules.check_wheel(W.FILENAME, data) == []


def test_entry_points_with_a_path_in_a_script_name_are_refused():
    files = {f"{W.PKG}/__init__.py": W.INIT, f"{W.DIST}/entry_points.txt": b"[console_scripts]\n../kk = a:b\n"}
    (v,) = pypi_rules.check_wheel(W.FILENAME, W.zip_bytes(W.members(files=files)))
    assert v.rule == "pypi-entry-points"
    good = {f"{W.PKG}/__init__.py": W.INIT, f"{W.DIST}/entry_points.txt": b"[console_scripts]\nkk = a:b\n"}
    assert pypi_rules.check_wheel(W.FILENAME, W.zip_bytes(W.members(files=good))) == []


def test_sourcedefender_files_are_refused():
    files = {f"{W.PKG}/__init__.py": W.INIT, f"{W.PKG}/core.pye": b"---BEGIN PYE FILE---\nxyz\n---END PYE FILE---\n"}
    (v,) = pypi_rules.check_wheel(W.FILENAME, W.zip_bytes(W.members(files=files)))
    assert v.rule == "pypi-encrypted" and "SourceDefender-encrypted content is not allowed." in v.message


def test_unnormalized_filename_is_refused_in_pypis_words():
    name, data = W.unnormalized()
    assert [v.message for v in pypi_rules.check_wheel(name, data)] == [W.UNNORMALIZED_WORDS]


def test_not_a_zip_is_one_violation():
    assert [v.message for v in pypi_rules.check_wheel(W.FILENAME, b"not a zip")] == [
        "Invalid distribution file. File is not a zipfile"
    ]


@pytest.mark.parametrize("age_days, refused", [(None, False), (1, False), (14, False), (15, True)])
def test_release_age(age_days, refused):
    now = dt.datetime(2026, 8, 1, tzinfo=dt.timezone.utc)
    first = None if age_days is None else now - dt.timedelta(days=age_days)
    violation = pypi_rules.release_age(first, now)
    assert (violation is not None) == refused
    if refused:
        assert violation.message == "Uploading new files to releases older than 14 days is not allowed."


def test_release_age_never_refuses_a_file_the_index_already_has():
    old = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    assert verify_pypi.release_age_findings(W.FILENAME, {W.FILENAME: "ab"}, old) == []
    (finding,) = verify_pypi.release_age_findings("other.whl", {W.FILENAME: "ab"}, old)
    assert finding.rule == "pypi-release-age" and finding.severity == "error"


def test_the_build_gate_fails_a_streamed_wheel_with_exit_4(tmp_path):
    good = tmp_path / W.FILENAME
    good.write_bytes(W.valid())
    verify_pypi.check_built_wheel(good)  # passes
    bad = tmp_path / "streamed" / W.FILENAME
    bad.parent.mkdir()
    bad.write_bytes(W.zip_bytes(W.members(), stream=True))
    with pytest.raises(BuildError) as info:
        verify_pypi.check_built_wheel(bad)
    assert info.value.exit_code == 4
    assert "(pypi-zip)" in info.value.message and "ZIP contains a data descriptor" in info.value.message


def test_no_single_byte_corruption_makes_the_rules_raise():
    # The sandbox runs these on whatever is uploaded: any input ends in a list of violations.
    data = W.zip_bytes(
        W.members(
            files={f"{W.PKG}/__init__.py": W.INIT, f"{W.DIST}/entry_points.txt": b"[console_scripts]\nkk = a:b\n"}
        )
    )
    for pos in range(0, len(data), 3):
        for value in (0x00, 0xFF):
            corrupt = data[:pos] + bytes([value]) + data[pos + 1 :]
            assert isinstance(pypi_rules.check_wheel(W.FILENAME, corrupt), list)


@pytest.mark.parametrize(
    "offset, value, what", [(8, 0, "the compression method (0 vs 8)"), (6, 0x0800, "the flags (0x0800 vs 0x0000)")]
)
def test_a_local_header_that_disagrees_on_method_or_flags_is_a_zip_format_error(tmp_path, offset, value, what):
    # PyPI compares names and sizes only; a streaming installer reading this member would see another file.
    from kestrel_release.artifacts.wheel import read_wheel

    data = bytearray(W.valid())
    pos = data.find(b"PK\x03\x04")
    struct.pack_into("<H", data, pos + offset, value)
    path = tmp_path / W.FILENAME
    path.write_bytes(bytes(data))
    problems = read_wheel(path).problems
    assert [(r, m) for r, m, _ in problems] == [("zip-format", f"{W.PKG}/__init__.py")]
    assert what in problems[0][2]
    assert _zip_verdict(bytes(data)) is None  # PyPI itself would take it


def test_builds_normalizer_turns_a_streamed_wheel_into_one_pypi_accepts(tmp_path):
    # auditwheel or a backend may stream; build's rewrite (then its gate) is what reaches --out.
    from kestrel_release.stages.build_wheels import wheelzip as _wheelzip

    wheel = tmp_path / W.FILENAME
    wheel.write_bytes(W.zip_bytes(W.members(), stream=True) + b"\n")
    with pytest.raises(BuildError):
        verify_pypi.check_built_wheel(wheel)
    _wheelzip.normalize(wheel, 1_700_000_000)
    verify_pypi.check_built_wheel(wheel)
    assert pypi_rules.check_wheel(wheel.name, wheel.read_bytes()) == []


@pytest.mark.parametrize(
    "drop, words",
    [
        ("WHEEL", f"Invalid distribution file. WHEEL not found at {W.DIST}/WHEEL"),
        ("RECORD", f"Wheel '{W.FILENAME}' does not contain the required RECORD file: {W.DIST}/RECORD"),
        ("METADATA", f"Wheel '{W.FILENAME}' does not contain the required METADATA file: {W.DIST}/METADATA"),
    ],
)
def test_a_dist_info_file_missing_where_pypi_looks_is_refused(drop, words):
    entries = {k: v for k, v in W.members().items() if k != f"{W.DIST}/{drop}"}
    assert words in [v.message for v in pypi_rules.check_wheel(W.FILENAME, W.zip_bytes(entries))]


def test_a_dist_info_named_otherwise_than_the_filename_is_not_found():
    # PyPI looks for <filename's name>-<version>.dist-info, not for whatever .dist-info is there.
    data = W.zip_bytes(W.members(dist=f"{W.NAME}-{W.VERSION}.dist-info"))
    first = pypi_rules.check_wheel(W.FILENAME, data)[0]
    assert first.message == f"Invalid distribution file. WHEEL not found at {W.DIST}/WHEEL"


def test_a_bomb_is_refused_by_its_declared_sizes_without_inflating():
    files = {f"{W.PKG}/__init__.py": W.INIT, f"{W.PKG}/zeros.bin": bytes(65 * 1024 * 1024)}
    violations = pypi_rules.check_wheel(W.FILENAME, W.zip_bytes(W.members(files=files)))
    assert violations[0].message == "Invalid distribution file. File exceeds compression ratio of 50"
