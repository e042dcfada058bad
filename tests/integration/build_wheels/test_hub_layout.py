"""`--layout kernels-hub`: kernel-builder's build/<variant>/ written from the wheels, loaded by the `kernels`
package from PyPI (its local loader, `kernels.get_local_kernel`), and one clear line when it cannot be."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kestrel_release.output_dir import manifest
from kestrel_release.records import serde
from kestrel_release.records.manifest import Wheel
from tests.factories import NAME, make_dist, make_project, save_manifest, write_wheel
from tests.helpers import assert_one_line_error, need, run_cli

VARIANTS = {
    "torch213-cxx11-cu130-x86_64-linux": ("2.13", "13.0"),
    "torch212-cxx11-cu126-x86_64-linux": ("2.12", "12.6"),
}
PKG = NAME.replace("-", "_")
INIT = b"from ._ops import scale\n\ndef double(x):\n    return scale(x, 2)\n"
OPS = b"def scale(x, k):\n    return x * k\n"


def _kernels_python() -> str:
    probe = subprocess.run([sys.executable, "-c", "import kernels"], capture_output=True, text=True)
    if probe.returncode != 0:
        need("the kernels package", "tools/uv sync (it is in the dev group)")
    return sys.executable


def variant_output(out: Path, pythons: tuple[str, ...] = ("3.12", "3.13")) -> Path:
    """A build output holding two variants' wheels with their manifest records (the second variant for
    Python 3.11 only, so that every filename differs at one version: assemble checks that)."""
    rows = []
    for torch, cuda in VARIANTS.values():
        default = torch == "2.13"
        version, where = "0.1.0", out
        for py in pythons if default else ("3.11",):
            tag = f"cp{py.replace('.', '')}-cp{py.replace('.', '')}-manylinux_2_34_x86_64"
            wheel = write_wheel(
                where,
                NAME,
                version,
                tag,
                files={f"{PKG}/__init__.py": INIT, f"{PKG}/_ops.py": OPS},
                metadata_extra="License-Expression: Apache-2.0\n",
            )
            row = manifest_row(wheel, py, out)
            row["variant"] = {
                "torch": torch,
                "cuda": cuda,
                "cxx11_abi": True,
                "os": "linux",
                "arch": "x86_64",
                "default": default,
            }
            rows.append(row)
    record = save_manifest(
        out,
        {
            "package": NAME,
            "version": "0.1.0",
            "git": {"commit": "c" * 40, "dirty": False},
            "toolchain": {},
            "wheels": rows,
            "kernels": [],
        },
    )
    manifest.write_sums(out, record.wheels)
    return out


def manifest_row(wheel: Path, py: str, out: Path) -> dict:
    import hashlib

    data = wheel.read_bytes()
    return {
        "filename": wheel.relative_to(out).as_posix(),
        "python": py,
        "python_tag": "cp" + py.replace(".", ""),
        "platform_tag": "manylinux_2_34_x86_64",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "kernels")


def test_hub_layout_is_loaded_by_kernels_local_loader(project: Path, tmp_path: Path) -> None:
    python = _kernels_python()
    made = variant_output(tmp_path / "in")
    result = run_cli(
        [
            "assemble",
            str(made),
            "--out",
            str(tmp_path / "rel"),
            "--project",
            str(project),
            "--layout",
            "kernels-hub",
            "--json",
        ]
    )
    assert result.code == 0, result.output
    hub = json.loads(result.stdout)["hub"]
    assert sorted(v["variant"] for v in hub["variants"]) == sorted(VARIANTS)
    for name in VARIANTS:
        vdir = tmp_path / "rel" / "build" / name
        assert (vdir / PKG / "__init__.py").read_bytes() == INIT
        meta = json.loads((vdir / "metadata.json").read_text())
        assert meta["name"] == "kestrel-kernels" and meta["license"] == "Apache-2.0"
        assert meta["provenance"]["kernel"] == {"commit": "c" * 40, "dirty": False}
        assert set(meta["digest"]["files"]) == {f"{PKG}/__init__.py", f"{PKG}/_ops.py"}
    script = (
        "import sys\nfrom pathlib import Path\nimport kernels\nfrom kernels._rust import Digest, DigestAlgorithm\n"
        "v = Path(sys.argv[1])\nmod = kernels.get_local_kernel(v)\nprint('double', mod.double(21))\n"
        "meta = kernels.get_loaded_kernels()[-1].metadata\n"
        "meta.digest.validate(Digest.hash_variant(DigestAlgorithm.SHA256, v))\nprint('digest ok', meta.name)\n"
    )
    for name in VARIANTS:
        ran = subprocess.run(
            [python, "-c", script, str(tmp_path / "rel" / "build" / name)],
            capture_output=True,
            text=True,
            timeout=300,
            env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        )
        assert ran.returncode == 0, ran.stderr
        assert "double 42" in ran.stdout and "digest ok kestrel-kernels" in ran.stdout


def test_a_file_that_differs_between_pythons_is_refused(project: Path, tmp_path: Path) -> None:
    out = variant_output(tmp_path / "in", pythons=("3.12",))
    data = manifest.load(out)
    assert data is not None
    tag = "cp313-cp313-manylinux_2_34_x86_64"
    wheel = write_wheel(out, NAME, "0.1.0", tag, files={f"{PKG}/__init__.py": b"X = 2\n", f"{PKG}/_ops.py": OPS})
    row = serde.from_json(Wheel, {**manifest_row(wheel, "3.13", out), "variant": data.wheels[0].variant})
    data = replace(data, wheels=(*data.wheels, row))
    manifest.save(out, data)
    manifest.write_sums(out, data.wheels)
    result = run_cli(
        ["assemble", str(out), "--out", str(tmp_path / "rel"), "--project", str(project), "--layout", "kernels-hub"]
    )
    assert_one_line_error(result, 2, f"{PKG}/__init__.py differs between the wheels of one variant")
    assert not (tmp_path / "rel").exists()  # assemble's output is all or nothing


def test_a_project_without_variants_or_torch_is_refused_in_one_line(project: Path, tmp_path: Path) -> None:
    make_dist(tmp_path / "in")
    result = run_cli(
        [
            "assemble",
            str(tmp_path / "in"),
            "--out",
            str(tmp_path / "rel"),
            "--project",
            str(project),
            "--layout",
            "kernels-hub",
        ]
    )
    assert_one_line_error(result, 2, "--layout kernels-hub needs the torch", "[tool.kestrel-release.variants]")
    assert not (tmp_path / "rel").exists()


def test_a_project_without_variants_gets_the_variant_of_its_torch(project: Path, tmp_path: Path) -> None:
    python = _kernels_python()
    make_dist(tmp_path / "in")
    data = manifest.load(tmp_path / "in")
    assert data is not None
    torch = {"version": "2.11.0+cu130", "cuda": "13.0", "cxx11_abi": True}
    manifest.save(tmp_path / "in", replace(data, toolchain={"torch": torch}))
    result = run_cli(
        [
            "assemble",
            str(tmp_path / "in"),
            "--out",
            str(tmp_path / "rel"),
            "--project",
            str(project),
            "--layout",
            "kernels-hub",
        ]
    )
    assert result.code == 0, result.output
    vdir = tmp_path / "rel" / "build" / "torch211-cxx11-cu130-x86_64-linux"
    assert "kernels-hub layout: 1 variants" in result.output
    ran = subprocess.run(
        [
            python,
            "-c",
            "import sys, kernels; m = kernels.get_local_kernel(__import__('pathlib')."
            "Path(sys.argv[1])); print(m.__version__)",
            str(vdir),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "0.1.0"


def test_an_unknown_layout_is_refused(project: Path, tmp_path: Path) -> None:
    make_dist(tmp_path / "in")
    result = run_cli(
        ["assemble", str(tmp_path / "in"), "--out", str(tmp_path / "rel"), "--project", str(project), "--layout", "hub"]
    )
    assert_one_line_error(result, 2, "--layout 'hub' is not a layout", "kernels-hub")


def test_wheels_without_variant_records_in_a_project_with_variants_are_told_to_rebuild(tmp_path: Path) -> None:
    root = make_project(tmp_path / "kernels")
    with open(root / "pyproject.toml", "a") as fh:
        fh.write('[tool.kestrel-release.variants]\ntorch = ["2.13"]\ncuda = ["13.0"]\n')
    make_dist(tmp_path / "in")
    result = run_cli(
        [
            "assemble",
            str(tmp_path / "in"),
            "--out",
            str(tmp_path / "rel"),
            "--project",
            str(root),
            "--layout",
            "kernels-hub",
        ]
    )
    assert_one_line_error(result, 2, "carries no variant record, though the project configures variants", "rebuild")
    assert not (tmp_path / "rel").exists()
