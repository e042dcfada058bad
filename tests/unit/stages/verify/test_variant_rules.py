"""verify's variant rules on their inputs: the torch pin and the CUDA major of DT_NEEDED."""

from __future__ import annotations

from kestrel_release.stages.verify.variant_rules import wheel_findings

RECORD = {"variant": {"name": "torch214-cxx11-cu130-x86_64-linux", "torch": "2.14", "cuda": "13.0"}}


def test_pinned_and_matching_cuda_passes():
    needed = {"ext/_C.so": ["libc10.so", "libtorch.so", "libcudart.so.13", "libcufft.so.12"]}
    assert wheel_findings(RECORD, ["numpy", "torch==2.14.*", "torch>=2; extra == 'x'"], needed) == []


def test_wrong_pin_and_cuda_12_runtime_in_a_cuda_13_variant():
    needed = {"ext/_C.so": ["libcudart.so.12", "libcublas.so.12"]}
    found = wheel_findings(RECORD, ["torch>=2.6"], needed)
    assert [(f.rule, f.member) for f in found] == [
        ("variant-torch-pin", "METADATA"),
        ("variant-cuda-major", "ext/_C.so"),
        ("variant-cuda-major", "ext/_C.so"),
    ]
    assert "needs libcudart.so.12 (CUDA 12) but is the CUDA 13.0 variant" in found[1].message


STABLE = {
    "variant": {"name": "torch-stable-abi210-cu130-x86_64-linux", "torch": "2.13", "cuda": "13.0", "stable_abi": "2.10"}
}


def test_a_stable_abi_variant_requires_its_target_and_up():
    assert wheel_findings(STABLE, ["torch>=2.10"], {}) == []
    (found,) = wheel_findings(STABLE, ["torch==2.13.*"], {})
    assert found.rule == "variant-torch-pin"
    assert (
        "built for the torch 2.10 stable ABI (torch-stable-abi210-cu130-x86_64-linux) but requires torch==2.13.*"
        in (found.message)
    )
    assert "it must require torch>=2.10" in found.message
