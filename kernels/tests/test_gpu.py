"""Every precompiled variant against a float64 torch reference on fresh random inputs.

Outputs are poisoned (NaN / -1) before each launch so a slot the kernel forgets
to write cannot pass. Run on an sm_90 GPU with the wheel installed:
``python -m pytest tests -m gpu``.
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# |kernel - float64 reference| <= atol + rtol * |ref|: one rounding to the dtype plus fp32 math.
TOL = {torch.float32: (1e-5, 1e-6), torch.float16: (1e-3, 1e-4), torch.bfloat16: (8e-3, 1e-3)}


@pytest.fixture(scope="module")
def kk():
    import kestrel_kernels

    return kestrel_kernels


@pytest.fixture
def gen():
    g = torch.Generator(device="cuda")
    g.seed()  # fresh inputs every run; the seed is printed on failure
    print("generator seed:", g.initial_seed())
    return g


def randn(shape, dtype, gen, scale=3.0):
    return (torch.randn(shape, device="cuda", generator=gen, dtype=torch.float32) * scale).to(dtype)


# ---- silu_and_mul ------------------------------------------------------------------------

SILU_SHAPES = [(1, 1), (3, 7), (1025, 8), (3, 4097), (1, 64), (1025, 1), (7, 1000), (2, 3, 33)]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SILU_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_silu_and_mul(kk, gen, dtype, shape):
    dt = DTYPES[dtype]
    *lead, d = shape
    x = randn((*lead, 2 * d), dt, gen)
    out = torch.full((*lead, d), float("nan"), dtype=dt, device="cuda")
    assert kk.silu_and_mul(x, out=out) is out
    ref = torch.nn.functional.silu(x[..., :d].double()) * x[..., d:].double()
    rtol, atol = TOL[dt]
    torch.testing.assert_close(out.double(), ref, rtol=rtol, atol=atol)
    # allocation path agrees bit for bit
    assert torch.equal(kk.silu_and_mul(x), out)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_silu_and_mul_misaligned_input_uses_scalar_path(kk, gen, dtype):
    dt = DTYPES[dtype]
    d = 64  # vector-friendly size, but the base pointer is offset by one element
    base = randn((5 * 2 * d + 1,), dt, gen)
    x = base[1:].view(5, 2 * d)
    out = torch.full((5, d), float("nan"), dtype=dt, device="cuda")
    kk.silu_and_mul(x, out=out)
    ref = torch.nn.functional.silu(x[:, :d].double()) * x[:, d:].double()
    torch.testing.assert_close(out.double(), ref, rtol=TOL[dt][0], atol=TOL[dt][1])


# ---- topk ----------------------------------------------------------------------------------


def topk_reference(x, k):
    """Stable descending sort in float64: equal values keep ascending index order."""
    vals, idx = torch.sort(x.double().cpu(), dim=-1, descending=True, stable=True)
    return vals[..., :k], idx[..., :k].to(torch.int32)


def check_topk(kk, x, k):
    shape = (*x.shape[:-1], k)
    values = torch.full(shape, float("nan"), dtype=x.dtype, device="cuda")
    indices = torch.full(shape, -1, dtype=torch.int32, device="cuda")
    got = kk.topk(x, k, out=(values, indices))
    assert got[0] is values and got[1] is indices
    ref_vals, ref_idx = topk_reference(x, k)
    assert torch.equal(indices.cpu(), ref_idx), "indices differ"
    torch.testing.assert_close(values.double().cpu(), ref_vals, rtol=0, atol=0, equal_nan=True)


TOPK_CASES = [  # (rows, n, k)
    (1, 1, 1),
    (3, 5, 5),
    (1, 64, 64),
    (1025, 100, 1),
    (1025, 100, 5),
    (3, 4097, 8),
    (3, 4097, 9),
    (3, 4097, 16),
    (1, 4097, 17),
    (3, 1000, 32),
    (3, 1000, 33),
    (3, 4097, 64),
    (1025, 64, 64),
    (2, 150000, 50),
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(("rows", "n", "k"), TOPK_CASES, ids=lambda v: str(v))
def test_topk_random(kk, gen, dtype, rows, n, k):
    check_topk(kk, randn((rows, n), DTYPES[dtype], gen), k)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("k", [1, 5, 8, 16, 31, 64])
def test_topk_ties_go_to_lower_index(kk, gen, dtype, k):
    # few distinct values: most of the top-k are ties
    x = torch.randint(-4, 4, (33, 777), device="cuda", generator=gen).to(DTYPES[dtype])
    check_topk(kk, x, k)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_topk_special_values(kk, dtype):
    row = [0.0, -0.0, float("inf"), -1.0, float("-inf"), float("nan"), 2.0, -0.0, 0.0, float("inf")]
    x = torch.tensor([row, row[::-1]], dtype=DTYPES[dtype], device="cuda")
    for k in (1, 3, 6, 10):
        check_topk(kk, x, k)


def test_topk_batched_leading_dims(kk, gen):
    x = randn((2, 3, 300), torch.float32, gen)
    values, indices = kk.topk(x, 7)
    assert values.shape == (2, 3, 7) and indices.dtype == torch.int32
    ref_vals, ref_idx = topk_reference(x, 7)
    assert torch.equal(indices.cpu(), ref_idx)
    assert torch.equal(values.double().cpu(), ref_vals)


# ---- moe_align_block_size -------------------------------------------------------------------


def moe_reference(topk_ids, num_experts, block_size, pad_sorted_ids=False):
    flat = topk_ids.flatten().long().cpu()
    numel = flat.numel()
    max_padded = numel + num_experts * (block_size - 1)
    if pad_sorted_ids:
        max_padded = -(-max_padded // block_size) * block_size
    sorted_ids = torch.full((max_padded,), numel, dtype=torch.int32)
    expert_ids = torch.zeros((-(-max_padded // block_size),), dtype=torch.int32)
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat[(flat >= 0) & (flat < num_experts)], minlength=num_experts)
    pos, start = 0, int((flat < 0).sum())  # skip invalid (negative) ids at the front of `order`
    for e in range(num_experts):
        c = int(counts[e])
        sorted_ids[pos : pos + c] = order[start : start + c].to(torch.int32)
        padded = -(-c // block_size) * block_size
        expert_ids[pos // block_size : (pos + padded) // block_size] = e
        pos, start = pos + padded, start + c
    return sorted_ids, expert_ids, torch.tensor([pos], dtype=torch.int32)


def check_moe(kk, ids, num_experts, block_size, pad_sorted_ids=False):
    ref = moe_reference(ids, num_experts, block_size, pad_sorted_ids)
    outs = tuple(torch.full_like(r, -1, device="cuda") for r in ref)
    got = kk.moe_align_block_size(ids, num_experts, block_size, pad_sorted_ids=pad_sorted_ids, out=outs)
    assert all(g is o for g, o in zip(got, outs))
    for name, g, r in zip(("sorted_token_ids", "expert_ids", "num_tokens_post_padded"), got, ref):
        assert torch.equal(g.cpu(), r), name
    # allocation path: vLLM-sized outputs with the same contents
    fresh = kk.moe_align_block_size(ids, num_experts, block_size, pad_sorted_ids=pad_sorted_ids)
    assert all(torch.equal(f.cpu(), r) for f, r in zip(fresh, ref))


MOE_CASES = [  # (tokens, topk, num_experts, block_size)
    (1, 1, 1, 1),
    (1, 2, 8, 16),
    (3, 2, 8, 16),
    (333, 8, 64, 16),
    (333, 2, 256, 64),
    (333, 6, 60, 128),
    (4096, 8, 256, 64),
    (1025, 1, 7, 5),
    (8192, 8, 128, 16),
    (20000, 8, 512, 32),
    (5, 4, 2000, 16),
]


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["int32", "int64"])
@pytest.mark.parametrize(("tokens", "topk", "num_experts", "block_size"), MOE_CASES, ids=lambda v: str(v))
def test_moe_align_random(kk, gen, id_dtype, tokens, topk, num_experts, block_size):
    ids = torch.randint(0, num_experts, (tokens, topk), device="cuda", generator=gen, dtype=id_dtype)
    check_moe(kk, ids, num_experts, block_size)


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64], ids=["int32", "int64"])
def test_moe_align_padded_and_skewed(kk, gen, id_dtype):
    # all tokens on a couple of experts, many empty experts, and pad_sorted_ids
    ids = torch.randint(0, 2, (777, 4), device="cuda", generator=gen, dtype=id_dtype) * 31
    check_moe(kk, ids, 64, 16, pad_sorted_ids=True)
    check_moe(kk, ids, 64, 1)


def test_moe_align_skips_out_of_range_ids(kk, gen):
    ids = torch.randint(-1, 9, (100, 4), device="cuda", generator=gen, dtype=torch.int32)  # -1 and 8 invalid
    check_moe(kk, ids, 8, 16)


# ---- interop, streams and errors on a real GPU -----------------------------------------------


class CudaArrayOnly:
    """Hides torch: only __cuda_array_interface__ is visible."""

    def __init__(self, t):
        self.__cuda_array_interface__ = t.__cuda_array_interface__
        self._t = t


def test_cuda_array_interface_inputs(kk, gen):
    x = randn((9, 2 * 37), torch.float16, gen)
    out = kk.silu_and_mul(CudaArrayOnly(x))
    assert not isinstance(out, torch.Tensor)
    got = torch.as_tensor(out, device="cuda")
    assert torch.equal(got, kk.silu_and_mul(x))

    ids = torch.randint(0, 16, (50, 2), device="cuda", generator=gen, dtype=torch.int32)
    got = [torch.as_tensor(o, device="cuda").cpu() for o in kk.moe_align_block_size(CudaArrayOnly(ids), 16, 8)]
    assert all(torch.equal(g, r) for g, r in zip(got, moe_reference(ids, 16, 8)))

    vals = randn((4, 100), torch.float32, gen)
    v, i = kk.topk(CudaArrayOnly(vals), 5)
    ref_vals, ref_idx = topk_reference(vals, 5)
    assert torch.equal(torch.as_tensor(i, device="cuda").cpu(), ref_idx)
    assert torch.equal(torch.as_tensor(v, device="cuda").double().cpu(), ref_vals)


def test_runs_on_the_current_stream(kk, gen):
    x = randn((4096, 2 * 1024), torch.bfloat16, gen)
    expected = kk.silu_and_mul(x)
    out = torch.full_like(expected, float("nan"))
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time queued ahead of the kernel on `side`
        kk.silu_and_mul(x, out=out)
    early = out.cpu()  # the default stream does not wait for `side`
    assert torch.isnan(early.float()).all(), "kernel did not run behind the sleep: not on the current stream"
    side.synchronize()
    assert torch.equal(out, expected)


def test_errors_on_gpu(kk):
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(ValueError, match="is a cpu tensor"):
        kk.silu_and_mul(x.cpu())
    with pytest.raises(ValueError, match="must be contiguous"):
        kk.silu_and_mul(x.t())
    with pytest.raises(TypeError, match="dtype float64"):
        kk.topk(x.double(), 2)
    with pytest.raises(ValueError, match="shape"):
        kk.silu_and_mul(x, out=torch.empty(4, 5, device="cuda"))
    major, minor = torch.cuda.get_device_capability()
    chosen = kk._runtime.selected(0)
    print("loaded:", chosen)
    if (major, minor) == (9, 0):  # an H100 takes the exact-arch cubin, not sm_80 SASS or PTX
        assert chosen["arch"] == "sm_90a" and chosen["kind"] == "sass"
    force = os.environ.get("KESTREL_KERNELS_CUDA")
    if force:  # the forced code path is the one that ran
        assert chosen["cuda"].split(".")[0] == force


def test_every_variant_was_exercised(kk):
    """Guard: a new template variant must get a case above (the cases name their variants)."""
    names = set(kk._runtime._choices[0][2]["variants"])
    covered = {f"silu_and_mul_{s}" for s in ("f32", "f16", "bf16")}
    covered |= {f"topk_{d}_k{b}" for d in ("f32", "bf16") for b in (8, 16, 32, 64)}
    covered |= {"moe_align_i32", "moe_align_i64"}
    assert names == covered
    assert {-(-k // 8) * 8 if k <= 8 else 1 << (k - 1).bit_length() for _, _, k in TOPK_CASES} >= {8, 16, 32, 64}
