"""explain --torch: the variant a torch user installs, its index and the exact pip/uv line, or why none."""

from __future__ import annotations

import pytest

from kestrel_release.config.variants import Variant, VariantError, VariantsConfig
from kestrel_release.flows.explain import torch as t

CFG = VariantsConfig(torch=("2.12", "2.13"), cuda=("12.6", "13.0"), default=Variant("2.13", "13.0"))
ROOT = "https://example.org/whl"
LINUX = "manylinux_2_28_x86_64"


def ask(torch: str, device=None, cfg: VariantsConfig = CFG, root: str | None = ROOT) -> t.TorchAnswer:
    return t.answer(
        cfg, project="kestrel-kernels", version="0.3.0", torch=torch, device=device, platform=LINUX, static_root=root
    )


def test_the_default_variant_comes_from_pypi() -> None:
    a = ask("2.13", (9, 0))
    assert a.variant is not None and a.variant["name"] == "torch213-cxx11-cu130-x86_64-linux"
    assert a.variant["default"] is True and a.index == "pypi"
    assert a.pip == "pip install 'kestrel-kernels==0.3.0'"
    assert a.uv == "uv pip install 'kestrel-kernels==0.3.0'"


def test_another_torch_minor_comes_from_the_static_index_of_its_cuda() -> None:
    a = ask("2.12.1", (9, 0))
    assert a.variant is not None and a.variant["name"] == "torch212-cxx11-cu130-x86_64-linux"  # newest CUDA fits
    assert a.index == f"{ROOT}/cu130"
    assert a.pip == (
        f"pip install 'kestrel-kernels==0.3.0+cu130' --index-url {ROOT}/cu130 "
        "--extra-index-url https://download.pytorch.org/whl/cu130 --extra-index-url https://pypi.org/simple"
    )
    assert a.uv.startswith(f"uv pip install 'kestrel-kernels==0.3.0+cu130' --index-url {ROOT}/cu130 ")
    assert a.uv.endswith("--index-strategy unsafe-best-match")


def test_a_named_cuda_flavour_picks_that_variant() -> None:
    a = ask("2.13+cu126", (8, 0))
    assert a.variant is not None and a.variant["cu"] == "cu126" and a.index == f"{ROOT}/cu126"
    assert "'kestrel-kernels==0.3.0+cu126torch2.13'" in a.pip


def test_a_torch_minor_not_in_the_matrix_says_which_are() -> None:
    a = ask("2.11")
    assert not a.ok
    assert a.why == "torch 2.11 is not in kestrel-kernels's variants matrix (torch 2.12, 2.13)"


def test_a_gpu_no_toolkit_of_the_matrix_compiles_is_explained() -> None:
    old = VariantsConfig(torch=("2.12",), cuda=("12.6",), default=Variant("2.12", "12.6"))
    a = ask("2.12", (12, 0), cfg=old)
    assert not a.ok and a.why.startswith("no variant of torch 2.12 runs on sm_120: torch212-cxx11-cu126-x86_64-linux:")
    assert "does not compile sm_120" in a.why


def test_cuda_13_does_not_serve_an_old_gpu_but_cuda_12_does() -> None:
    a = ask("2.12", (7, 0))  # Volta: CUDA 13 dropped it
    assert a.variant is not None and a.variant["cu"] == "cu126"
    assert any("dropped sm_70" in c["why_not"] for c in a.considered)


def test_package_suffix_variants_are_on_pypi_under_their_own_name() -> None:
    cfg = VariantsConfig(
        torch=("2.13",), cuda=("12.6", "13.0"), default=Variant("2.13", "13.0"), naming="package-suffix"
    )
    a = ask("2.13+cu126", cfg=cfg)
    assert a.index == "pypi" and a.pip == "pip install 'kestrel-kernels-cu12==0.3.0'"


def test_no_static_index_configured_says_what_to_set() -> None:
    a = ask("2.12", root=None)
    assert a.index == "<static-index URL>/cu130" and "static-index" in a.fix


@pytest.mark.parametrize("bad", ["two", "2", "2.13+rocm6"])
def test_a_bad_torch_version_is_refused(bad: str) -> None:
    with pytest.raises(VariantError):
        t.parse_request(bad)


def test_static_root_reads_the_static_index_target() -> None:
    from kestrel_release.targets.base import VariantIndex

    assert t.static_root({"mirror": VariantIndex("idx", ROOT, False)}) == (ROOT, "mirror")
    assert t.static_root({"mirror": VariantIndex("idx", "", False)}) == (None, "mirror")
    assert t.static_root({}) == (None, "")


STABLE = VariantsConfig(
    torch=("2.13",), cuda=("12.6", "13.0"), default=Variant("2.13", "13.0", stable_abi="2.10"), stable_abi="2.10"
)


def test_a_stable_abi_project_serves_every_torch_from_its_target() -> None:
    for torch in ("2.10", "2.14", "2.15.1"):  # never built against these: the one wheel loads on each
        a = ask(torch, cfg=STABLE)
        assert a.variant is not None and a.variant["name"] == "torch-stable-abi210-cu130-x86_64-linux", torch
        assert a.loads_on == "torch>=2.10" and a.index == "pypi"
    old_gpu = ask("2.14+cu126", cfg=STABLE)
    assert old_gpu.variant is not None and old_gpu.variant["name"] == "torch-stable-abi210-cu126-x86_64-linux"
    assert old_gpu.pip.startswith("pip install 'kestrel-kernels==0.3.0+cu126' --index-url")


def test_a_torch_older_than_the_stable_target_is_refused_with_why() -> None:
    a = ask("2.9", cfg=STABLE)
    assert not a.ok
    assert (
        a.why
        == "torch 2.9 is older than kestrel-kernels's stable-ABI target 2.10: its wheels load on torch 2.10 and later only"
    )
    newer_cuda = ask("2.14+cu129", cfg=VariantsConfig(torch=("2.13",), cuda=("13.0",), stable_abi="2.10"))
    assert (
        newer_cuda.why
        == "kestrel-kernels's stable-ABI wheels are built for CUDA 13.0, and none loads with torch 2.14+cu129"
    )
