"""The variant model (config/variants.py): names as kernel-builder writes them, the matrix, selectors, versions."""

from __future__ import annotations

import pytest

from kestrel_release.config.variants import Exclude, Variant, VariantError, VariantsConfig


def _cfg(**kw) -> VariantsConfig:
    base = dict(torch=("2.12", "2.13"), cuda=("12.6", "13.0"), default=Variant("2.13", "13.0"))
    return VariantsConfig(**{**base, **kw})


def test_names_as_kernel_builder_writes_them():
    v = Variant("2.13", "13.0")
    assert (v.cu, v.torch_tag, v.name) == ("cu130", "torch213", "torch213-cxx11-cu130-x86_64-linux")
    assert Variant("2.9", "12.6", cxx11_abi=False).name == "torch29-cxx98-cu126-x86_64-linux"
    assert Variant("2.13", "13.0", os="windows").name == "torch213-cu130-x86_64-windows"
    assert Variant("2.13", "13.0", arch="aarch64").name == "torch213-cxx11-cu130-aarch64-linux"
    assert v.requirement == "torch==2.13.*"


def test_json_round_trip_ignores_extra_keys():
    v = Variant("2.12", "12.6", arch="aarch64")
    data = {**v.to_json(), "default": False}
    assert Variant.from_json(data) == v
    with pytest.raises(VariantError, match="needs torch and cuda"):
        Variant.from_json({"torch": "2.12"})


def test_matrix_minus_excludes_and_default():
    cfg = _cfg(exclude=(Exclude(torch="2.12", cuda="12.6"),))
    assert [v.name for v in cfg.matrix()] == [
        "torch212-cxx11-cu130-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
        "torch213-cxx11-cu130-x86_64-linux",
    ]
    assert [cfg.is_default(v) for v in cfg.matrix()] == [False, False, True]


def test_versions_and_names_per_naming():
    cfg = _cfg()
    assert cfg.wheel_version("1.0", Variant("2.13", "13.0")) == "1.0"
    assert cfg.wheel_version("1.0", Variant("2.13", "12.6")) == "1.0+cu126torch2.13"
    one_torch = _cfg(torch=("2.13",))
    assert one_torch.wheel_version("1.0", Variant("2.13", "12.6")) == "1.0+cu126"
    assert cfg.wheel_version("1.0", Variant("2.12", "13.0")) == "1.0+cu130"  # the other cu130 is the default
    assert cfg.project_name("ext", Variant("2.13", "12.6")) == "ext"
    suffix = _cfg(naming="package-suffix")
    assert suffix.wheel_version("1.0", Variant("2.13", "12.6")) == "1.0"
    assert suffix.project_name("ext", Variant("2.13", "12.6")) == "ext-cu12"


def test_index_url_default_and_override():
    assert _cfg().index_url("12.6") == "https://download.pytorch.org/whl/cu126"
    assert _cfg(index={"12.6": "https://mirror/cu126"}).index_url("12.6") == "https://mirror/cu126"


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ("torch213-cxx11-cu130-x86_64-linux", ["torch213-cxx11-cu130-x86_64-linux"]),
        ("torch2.13-cu13.0", ["torch213-cxx11-cu130-x86_64-linux"]),
        ("2.12+cu126", ["torch212-cxx11-cu126-x86_64-linux"]),
        ("cu126", ["torch212-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu126-x86_64-linux"]),
        ("torch212", ["torch212-cxx11-cu126-x86_64-linux", "torch212-cxx11-cu130-x86_64-linux"]),
    ],
)
def test_selectors(selector, names):
    assert [v.name for v in _cfg().select((selector,))] == names


def test_a_selector_naming_nothing_lists_the_matrix():
    with pytest.raises(VariantError, match=r"'cu118' names no variant of the matrix \(torch212-cxx11-cu126"):
        _cfg().select(("cu118",))


def test_a_stable_abi_variant_is_named_and_pinned_as_kernel_builder_does():
    v = Variant("2.13", "13.0", stable_abi="2.10")
    assert v.name == "torch-stable-abi210-cu130-x86_64-linux"  # no C++ ABI word, the target not the build torch
    assert Variant("2.13", "12.6", os="windows", stable_abi="2.11").name == "torch-stable-abi211-cu126-x86_64-windows"
    assert v.requirement == "torch>=2.10"  # the wheel's METADATA: every torch from the target up
    assert v.build_requirement == "torch==2.13.*"  # its build env: the torch it compiles against
    assert v.target_version == "0x020a000000000000"  # torch/csrc/stable/version.h: major << 56 | minor << 48
    assert Variant("2.13", "13.0").target_version == ""
    assert Variant.from_json(v.to_json()) == v
    assert "stable_abi" not in Variant("2.13", "13.0").to_json()  # old manifests read back the same


def test_stable_abi_selectors():
    from kestrel_release.config.variants import matches_selector

    v = Variant("2.13", "13.0", stable_abi="2.10")
    for text in ("torch-stable-abi210-cu130-x86_64-linux", "torch-stable-abi210", "abi210", "stable-cu130", "cu13.0"):
        assert matches_selector(v, text), text
    for text in ("abi211", "torch2.14", "cu126"):
        assert not matches_selector(v, text), text
    assert not matches_selector(Variant("2.13", "13.0"), "stable")
