"""Which mangled names are torch's C++ ABI, and where they are declared."""

from __future__ import annotations

import pytest

from kestrel_release.artifacts import torch_symbols


@pytest.mark.parametrize(
    ("mangled", "scopes", "torch", "header"),
    [
        ("_ZN3c106detail14torchCheckFailEPKcS2_jS2_", ("c10", "detail"), True, "c10/util/Exception.h (TORCH_CHECK)"),
        ("_ZNK2at10TensorBase5sizesEv", ("at", "TensorBase"), True, "ATen/core/TensorBase.h"),
        ("_ZN2at4_ops3add4callERKNS_6TensorES4_RKN3c106ScalarE", ("at", "_ops"), True, "ATen/Operators.h (ATen/ops/<op>_ops.h)"),
        ("_ZTVN3c1011StorageImplE", ("c10", "StorageImpl"), True, "c10/core/StorageImpl.h"),
        ("_ZN5torch7Library3defEv", ("torch", "Library"), True, "torch/library.h (TORCH_LIBRARY)"),
        ("_ZN2at6native8whateverEv", ("at", "native"), True, "ATen/native/"),
        ("_ZN2at3fooEv", ("at", "foo"), True, "ATen/ (ATen/ATen.h)"),
        ("_Z16THPVariable_WrapRKN2at10TensorBaseE", ("THPVariable_Wrap",), True, "torch/csrc/ (libtorch_python's Python bindings)"),
        ("_ZN5torch6stable6detail3fooEv", ("torch", "stable"), False, "torch/csrc/ (torch/extension.h)"),
        ("_ZNSt6vectorIiSaIiEE9push_backEv", ("std",), False, ""),
        ("_ZN9my_kernel3runEv", ("my_kernel", "run"), False, ""),
        ("aoti_torch_empty_strided", (), False, ""),
        ("_ZN999", (), False, ""),
    ],
)  # fmt: skip
def test_scopes_decide(mangled, scopes, torch, header):
    assert torch_symbols.scopes(mangled) == scopes
    assert torch_symbols.is_torch_cxx(mangled) is torch
    assert torch_symbols.header(mangled) == header
