"""The torch-stable-abi rule: a stable-ABI variant's binaries import no torch C++ symbol (read from .dynsym)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

from kestrel_release.stages.verify import stable_abi
from kestrel_release.stages.verify.native import NativeScanner

VARIANT = {"name": "torch-stable-abi210-cu130-x86_64-linux", "torch": "2.13", "cuda": "13.0", "stable_abi": "2.10"}
CHECK_FAIL = "_ZN3c106detail14torchCheckFailEPKcS2_jS2_"
SIZES = "_ZNK2at10TensorBase5sizesEv"
STABLE_CXX = "_ZN5torch6stable6detail3fooEv"


def shared_object(undefined: list[str], defined: list[str] = ()) -> bytes:  # type: ignore[assignment]
    """A minimal x86-64 ELF64 with a .dynsym: `undefined` imported, `defined` exported."""
    names = [*undefined, *defined]
    dynstr = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    offsets, pos = [], 1
    for n in names:
        offsets.append(pos)
        pos += len(n) + 1
    sym = struct.Struct("<IBBHQQ")
    dynsym = bytes(sym.size) + b"".join(
        sym.pack(off, 0x12, 0, 0 if i < len(undefined) else 7, 0, 0) for i, off in enumerate(offsets)
    )
    shstr = b"\0.dynstr\0.dynsym\0.shstrtab\0"
    body = dynstr + dynsym + shstr
    start = 64
    shoff = start + len(body)
    shdr = struct.Struct("<IIQQQQIIQQ")
    headers = [
        bytes(shdr.size),
        shdr.pack(1, 3, 0, 0, start, len(dynstr), 0, 0, 1, 0),  # .dynstr
        shdr.pack(9, 11, 0, 0, start + len(dynstr), len(dynsym), 1, 1, 8, sym.size),  # .dynsym -> .dynstr
        shdr.pack(17, 3, 0, 0, start + len(dynstr) + len(dynsym), len(shstr), 0, 0, 1, 0),  # .shstrtab
    ]
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head = struct.pack("<16sHHIQQQIHHHHHH", ident, 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, shdr.size, 4, 3)
    return head + body + b"".join(headers)


def _scan(members: dict[str, bytes]) -> dict[str, list[str]]:
    scanner = NativeScanner(())
    for name, data in members.items():
        scanner.visit(SimpleNamespace(name=name), data)
    return scanner.torch_cxx


def test_the_c_shim_and_torch_stable_pass():
    found = _scan({"ext/_C.abi3.so": shared_object(["aoti_torch_empty_strided", "torch_new_list_reserve_size",
                                                      STABLE_CXX, "_ZNSt6vectorIiSaIiEE9push_backEv"])})  # fmt: skip
    assert found == {}
    assert stable_abi.findings(VARIANT, found) == []


def test_torch_cxx_symbols_are_named_demangled_with_their_header():
    found = _scan({"ext/_C.abi3.so": shared_object([SIZES, CHECK_FAIL, "aoti_torch_get_dim"], [SIZES + "x"])})
    assert found == {"ext/_C.abi3.so": [SIZES, CHECK_FAIL]}  # only imports: what it defines is its own
    (finding,) = stable_abi.findings(VARIANT, found)
    assert (finding.rule, finding.severity, finding.member) == ("torch-stable-abi", "error", "ext/_C.abi3.so")
    assert "built for the torch 2.10 stable ABI (torch-stable-abi210-cu130-x86_64-linux) but imports 2 torch C++" in (
        finding.message
    )
    assert "at::TensorBase::sizes() const [ATen/core/TensorBase.h]" in finding.message
    assert "c10::detail::torchCheckFail(char const*, char const*, unsigned int, char const*) [c10/util/Exception.h" in (
        finding.message
    )


def test_a_variant_bound_to_its_torch_is_not_checked():
    plain = {k: v for k, v in VARIANT.items() if k != "stable_abi"}
    assert stable_abi.findings(plain, {"ext/_C.so": [SIZES]}) == []


def test_long_lists_are_counted():
    symbols = [f"_ZN2at3op{i}Ev" for i in range(8)]
    (finding,) = stable_abi.findings(VARIANT, {"m.so": symbols})
    assert "imports 8 torch C++ symbols" in finding.message and "and 3 more" in finding.message
