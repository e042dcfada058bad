"""PEP 825 (Draft) variant wheels written from a build output's variant wheels."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from kestrel_release.artifacts.wheel import read_wheel
from kestrel_release.errors import UsageError
from kestrel_release.stages.verify.rules import check_record
from kestrel_release.variants import pep825, pep825_wheel
from tests.factories import NAME, save_manifest, write_wheel

PKG = NAME.replace("-", "_")
TAG = "cp312-cp312-manylinux_2_28_x86_64"


def output(out: Path) -> Path:
    rows = []
    for torch, cuda, version in (("2.13", "13.0", "0.2.0"), ("2.12", "12.6", "0.2.0+cu126")):
        wheel = write_wheel(out, NAME, version, TAG, files={f"{PKG}/__init__.py": b"X = 1\n"})
        rows.append({"filename": wheel.name, "variant": {"torch": torch, "cuda": cuda, "default": version == "0.2.0"}})
    save_manifest(out, {"package": NAME, "version": "0.2.0", "wheels": rows})
    return out


def test_each_variant_wheel_gets_its_label_and_variant_json_and_one_index_file(tmp_path: Path) -> None:
    result = pep825_wheel.write(output(tmp_path), NAME)
    assert sorted(result.wheels) == [
        f"{PKG}-0.2.0-{TAG}-torch212_cu126.whl",  # one version: the label, not +cu126, tells them apart
        f"{PKG}-0.2.0-{TAG}-torch213_cu130.whl",
    ]
    assert result.index_file == f"{PKG}-0.2.0-variants.json"
    folder = tmp_path / "pep825"
    index = json.loads((folder / result.index_file).read_text())
    assert pep825.problems(index) == [] and sorted(index["variants"]) == ["torch212_cu126", "torch213_cu130"]
    for name in result.wheels:
        lab = pep825.split_filename(name)[1]
        with zipfile.ZipFile(folder / name) as zf:
            doc = json.loads(zf.read(f"{PKG}-0.2.0.dist-info/variant.json"))
            assert b"Version: 0.2.0\n" in zf.read(f"{PKG}-0.2.0.dist-info/METADATA")
            assert not [n for n in zf.namelist() if "+cu126" in n]
        assert pep825.problems(doc, lab) == []
        assert doc["variants"][lab] == index["variants"][lab]  # the wheel and the index agree
        wheel = read_wheel(folder / name)
        assert wheel.problems == [] and check_record(wheel) == []  # RECORD matches every member


def test_a_second_run_replaces_its_folder_and_a_foreign_file_stops_it(tmp_path: Path) -> None:
    out = output(tmp_path)
    pep825_wheel.write(out, NAME)
    pep825_wheel.write(out, NAME)
    (tmp_path / "pep825" / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"PEP 825 \(Draft\): .* did not write"):
        pep825_wheel.write(out, NAME)


def test_a_build_without_variants_labels_nothing(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path, NAME, "0.2.0", TAG)
    save_manifest(tmp_path, {"package": NAME, "version": "0.2.0", "wheels": [{"filename": wheel.name}]})
    assert pep825_wheel.write(tmp_path, NAME).wheels == []
    assert not (tmp_path / "pep825").exists()
