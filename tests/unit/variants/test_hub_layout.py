"""hub_layout.write: build/<variant>/<package>/ + metadata.json from a build output's variant wheels."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kestrel_release.errors import UsageError
from kestrel_release.output_dir import manifest
from kestrel_release.variants import hub_layout
from tests.factories import NAME, save_manifest, write_wheel

PKG = NAME.replace("-", "_")


def output(out: Path) -> Path:
    """Variant wheels where build puts them: the default in OUT, the others under variants/<name>/ (+cu126)."""
    rows = []
    for torch, cuda, default in (("2.13", "13.0", True), ("2.12", "12.6", False)):
        cu = "cu" + cuda.replace(".", "")
        name = f"torch{torch.replace('.', '')}-cxx11-{cu}-x86_64-linux"
        version = "0.2.0" if default else f"0.2.0+{cu}"
        where = out if default else out / "variants" / name
        files = {
            f"{PKG}/__init__.py": b"X = 1\n",
            f"{PKG}/_C.cpython-312-x86_64-linux-gnu.so": b"\x7fELF312",
            f"{PKG.replace('_', '-')}.libs/libcudart-1a2b.so.13": b"\x7fELFlib",
        }
        wheel = write_wheel(where, NAME, version, "cp312-cp312-manylinux_2_28_x86_64", files=files)
        rows.append(
            {"filename": wheel.name, "sha256": "0", "variant": {"torch": torch, "cuda": cuda, "default": default}}
        )
    save_manifest(out, {"package": NAME, "version": "0.2.0", "git": {"commit": None, "dirty": True}, "wheels": rows})
    return out


def test_each_variant_gets_its_directory_with_the_grafted_libs_beside_the_package(tmp_path: Path) -> None:
    hub = hub_layout.write(output(tmp_path), NAME)
    assert [v.name for v in hub.variants] == ["torch212-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux"]
    vdir = tmp_path / "build" / "torch212-cxx11-cu126-x86_64-linux"
    assert (vdir / PKG / "_C.cpython-312-x86_64-linux-gnu.so").read_bytes() == b"\x7fELF312"
    assert (vdir / "kestrel-kernels.libs" / "libcudart-1a2b.so.13").is_file()  # RPATH $ORIGIN/../<name>.libs
    meta = json.loads((vdir / "metadata.json").read_text())
    assert meta["version"] == 0 and meta["backend"] == {"type": "cuda"}  # no CUDA binary inside: no archs
    assert "kernel" not in meta["provenance"]  # no commit recorded: none claimed


def test_a_second_run_replaces_its_own_and_drops_a_variant_no_longer_built(tmp_path: Path) -> None:
    out = output(tmp_path)
    hub_layout.write(out, NAME)
    (tmp_path / "build" / "torch213-cxx11-cu130-x86_64-linux" / PKG / "stale.py").write_text("old")
    data = manifest.load(out)
    assert data is not None
    manifest.save(out, replace(data, wheels=tuple(w for w in data.wheels if (w.variant or {})["torch"] == "2.13")))
    hub_layout.write(out, NAME)
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == ["torch213-cxx11-cu130-x86_64-linux"]
    assert not (tmp_path / "build" / "torch213-cxx11-cu130-x86_64-linux" / PKG / "stale.py").exists()


def test_a_variant_directory_it_did_not_write_is_left_alone(tmp_path: Path) -> None:
    out = output(tmp_path)
    mine = tmp_path / "build" / "torch213-cxx11-cu130-x86_64-linux"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("the user's")
    with pytest.raises(UsageError, match="kestrel-release did not write it"):
        hub_layout.write(out, NAME)
    assert (mine / "notes.txt").read_text() == "the user's"


def test_each_variants_folder_is_read_through_its_own_manifest(tmp_path: Path) -> None:
    """build's layout: <out>/variants/<name>/ holds each variant's wheels and manifest (package-suffix names
    differ), the default's also copied into <out>/ (counted once)."""
    out = tmp_path / "out"
    for torch, cuda, package in (("2.13", "13.0", NAME), ("2.12", "12.6", f"{NAME}-cu12")):
        cu = "cu" + cuda.replace(".", "")
        folder = out / "variants" / f"torch{torch.replace('.', '')}-cxx11-{cu}-x86_64-linux"
        wheel = write_wheel(
            folder, package, "0.2.0", "cp312-cp312-manylinux_2_28_x86_64", files={f"{PKG}/__init__.py": b"X = 1\n"}
        )
        record = {"filename": wheel.name, "sha256": "s" + cu, "variant": {"torch": torch, "cuda": cuda}}
        save_manifest(folder, {"package": package, "version": "0.2.0", "wheels": [record]})
        if torch == "2.13":
            (out / wheel.name).write_bytes(wheel.read_bytes())
            save_manifest(out, {"package": NAME, "version": "0.2.0", "wheels": [record]})
    hub = hub_layout.write(out, NAME, configured=True)
    assert [(v.name, v.package, len(v.wheels)) for v in hub.variants] == [
        ("torch212-cxx11-cu126-x86_64-linux", PKG, 1),
        ("torch213-cxx11-cu130-x86_64-linux", PKG, 1),
    ]


def test_metadata_names_the_cuda_archs_of_the_binaries_in_kernels_words(tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[2] / "data" / "cuda"
    files = {
        f"{PKG}/__init__.py": b"",
        f"{PKG}/_ops.so": (data / "release" / "aarch64_sm90a.so").read_bytes(),
        f"{PKG}/attn.fatbin": (data / "explain" / "cu130-sm80.fatbin").read_bytes(),
    }
    wheel = write_wheel(tmp_path, NAME, "0.2.0", "cp312-cp312-manylinux_2_28_aarch64", files=files)
    row = {"filename": wheel.name, "variant": {"torch": "2.13", "cuda": "13.0", "arch": "aarch64"}}
    save_manifest(tmp_path, {"package": NAME, "version": "0.2.0", "wheels": [row]})
    (variant,) = hub_layout.write(tmp_path, NAME).variants
    assert variant.name == "torch213-cxx11-cu130-aarch64-linux"
    meta = json.loads((tmp_path / "build" / variant.name / "metadata.json").read_text())
    assert meta["backend"] == {"type": "cuda", "archs": ["8.0", "9.0a", "9.0a+PTX"]}
    kernels_archs = pytest.importorskip("kernels.archs")  # kernels reads each word (None: a word it cannot)
    assert all(kernels_archs._parse_cuda_arch(a) is not None for a in meta["backend"]["archs"])
    assert kernels_archs._supports_cuda_capability(meta["backend"]["archs"], (9, 0))
    assert not kernels_archs._supports_cuda_capability(meta["backend"]["archs"], (10, 0))


def test_an_absolute_self_import_is_named_with_the_fix(tmp_path: Path) -> None:
    """kernels imports the package under its metadata id: `from kestrel_kernels import _C` inside it fails."""
    files = {
        f"{PKG}/__init__.py": f"import torch\nfrom {PKG} import _C\nfrom . import ops\n".encode(),
        f"{PKG}/ops.py": f"import {PKG}.ops as me\n".encode(),
    }
    wheel = write_wheel(tmp_path, NAME, "0.2.0", "cp312-cp312-manylinux_2_28_x86_64", files=files)
    save_manifest(
        tmp_path,
        {
            "package": NAME,
            "version": "0.2.0",
            "wheels": [{"filename": wheel.name, "variant": {"torch": "2.13", "cuda": "13.0"}}],
        },
    )
    (variant,) = hub_layout.write(tmp_path, NAME).variants
    (warning,) = variant.warnings
    assert warning.startswith(f"{PKG}/__init__.py:2, {PKG}/ops.py:1 imports {PKG} by its absolute name")
    assert "from . import" in warning
