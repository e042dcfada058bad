"""PEP 825 (Draft) variant-labelled wheels never go to a PyPI-like index: exit 5, one line, before any upload."""

from __future__ import annotations

from pathlib import Path

import pytest

from kestrel_release.variants import pep825_wheel
from tests.factories import NAME, make_project, save_manifest, write_wheel
from tests.helpers import assert_one_line_error, run_cli

TAG = "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    wheel = write_wheel(out, NAME, "0.2.0", TAG)
    save_manifest(
        out,
        {
            "package": NAME,
            "version": "0.2.0",
            "wheels": [{"filename": wheel.name, "variant": {"torch": "2.13", "cuda": "13.0"}}],
        },
    )
    pep825_wheel.write(out, NAME)
    return out / "pep825"


@pytest.mark.parametrize("target", ["testpypi", "pypi"])
def test_a_labelled_wheel_is_refused_for_a_pypi_like_target(tmp_path: Path, labelled: Path, target: str) -> None:
    project = make_project(tmp_path / "kernels")
    wheel = next(labelled.glob("*.whl"))
    for given in (wheel, labelled):  # the file, or the folder holding it
        result = run_cli(
            ["publish", str(given), "--target", target, "--project", str(project), "--yes"],
            env={"TWINE_USERNAME": "__token__", "TWINE_PASSWORD": "pypi-never-used"},
        )
        assert_one_line_error(
            result, 5, "PEP 825 (Draft)", f"{wheel.name} is a variant-labelled wheel", f"{target} (a PyPI-like index)"
        )
        assert "pypi-never-used" not in result.output
