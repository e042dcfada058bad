"""The needle-first leak scan finds exactly what `re.search` finds, and finds it in large members."""

from __future__ import annotations

import random

import pytest

from kestrel_release.config_loader import load as config
from kestrel_release.stages import verify
from kestrel_release.stages.verify import leaks as verify_leaks
from kestrel_release.stages.verify import needles
from tests.factories import make_verify_project, make_wheel

PKG = "kestrel_kernels"
GH = b"ghp_" + b"a1B2" * 9
AWS = b"AKIAIOSFODNN7EXAMPLE"
_PIECES = [
    GH,
    b"xghp_" + b"Z" * 36,
    b"github_pat_" + b"_a" * 20,
    AWS,
    b"wAKIAIOSFODNN7EXAMPLE",
    b"AKIA12",
    b"ASIAIOSFODNN7EXAMPLEX",
    b"pypi-AgE" + b"x" * 40,
    b"pypi-AgE" + b"x" * 5,
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"-----BEGIN PUBLIC KEY-----",
    b"QUJD" * 12,
    b"\\n",
    b"X: y",
    b"/home/alice/k",
    b"/home/",
    b"/root/.cache",
    b"/root",
    b"/Users/bob/x",
    b"C:\\Users\\bob",
    b"D:\\\\Users\\\\eve",
    b":\\Users\\x",
    b"\n",
    b" ",
    b"\0",
    b"_",
    b"gh",
    b"ghs_",
    b"AK",
]


@pytest.mark.parametrize("seed", range(300))
def test_first_match_is_the_one_re_search_finds(seed):
    rng = random.Random(seed)
    blob = b"".join(
        rng.choice(_PIECES) if rng.random() < 0.6 else rng.randbytes(rng.randint(0, 6))
        for _ in range(rng.randint(0, 30))
    )
    for _, rule in [*verify_leaks._SECRETS, ("home", verify_leaks._HOME)]:
        want, got = rule.pattern.search(blob), rule.first(blob)
        assert (want and (want.span(), want.group())) == (got and (got.span(), got.group())), blob


def _verify_big(tmp_path, planted: bytes, at: int):
    """A wheel with a 16 MiB random member (the largest still scanned) with `planted` at byte `at`."""
    rng = random.Random(7)
    data = bytearray(rng.randbytes(verify_leaks.TEXT_LIMIT))
    data[at : at + len(planted)] = planted
    dist = tmp_path / "dist"
    dist.mkdir()
    wheel = make_wheel(dist, {f"{PKG}/__init__.py": b"", f"{PKG}/blob.bin": bytes(data)})
    cfg = config.load(make_verify_project(tmp_path / "proj", pythons=("3.11",)), env={})
    return verify.run(cfg, [wheel]), data


@pytest.mark.parametrize(
    "planted, what",
    [
        (b" " + GH + b" ", "a GitHub token"),
        (b" AKIA2E0A8F3B244C9986 ", "an AWS access key"),
        (b"-----BEGIN EC PRIVATE KEY-----\n" + b"QUJD" * 16, "a private key"),
    ],
)
def test_a_secret_at_the_end_of_a_16_mib_member_is_reported_with_its_line(tmp_path, planted, what):
    at = verify_leaks.TEXT_LIMIT - len(planted) - 3
    report, data = _verify_big(tmp_path, planted, at)
    secrets = [f for w in report.wheels for f in w.findings if f.rule == "secret"]
    line = data.count(b"\n", 0, at + 1) + 1
    assert [(f.member, f.message) for f in secrets] == [
        (f"{PKG}/blob.bin", f"{what} at line {line}: remove it and revoke it now")
    ]
    assert not report.ok and planted.strip().decode() not in str(report.to_json())


@pytest.mark.parametrize("seed", range(100))
def test_first_from_a_position_is_the_one_re_search_finds_from_it(seed):
    rng = random.Random(1000 + seed)
    blob = b"".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 20)))
    pos = rng.randint(0, len(blob))
    for _, rule in [*verify_leaks._SECRETS, ("home", verify_leaks._HOME)]:
        want, got = rule.pattern.search(blob, pos), rule.first(blob, pos)
        assert (want and (want.span(), want.group())) == (got and (got.span(), got.group())), (blob, pos)


_NAMES = [b"_ZN10flashinfer4gemm6kernelIfEEvPT_", b"gemm_bf16_t128x128x64_sm100f", b"A" * 15, b"ab-cd_ef/gh+ij01"]
_LONG = [
    GH,
    b"pypi-AgE" + b"Qz9_" * 11,
    b"github_pat_" + b"aZ09" * 11,
    b" AKIA2E0A8F3B244C9986 ",
    b"-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n" + b"QUJD" * 16,
    b"sk-proj-" + b"A1b2" * 9,
    b"xoxb-123456-" + b"abcDEF1234" * 2,
]


def _dense_table(rng: random.Random) -> bytes:
    """A string table: hundreds of names, each a run of token bytes, NUL-separated."""
    return b"\0".join(rng.choice(_NAMES) for _ in range(rng.randint(1, 400)))


@pytest.mark.parametrize("seed", range(200))
def test_searching_only_the_windows_finds_what_re_search_finds(seed):
    """The scan looks only near runs of >= 16 token bytes: the same first match as a search of everything,
    with tokens inside, between and after string tables and random binary, at any distance."""
    rng = random.Random(5000 + seed)
    parts = []
    for _ in range(rng.randint(1, 12)):
        pick = rng.random()
        if pick < 0.3:
            parts.append(rng.randbytes(rng.randint(0, 5000)))
        elif pick < 0.6:
            parts.append(_dense_table(rng))
        elif pick < 0.8:
            parts.append(rng.choice(_LONG))
        else:
            parts.append(rng.choice(_PIECES))
    blob = b"".join(parts)
    start = rng.randint(0, len(blob) // 4)
    end = rng.randint(start, len(blob)) if rng.random() < 0.3 else len(blob)
    near = needles.windows(blob, start, end, verify_leaks.SECRET_LEAD)
    assert all(start <= lo < hi <= end for lo, hi in near) and near == sorted(near)
    for _, rule in verify_leaks._SECRETS:
        want = rule.pattern.search(blob, start, end)
        got = next((m for lo, hi in near if (m := rule.first(blob, lo, hi))), None)
        assert (want and (want.span(), want.group())) == (got and (got.span(), got.group())), (seed, rule)


def test_a_member_without_a_run_of_16_token_bytes_has_no_window():
    blob = b"ghp_abcdefghijk\0" * 1000  # 15 token bytes at a time: no credential fits
    assert needles.windows(blob, 0, len(blob), verify_leaks.SECRET_LEAD) == []
    longer = blob + b"ghp_abcdefghijkl"
    assert needles.windows(longer, 0, len(longer), verify_leaks.SECRET_LEAD) == [(len(blob) - 1024, len(longer))]
