"""verify on torch x CUDA variant outputs: the torch pin, one filename per variant, no +local on PyPI."""

from __future__ import annotations

import json
from pathlib import Path

from kestrel_release.files.fsutil import sha256_file
from kestrel_release.output_dir import manifest
from tests.factories import save_manifest, write_wheel
from tests.helpers import run_cli

V13 = "torch213-cxx11-cu130-x86_64-linux"
V14 = "torch214-cxx11-cu130-x86_64-linux"
TAG = "py3-none-any"


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "ext"\nversion = "0.1.0"\n\n[tool.kestrel-release]\npython = ["3.12"]\n'
        "[tool.kestrel-release.verify]\nrequired_sass = []\n"
        '[tool.kestrel-release.variants]\ntorch = ["2.13", "2.14"]\ncuda = ["13.0"]\n'
    )
    return root


def _variant_output(project: Path, name: str, torch: str, version: str, requires: str, payload: str = "") -> Path:
    out = project / "dist-all" / "variants" / name
    files = {"ext/__init__.py": f"# {payload}\n".encode()}
    wheel = write_wheel(out, "ext", version, TAG, files=files, metadata_extra=requires)
    record = {"name": name, "torch": torch, "cuda": "13.0", "cu": "cu130", "cxx11_abi": True, "os": "linux",
              "arch": "x86_64", "default": version == "0.1.0"}  # fmt: skip
    entry = {"filename": wheel.name, "python": "3.12", "python_tag": "py3", "platform_tag": "any",
             "size": wheel.stat().st_size, "sha256": sha256_file(wheel), "variant": record}  # fmt: skip
    record = save_manifest(out, {"package": "ext", "version": version, "wheels": [entry], "variant": record})
    manifest.write_sums(out, record.wheels)
    return out


def _verify(project: Path, *args: str):
    result = run_cli(["verify", "--project", str(project), "--json", *args])
    return result, json.loads(result.stdout)


def _rules(report: dict) -> set[str]:
    return {f["rule"] for w in report["wheels"] for f in w["findings"] if f["severity"] == "error"} | {
        f["rule"] for f in report["findings"] if f["severity"] == "error"
    }


def test_a_variant_wheel_must_pin_the_torch_it_was_built_against(tmp_path):
    project = _project(tmp_path / "p")
    good = _variant_output(project, V13, "2.13", "0.1.0+cu130torch2.13", "Requires-Dist: torch==2.13.*\n")
    result, report = _verify(project, "--target", "github", str(good))
    assert result.code == 0, result.stderr
    bad = _variant_output(project, V14, "2.14", "0.1.0", "Requires-Dist: torch>=2.6\n")
    result, report = _verify(project, "--target", "github", str(bad))
    assert result.code == 5 and _rules(report) == {"variant-torch-pin"}
    message = report["wheels"][0]["findings"][0]["message"]
    assert "built against torch 2.14" in message and "requires torch>=2.6" in message


def test_two_variants_may_not_ship_one_filename(tmp_path):
    project = _project(tmp_path / "p")
    a = _variant_output(project, V13, "2.13", "0.1.0+cu130", "Requires-Dist: torch==2.13.*\n", payload="a")
    b = _variant_output(project, V14, "2.14", "0.1.0+cu130", "Requires-Dist: torch==2.14.*\n", payload="b")
    result, report = _verify(project, "--target", "github", str(a), str(b))
    assert result.code == 5 and "variant-filename" in _rules(report)


def test_a_local_version_never_goes_to_pypi(tmp_path):
    project = _project(tmp_path / "p")
    out = _variant_output(project, V13, "2.13", "0.1.0+cu130torch2.13", "Requires-Dist: torch==2.13.*\n")
    result, report = _verify(project, "--target", "pypi", str(out))
    assert result.code == 5 and "local-version" in _rules(report)
