"""`explain --torch`: the variant of a project's torch x CUDA matrix, its index and the exact install line."""

from __future__ import annotations

from pathlib import Path

from tests.factories import make_project
from tests.helpers import assert_one_line_error, run_in_process
from tests.schemas import fits

VARIANTS = (
    '[tool.kestrel-release.variants]\ntorch = ["2.12", "2.13"]\ncuda = ["12.6", "13.0"]\n'
    'default = {torch = "2.13", cuda = "13.0"}\n'
)
LINUX = ["--platform", "manylinux_2_28_x86_64"]


def project(tmp_path: Path, variants: bool = True) -> Path:
    root = make_project(tmp_path / "kernels", version="0.3.0")
    if variants:
        with open(root / "pyproject.toml", "a") as fh:
            fh.write(VARIANTS)
    return root


def test_the_default_variant_is_the_pypi_line(tmp_path: Path) -> None:
    result = run_in_process(
        ["explain", "--torch", "2.13", "--gpu", "sm_90", *LINUX, "--project", str(project(tmp_path))]
    )
    assert result.code == 0, result.output
    assert "torch 2.13 on sm_90: torch213-cxx11-cu130-x86_64-linux, the default variant, from PyPI" in result.output
    assert "pip install 'kestrel-kernels==0.3.0'" in result.stdout + result.stderr


def test_another_minor_names_the_static_index_and_the_json_holds_the_lines(tmp_path: Path) -> None:
    args = ["explain", "--torch", "2.12+cu126", "--gpu", "8.0", *LINUX, "--project", str(project(tmp_path)), "--json"]
    result = run_in_process(args)
    assert result.code == 0, result.output
    doc = fits("explain-torch", result.stdout)
    assert doc["ok"] is True and doc["variant"]["name"] == "torch212-cxx11-cu126-x86_64-linux"
    assert doc["index"] == "<static-index URL>/cu126"
    assert doc["pip"].startswith(
        "pip install 'kestrel-kernels==0.3.0+cu126torch2.12' --index-url <static-index URL>/cu126 "
    )
    assert "--extra-index-url https://download.pytorch.org/whl/cu126" in doc["uv"]


def test_a_torch_not_in_the_matrix_is_exit_5_in_one_line(tmp_path: Path) -> None:
    result = run_in_process(["explain", "--torch", "2.11", *LINUX, "--project", str(project(tmp_path))])
    assert_one_line_error(
        result,
        5,
        "torch 2.11 is not in kestrel-kernels's variants matrix (torch 2.12, 2.13)",
        'add "2.11" to [tool.kestrel-release.variants] torch',
    )


def test_a_gpu_the_matrix_cannot_serve_is_exit_5_with_the_json_reason(tmp_path: Path) -> None:
    root = make_project(tmp_path / "kernels", version="0.3.0")
    with open(root / "pyproject.toml", "a") as fh:
        fh.write(
            '[tool.kestrel-release.variants]\ntorch = ["2.12"]\ncuda = ["13.0"]\n'
            'default = {torch = "2.12", cuda = "13.0"}\n'
        )
    result = run_in_process(["explain", "--torch", "2.12", "--gpu", "sm_70", *LINUX, "--project", str(root), "--json"])
    assert result.code == 5, result.output
    doc = fits("explain-torch", result.stdout)  # the answer, then the failure's error in the same document
    assert doc["ok"] is False and "dropped sm_70" in doc["why"] and doc["error"]["exit_code"] == 5


def test_a_project_without_variants_is_refused(tmp_path: Path) -> None:
    result = run_in_process(["explain", "--torch", "2.13", *LINUX, "--project", str(project(tmp_path, variants=False))])
    assert_one_line_error(result, 2, "--torch needs a project with variants")


def test_the_static_index_targets_base_url_is_the_index(tmp_path: Path) -> None:
    root = project(tmp_path)
    with open(root / "pyproject.toml", "a") as fh:
        fh.write(
            '[tool.kestrel-release.targets.mirror]\nkind = "static-index"\ndir = "idx"\n'
            'base_url = "https://example.org/whl"\n'
        )
    result = run_in_process(["explain", "--torch", "2.12", "--gpu", "sm_90", *LINUX, "--project", str(root)])
    assert result.code == 0, result.output
    assert "torch 2.12 on sm_90: torch212-cxx11-cu130-x86_64-linux from https://example.org/whl/cu130" in result.output
    assert (
        "pip install 'kestrel-kernels==0.3.0+cu130' --index-url https://example.org/whl/cu130 "
        "--extra-index-url https://download.pytorch.org/whl/cu130 --extra-index-url https://pypi.org/simple"
    ) in result.output
