"""PEP 825 (Draft): labels, variant.json, the index's variants.json, and the PEP's rules."""

from __future__ import annotations

import copy

import pytest

from kestrel_release.config.variants import Variant
from kestrel_release.variants import pep825

V130 = Variant("2.13", "13.0")
V126 = Variant("2.12", "12.6")


def test_label_and_properties_of_a_torch_cuda_variant() -> None:
    assert pep825.label(V130) == "torch213_cu130"
    assert pep825.label(Variant("2.13", "13.0", cxx11_abi=False)) == "torch213_cxx98_cu130"
    assert pep825.properties(V126) == {"torch": {"version": ["2.12"]}, "nvidia": {"cuda_version_lower_bound": ["12.6"]}}


def test_our_variant_json_obeys_the_pep() -> None:
    doc = pep825.variant_json(V130)
    assert doc["$schema"].endswith("/peps/825/v0.1.0.json")
    assert pep825.problems(doc, "torch213_cu130") == []
    assert pep825.problems(pep825.merge([doc, pep825.variant_json(V126)])) == []


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d.pop("$schema"), "$schema"),
        (lambda d: d["default-priorities"].pop("namespace"), "default-priorities.namespace is required"),
        (lambda d: d["default-priorities"].update(namespace=["torch"]), "lacks nvidia"),
        (lambda d: d.update(variants={"Torch213": {}}), "label 'Torch213' must be non-empty [0-9a-z_.]"),
        (lambda d: d.update(variants={"": {}}), "label '' must be non-empty"),
        (lambda d: d.update(variants={"null": {"torch": {"version": ["2.13"]}}}), "'null' is reserved"),
        (lambda d: d["variants"]["torch213_cu130"].update({"Nvidia": {"x": ["1"]}}), "namespace 'Nvidia'"),
        (lambda d: d["variants"]["torch213_cu130"]["torch"].update({"ver-sion": ["1"]}), "feature torch :: 'ver-sion'"),
        (lambda d: d["variants"]["torch213_cu130"]["torch"].update(version=[]), "one or more values"),
        (lambda d: d["variants"]["torch213_cu130"]["torch"].update(version=["2.13+cu130"]), "'2.13+cu130' must be"),
        (lambda d: d["variants"].update(other={}), "exactly its label"),
    ],
)
def test_each_rule_of_the_pep_is_checked(edit, needle: str) -> None:
    doc = copy.deepcopy(pep825.variant_json(V130))
    edit(doc)
    found = pep825.problems(doc, "torch213_cu130")
    assert any(needle in p for p in found), found


def test_the_null_variant_with_zero_properties_is_allowed_in_the_index_file() -> None:
    doc = pep825.merge([pep825.variant_json(V130)])
    doc["variants"]["null"] = {}
    assert pep825.problems(doc) == []


def test_merge_refuses_one_label_with_two_property_sets() -> None:
    other = copy.deepcopy(pep825.variant_json(V130))
    other["variants"]["torch213_cu130"]["nvidia"]["cuda_version_lower_bound"] = ["13.1"]
    with pytest.raises(ValueError, match="names two property sets"):
        pep825.merge([pep825.variant_json(V130), other])


def test_merge_lets_the_namespace_list_grow_only_at_its_end() -> None:
    a, b = pep825.variant_json(V130), pep825.variant_json(V126)
    b["default-priorities"]["namespace"] = ["torch", "nvidia", "x86_64"]
    assert pep825.merge([a, b])["default-priorities"]["namespace"] == ["torch", "nvidia", "x86_64"]
    b["default-priorities"]["namespace"] = ["nvidia", "torch"]
    with pytest.raises(ValueError, match="namespace differ"):
        pep825.merge([a, b])


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("x-1.0-cp312-cp312-linux_x86_64.whl", ("x-1.0-cp312-cp312-linux_x86_64.whl", None)),
        ("x-1.0-1-cp312-cp312-linux_x86_64.whl", ("x-1.0-1-cp312-cp312-linux_x86_64.whl", None)),  # a build tag
        ("x-1.0-cp312-cp312-linux_x86_64-torch213_cu130.whl", ("x-1.0-cp312-cp312-linux_x86_64.whl", "torch213_cu130")),
        ("x-1.0-1-cp312-cp312-linux_x86_64-null.whl", ("x-1.0-1-cp312-cp312-linux_x86_64.whl", "null")),
    ],
)
def test_filenames_with_and_without_a_label(filename: str, expected) -> None:
    assert pep825.split_filename(filename) == expected


def test_the_index_file_name_is_normalized_as_wheel_names_are() -> None:
    assert pep825.index_filename("Kestrel-Kernels", "0.3.0") == "kestrel_kernels-0.3.0-variants.json"
