"""Launch the precompiled ``moe_align_block_size`` kernels (count, scan, scatter)."""

from __future__ import annotations

from typing import Any

from .. import _runtime as rt

_VARIANT_DTYPE = {"int32": "i32", "int64": "i64"}
MAX_EXPERTS = 8192  # E ints of dynamic shared memory: 32 KiB, under the 48 KiB default
_COUNT_THREADS, _SCAN_THREADS = 256, 1024  # the template's COUNT_THREADS / SCAN_THREADS
_BASE_TILE = 1024
_MAX_WORKSPACE = 1 << 22  # ints of per-tile counts


def _tile(numel: int, num_experts: int) -> int:
    tile = _BASE_TILE
    while -(-numel // tile) * num_experts > _MAX_WORKSPACE:
        tile *= 2
    return tile


def moe_align_block_size(
    topk_ids: Any,
    num_experts: int,
    block_size: int,
    *,
    pad_sorted_ids: bool = False,
    out: Any = None,
    stream: Any = None,
) -> tuple:
    """vLLM's ``moe_align_block_size``: group token slots by expert, padded to ``block_size``.

    ``topk_ids``: int32/int64 ``[tokens, topk]``. Returns ``(sorted_token_ids,
    expert_ids, num_tokens_post_padded)`` (int32) with vLLM's sizes:
    ``numel + num_experts * (block_size - 1)`` slots (rounded up to a multiple of
    ``block_size`` with ``pad_sorted_ids``), one expert id per block, and a
    1-element count. Padding slots hold ``numel``; expert blocks past the used
    ones hold 0. Within an expert, slots ascend (deterministic). Ids outside
    ``[0, num_experts)`` are skipped. ``out``, if given, is that triple.
    """
    op = "moe_align_block_size"
    a = rt.as_array(topk_ids, "topk_ids", op)
    rt.check_dtype(a, "topk_ids", op, _VARIANT_DTYPE)
    if len(a.shape) != 2:
        raise ValueError(f"{op}: topk_ids must be 2-D [tokens, topk], got shape {a.shape}")
    num_experts = rt.check_int(num_experts, "num_experts", op, 1, MAX_EXPERTS)
    block_size = rt.check_int(block_size, "block_size", op, 1, 1 << 16)
    numel = a.numel
    max_padded = numel + num_experts * (block_size - 1)
    if pad_sorted_ids:
        max_padded = -(-max_padded // block_size) * block_size
    if max_padded >= 2**31:
        raise ValueError(f"{op}: {numel} token slots do not fit int32 sorted_token_ids")
    num_blocks = -(-max_padded // block_size)
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 3):
        raise TypeError(f"{op}: out must be a (sorted_token_ids, expert_ids, num_tokens_post_padded) triple")
    sorted_ids = rt.output(a, out and out[0], "out[0]", op, (max_padded,), "int32")
    expert_ids = rt.output(a, out and out[1], "out[1]", op, (num_blocks,), "int32")
    post_pad = rt.output(a, out and out[2], "out[2]", op, (1,), "int32")

    tile = _tile(numel, num_experts)
    tiles = max(1, -(-numel // tile))
    # counts[tiles][E] then starts[E + 1]; kept alive by the outputs for buffer inputs.
    work = rt.empty(a, (tiles * num_experts + num_experts + 1,), "int32")
    if isinstance(sorted_ids.obj, rt.DeviceBuffer):
        sorted_ids.obj._keepalive = (work.obj,)
    counts, starts = work.ptr, work.ptr + 4 * tiles * num_experts

    variant = f"moe_align_{_VARIANT_DTYPE[a.dtype]}"
    prefix = f"kestrel_{variant}"
    dev = a.device
    count_fn = rt.kernel(dev, variant, f"{prefix}_count")
    scan_fn = rt.kernel(dev, variant, f"{prefix}_scan")
    scatter_fn = rt.kernel(dev, variant, f"{prefix}_scatter")
    s = rt.resolve_stream(a, stream)
    if work.is_torch and s != a.stream:  # caching allocator: keep it until `s` is done with it
        import torch

        work.obj.record_stream(torch.cuda.ExternalStream(s, device=work.obj.device))
    smem = 4 * num_experts
    rt.launch(
        a,
        count_fn,
        (tiles, 1, 1),
        (_COUNT_THREADS, 1, 1),
        smem,
        s,
        "PqiiPPq",
        (a.ptr, numel, num_experts, tile, counts, sorted_ids.ptr, max_padded),
    )
    rt.launch(
        a,
        scan_fn,
        (1, 1, 1),
        (_SCAN_THREADS, 1, 1),
        0,
        s,
        "PiiiPPqP",
        (counts, tiles, num_experts, block_size, starts, expert_ids.ptr, num_blocks, post_pad.ptr),
    )
    rt.launch(
        a,
        scatter_fn,
        (tiles, 1, 1),
        (32, 1, 1),
        smem,
        s,
        "PqiiPPP",
        (a.ptr, numel, num_experts, tile, counts, starts, sorted_ids.ptr),
    )
    rt.mark_stream(sorted_ids, expert_ids, post_pad, stream=s)
    return sorted_ids.obj, expert_ids.obj, post_pad.obj
