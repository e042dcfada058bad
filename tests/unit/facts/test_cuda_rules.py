"""NVIDIA's compatibility rules as tables: what runs where, what a toolkit compiles, driver floors."""

from __future__ import annotations

import pytest

from kestrel_release.facts import cuda_rules
from kestrel_release.facts.cuda_rules import Arch


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90a", Arch(9, 0, "a")),
        ("sm_90a", Arch(9, 0, "a")),
        ("compute_90a", Arch(9, 0, "a")),
        ("9.0a", Arch(9, 0, "a")),
        ("100f", Arch(10, 0, "f")),
        ("12.0f", Arch(12, 0, "f")),
        ("80", Arch(8, 0)),
        ("110", Arch(11, 0)),
        (" SM_121A ", Arch(12, 1, "a")),
    ],
)
def test_arch_names_parse(text, expected):
    assert Arch.parse(text) == expected


@pytest.mark.parametrize("text", ["", "9", "sm_", "90x", "80a", "90f", "abc", "8.0.1"])
def test_bad_arch_names_are_refused(text):
    with pytest.raises(cuda_rules.ArchError):
        Arch.parse(text)


# (built SASS, device compute capability, runs?)
SASS = [
    ("80", (8, 0), True),
    ("80", (8, 6), True),
    ("80", (8, 9), True),
    ("86", (8, 0), False),
    ("80", (9, 0), False),  # SASS never crosses a major
    ("90", (9, 0), True),
    ("90a", (9, 0), True),
    ("90a", (10, 0), False),
    ("100a", (10, 3), False),  # `a`: that exact GPU only
    ("100f", (10, 0), True),
    ("100f", (10, 3), True),  # `f`: the family, minor >= 0
    ("103f", (10, 0), False),
    ("100f", (11, 0), False),
    ("120f", (12, 1), True),
    ("120f", (10, 0), False),
    ("110", (11, 0), True),
]


@pytest.mark.parametrize(("arch", "device", "runs"), SASS)
def test_sass_runs_on(arch, device, runs):
    assert cuda_rules.sass_runs_on(Arch.parse(arch), device) is runs


PTX = [
    ("80", (9, 0), True),  # plain PTX JIT-compiles forward across majors
    ("80", (12, 0), True),
    ("90", (8, 9), False),
    ("90a", (10, 0), False),  # `a` PTX does not carry across families
    ("100f", (10, 3), True),
    ("100f", (12, 0), False),
]


@pytest.mark.parametrize(("arch", "device", "runs"), PTX)
def test_ptx_runs_on(arch, device, runs):
    assert cuda_rules.ptx_runs_on(Arch.parse(arch), device) is runs


SERVES = [
    ("80", "86", False, True),  # sm_80 runs on every 8.6+ GPU
    ("86", "80", False, False),
    ("90", "90a", False, False),  # no wgmma in plain sm_90 code
    ("90a", "90a", False, True),
    ("100a", "100f", False, False),  # 10.3 is not served
    ("100f", "100f", False, True),
    ("100f", "100", False, True),
    ("100", "100f", False, False),  # family features missing
    ("120f", "100f", False, False),
    ("80", "90", True, True),  # PTX for 8.0 serves 9.0 by JIT
    ("80", "90", False, False),
]


@pytest.mark.parametrize(("built", "wanted", "ptx", "ok"), SERVES)
def test_serves(built, wanted, ptx, ok):
    assert cuda_rules.serves(Arch.parse(built), Arch.parse(wanted), ptx=ptx) is ok


# (toolkit, arch, compiles?, words in the reason)
COMPILES = [
    ((12, 9), "80", True, ""),
    ((12, 9), "90a", True, ""),
    ((12, 9), "100f", True, ""),
    ((12, 9), "120f", True, ""),
    ((12, 9), "101", True, ""),
    ((12, 9), "110", False, "came with CUDA 13.0"),
    ((12, 8), "100f", False, "family-specific"),
    ((12, 8), "120a", True, ""),
    ((12, 4), "100", False, "does not compile sm_100"),
    ((13, 0), "70", False, "CUDA 13 compiles sm_75 and newer"),
    ((13, 0), "101", False, "renamed sm_101 to sm_110"),
    ((13, 0), "110f", True, ""),
    ((13, 0), "88", True, ""),
    ((13, 2), "75", True, ""),  # a newer 13.x uses 13.0's row
    ((12, 9), "88", False, "does not compile sm_88"),
    ((10, 2), "70", False, "not a toolkit"),
]


@pytest.mark.parametrize(("toolkit", "arch", "ok", "words"), COMPILES)
def test_which_toolkit_compiles_which_arch(toolkit, arch, ok, words):
    why = cuda_rules.cannot_compile(toolkit, Arch.parse(arch))
    assert (why is None) is ok
    if not ok:
        assert words in why


def test_pairs_build_each_arch_with_every_toolkit_unless_pinned():
    pairs, problems = cuda_rules.pairs(("12.9", "13.0"), ("80", "90a", "100f", "110@13.0", "87@12.9"))
    assert problems == []
    assert [(t, a.name) for t, a in pairs] == [
        ("12.9", "80"),
        ("13.0", "80"),
        ("12.9", "90a"),
        ("13.0", "90a"),
        ("12.9", "100f"),
        ("13.0", "100f"),
        ("13.0", "110"),
        ("12.9", "87"),
    ]


def test_an_unpinned_arch_a_toolkit_cannot_build_names_both_and_the_fix():
    _pairs, problems = cuda_rules.pairs(("12.9", "13.0"), ("80", "110"))
    assert problems == [
        "sm_110 cannot be built by CUDA 12.9: CUDA 12.9 has no sm_110 (it came with CUDA 13.0; CUDA 12 calls "
        'Thor sm_101); pin it to the toolkits that can: "110@13.0"'
    ]
    _pairs, problems = cuda_rules.pairs(("13.0",), ("70@12.9",))
    assert "names CUDA 12.9, which is not in cuda (13.0)" in problems[0]


@pytest.mark.parametrize(
    ("majors", "compressed", "ptx", "floor"),
    [
        ({12}, False, (), "525.60.13"),
        ({13}, False, (), "580.65.06"),
        ({12, 13}, False, (), "580.65.06"),
        ({12}, True, (), "550.54.14"),  # compressed fat binaries: CUDA 12.4's driver
        ({12}, False, ((12, 9),), "575.51.03"),  # PTX needs its toolkit's driver to JIT
        (set(), False, (), ""),
    ],
)
def test_driver_floor(majors, compressed, ptx, floor):
    assert cuda_rules.driver_floor(majors, compressed, ptx) == floor


@pytest.mark.parametrize(
    ("configured", "version", "same"),
    [("13.0", "13.0.88", True), ("13", "13.5", True), ("13.0", "13.5.37", False), ("12.9", "13.0", False)],
)
def test_same_toolkit(configured, version, same):
    assert cuda_rules.same_toolkit(configured, version) is same
