"""The matrix reads abi3 and py3 wheels as covering every configured Python above their floor."""

from __future__ import annotations

from dataclasses import dataclass, field

from kestrel_release.stages.verify import matrix as verify_matrix
from kestrel_release.stages.version import source as version_source

PYTHONS = ("3.10", "3.11", "3.12", "3.13")


@dataclass
class W:
    filename: str
    tags: list[str] = field(default_factory=list)


def _wheel(tag: str) -> W:
    return W(f"k-0.1.0-{tag}.whl", [tag])


def _messages(findings) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in findings]


def test_one_abi3_wheel_covers_every_configured_python() -> None:
    assert verify_matrix.check([_wheel("cp310-abi3-manylinux_2_28_x86_64")], PYTHONS) == []


def test_py3_none_covers_every_python() -> None:
    assert verify_matrix.check([_wheel("py3-none-manylinux_2_28_x86_64")], PYTHONS) == []


def test_a_python_below_the_abi3_floor_is_uncovered_and_says_why() -> None:
    found = _messages(verify_matrix.check([_wheel("cp311-abi3-manylinux_2_28_x86_64")], PYTHONS))
    assert found == [
        (
            "error",
            ("no wheel for Python 3.10 (cp311-abi3 starts above it): build it (kestrel-release build --python 3.10)"),
        )
    ]


def test_abi3_plus_a_per_python_wheel_is_two_wheels_for_that_python() -> None:
    wheels = [_wheel("cp310-abi3-manylinux_2_28_x86_64"), _wheel("cp312-cp312-manylinux_2_28_x86_64")]
    found = _messages(verify_matrix.check(wheels, PYTHONS))
    assert len(found) == 1 and found[0][0] == "error" and found[0][1].startswith("2 wheels for Python 3.12")


def test_each_platform_needs_its_own_coverage() -> None:
    wheels = [_wheel("cp310-abi3-manylinux_2_28_x86_64"), _wheel("cp312-cp312-manylinux_2_28_aarch64")]
    found = _messages(verify_matrix.check(wheels, PYTHONS))
    missing = sorted(m.split(":")[0] for _, m in found)
    assert missing == [
        "no wheel for Python 3.10 on manylinux_2_28_aarch64",
        "no wheel for Python 3.11 on manylinux_2_28_aarch64",
        "no wheel for Python 3.13 on manylinux_2_28_aarch64",
    ]


def test_per_python_wheels_still_need_one_each() -> None:
    wheels = [_wheel(f"cp3{m}-cp3{m}-manylinux_2_28_x86_64") for m in (10, 11, 12)]
    assert [m.split(":")[0] for _, m in _messages(verify_matrix.check(wheels, PYTHONS))] == ["no wheel for Python 3.13"]


def test_vcs_versions_are_recognised(tmp_path) -> None:
    cases = {
        '[build-system]\nrequires = ["setuptools>=64", "setuptools-scm>=8"]\n': "setuptools-scm",
        '[build-system]\nrequires = ["setuptools", "setuptools_scm[toml]"]\n': "setuptools-scm",
        '[project]\nname = "x"\ndynamic = ["version"]\n[tool.setuptools_scm]\n': "setuptools-scm",
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\n': "hatch-vcs",
        '[tool.hatch.version]\nsource = "vcs"\n': "hatch-vcs",
        '[build-system]\nrequires = ["setuptools", "versioneer[toml]"]\n': "versioneer",
        '[build-system]\nrequires = ["setuptools>=64"]\n': None,
        '[tool.hatch.version]\npath = "x/__init__.py"\n': None,
    }
    for text, tool in cases.items():
        (tmp_path / "pyproject.toml").write_text(text)
        assert version_source.vcs_tool(tmp_path) == tool, text


COMPRESSED = "manylinux1_x86_64.manylinux_2_28_x86_64.manylinux_2_5_x86_64"


def _named(filename: str) -> W:
    """A wheel as verify reads it: every tag its filename's compressed tag sets expand to."""
    from packaging.utils import parse_wheel_filename

    return W(filename, sorted(str(t) for t in parse_wheel_filename(filename)[3]))


def test_a_compressed_platform_tag_is_one_platform_not_three() -> None:
    wheels = [_named(f"k-0.1.0-cp3{m}-cp3{m}-{COMPRESSED}.whl") for m in (10, 11, 12, 13)]
    assert verify_matrix.check(wheels, PYTHONS) == []
    # A missing Python is one error, on no platform split three ways.
    found = _messages(verify_matrix.check(wheels[:3], PYTHONS))
    assert found == [("error", "no wheel for Python 3.13: build it (kestrel-release build --python 3.13)")]


def test_a_compressed_tag_counts_once_for_the_configured_platform_it_names() -> None:
    wheels = [_named(f"k-0.1.0-cp3{m}-cp3{m}-{COMPRESSED}.whl") for m in (10, 11, 12)]
    found = _messages(verify_matrix.check(wheels, PYTHONS, ("manylinux_2_28_x86_64",)))
    assert found == [
        (
            "error",
            "no wheel for Python 3.13 on manylinux_2_28_x86_64: build it on a manylinux_2_28_x86_64 machine "
            "(kestrel-release build --python 3.13)",
        )
    ]


def test_a_py2_py3_wheel_with_a_compressed_platform_is_one_wheel_for_every_python() -> None:
    assert verify_matrix.check([_named(f"k-0.1.0-py2.py3-none-{COMPRESSED}.whl")], PYTHONS) == []
    assert verify_matrix.check([_named("k-0.1.0-py2.py3-none-any.whl")], PYTHONS, ("manylinux_2_28_x86_64",)) == []


def test_wheels_sharing_a_platform_tag_are_one_platform() -> None:
    wheels = [
        _named("k-0.1.0-cp310-cp310-manylinux_2_28_x86_64.whl"),
        _named(f"k-0.1.0-cp311-cp311-{COMPRESSED}.whl"),
        _named("k-0.1.0-cp312-cp312-manylinux_2_5_x86_64.manylinux1_x86_64.whl"),
        _named("k-0.1.0-cp313-cp313-manylinux_2_28_x86_64.whl"),
    ]
    assert verify_matrix.check(wheels, PYTHONS) == []


FREE = ("3.14", "3.14t", "3.15", "3.15t")


def test_per_python_wheels_for_free_threaded_builds_are_pythons_of_their_own() -> None:
    tags = ["cp314-cp314", "cp314-cp314t", "cp315-cp315", "cp315-cp315t"]
    assert verify_matrix.check([_wheel(f"{t}-manylinux_2_28_x86_64") for t in tags], FREE) == []
    found = _messages(verify_matrix.check([_wheel(f"{t}-manylinux_2_28_x86_64") for t in tags[:3]], FREE))
    assert found == [("error", "no wheel for Python 3.15t: build it (kestrel-release build --python 3.15t)")]


def test_an_abi3_wheel_does_not_serve_free_threaded_pythons_and_says_so() -> None:
    found = _messages(verify_matrix.check([_wheel("cp310-abi3-manylinux_2_28_x86_64")], ("3.13", "3.14", "3.14t")))
    assert found == [
        (
            "error",
            "no wheel for Python 3.14t (cp310-abi3 does not serve free-threaded builds; an abi3t wheel would): "
            "build it (kestrel-release build --python 3.14t)",
        )
    ]


def test_abi3_plus_abi3t_covers_both_builds_from_3_15() -> None:
    wheels = [_wheel("cp310-abi3-manylinux_2_28_x86_64"), _wheel("cp315-abi3t-manylinux_2_28_x86_64")]
    assert verify_matrix.check(wheels, ("3.14", "3.15", "3.15t")) == []
    found = _messages(verify_matrix.check([wheels[1]], ("3.15", "3.15t")))
    assert found == [
        (
            "error",
            "no wheel for Python 3.15 (cp315-abi3t serves free-threaded builds only): "
            "build it (kestrel-release build --python 3.15)",
        )
    ]


def test_an_unlisted_free_threaded_wheel_is_named() -> None:
    wheels = [_wheel("cp314-cp314-manylinux_2_28_x86_64"), _wheel("cp314-cp314t-manylinux_2_28_x86_64")]
    found = _messages(verify_matrix.check(wheels, ("3.14",)))
    assert found == [("warning", "a wheel for Python 3.14t, which the configuration does not list")]
