"""Split-KV decode (FlashDecoding) in Triton: one query row per sequence, its keys read from a
paged KV cache through a block table, split across programs and merged exactly.

The contract is docs/CONTRACT.md, "Attention semantics" and "Positions, windows and sinks";
the numpy statement of the same computation is ``lessonlib.paged.split_kv_decode`` (one
sequence), which the tests hold this kernel to, split for split.

Why split? A decode step has one query row per sequence, so FlashAttention's grid (query
blocks x heads) has only batch x heads programs: too few to fill a GPU when the batch is small
and the context long. FlashDecoding (Dao, Haziza, Massa, Sizov, "Flash-Decoding for
long-context inference", 2023) also splits the keys of each row into ``num_splits`` ranges,
each reduced by its own program to a partial online-softmax state, and merges the partial
states in a second, tiny kernel. The merge is exact, not an approximation: softmax is a ratio
of sums, and sums split.

Read it top to bottom:

1. ``_split_kv_stage1_kernel``: grid (batch, kv_heads, num_splits). One program takes one KV
   head of one sequence and the query heads that share it (GQA: the group is padded to
   ``BLOCK_G`` >= 16 rows so that both products are ``tl.dot`` on tensor cores, as vLLM's
   ``_fwd_grouped_kernel_stage1`` pads to ``BLOCK_H`` = 16). Its keys are split ``s`` of the
   sequence's ``context_len`` keys, ``cdiv(context_len, num_splits)`` keys per split
   (``paged.split_ranges``; vLLM's Triton decode kernel, ``kv_len_per_split``). It walks them
   ``BLOCK_N`` at a time: position j lives in slot ``j % block_size`` of block
   ``block_table[b, j // block_size]``, looked up per key as vLLM's Triton decode kernel does
   (``kv_page_number``), so any block size works. Only visible keys are loaded: with a window,
   the split's keys are visited as two stretches, the sink tokens and the window's band, and
   what lies between (the null block of a sliding-window table among it) is never read. It
   writes m (running max, log2 units), l (sum) and the unnormalised acc, float32, for its
   query heads: the state of ``paged.SplitState``. A split that sees no key (empty, or every
   key outside the window) writes m = -inf, l = 0, acc = 0, the merge's identity.
2. ``_split_kv_stage2_kernel``: grid (batch, q_heads). Merges one row's splits, ``BLOCK_S`` at
   a time: with M the largest m, each split's l and acc are scaled by exp2(m - M) and summed
   (flash-attn's split-KV combine, ``combine_attn_seqk_parallel``; vLLM's
   ``_fwd_kernel_stage2`` and ``paged_attention_v2``'s reduce kernel). A split with m = -inf
   gets weight exactly 0 (the shift is taken as 0 while M is still -inf, so no -inf - -inf).
3. ``split_kv_decode``: the host wrapper. Checks everything (the table included) before the
   launch, allocates the float32 partials, launches both grids.

Departures from the engines, on purpose: stage 1 keeps (m, l, acc) unnormalised, as
``paged.SplitState`` does, where vLLM and flash-attn store acc / l and the log-sum-exp
m + log l (the same information); ``num_splits`` is the caller's, where vLLM's
``paged_attention_v2`` cuts fixed 512-token partitions and flash-attn picks the count from
the SM count (``num_splits_heuristic``).

Runs on a CUDA GPU, or on the CPU under Triton's interpreter (``TRITON_INTERPRET=1`` set
before triton is first imported), where each program runs as numpy code: keep sizes tiny.
"""
import torch
import triton
import triton.language as tl

from . import _validate as check
from .kernel_plan import LOG2_E
from .kernel_plan import block_d as _block_d
from .triton_attention import _check_runnable as _runnable
from .triton_attention import _check_scale, _check_window
from .triton_attention import _interpreting as _kernels_interpreted

__all__ = ["split_kv_decode"]

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_MAX_HEAD_DIM = 256
_MAX_GRID = 65535  # CUDA's limit on a grid's second and third axes (heads, splits)
_FP32_MAX = float(torch.finfo(torch.float32).max)
_NULL_BLOCK = 0  # lessonlib.paged.NULL_BLOCK: no keys of its own


# ------------------------------------------------------------------------------------------------
# 1. Stage 1: one program per (sequence, KV head, split)
# ------------------------------------------------------------------------------------------------
@triton.jit
def _attend_to_stretch(
    acc, l, m,  # running state of the group: (BLOCK_G, BLOCK_DV), (BLOCK_G,), (BLOCK_G,), fp32
    lo, hi,  # visit keys [lo, hi) of the sequence; every one of them is visible
    q,  # (BLOCK_G, BLOCK_D) the group's query rows, padded rows and dims 0
    table_ptr,  # this sequence's row of the block table
    k_ptr, v_ptr,  # the caches, moved to this KV head
    block_size, stride_kb, stride_ks, stride_kd, stride_vb, stride_vs, stride_vd,
    qk_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_V: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    DOT_PRECISION: tl.constexpr,
):
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    for start in range(lo, hi, BLOCK_N):
        # -- Which keys, and where they live: position j is slot j % B of block table[j // B].
        offs_n = start + tl.arange(0, BLOCK_N)  # (BLOCK_N,) positions
        live = offs_n < hi  # the stretch's tail: nothing past hi is read (nor its table entry)
        block = tl.load(table_ptr + offs_n // block_size, mask=live, other=0).to(tl.int64)
        slot = (offs_n % block_size).to(tl.int64)
        k = tl.load(k_ptr + (block * stride_kb + slot * stride_ks)[:, None]
                    + offs_d[None, :] * stride_kd,
                    mask=live[:, None] & (offs_d[None, :] < HEAD_DIM), other=0.0)
        v = tl.load(v_ptr + (block * stride_vb + slot * stride_vs)[:, None]
                    + offs_dv[None, :] * stride_vd,
                    mask=live[:, None] & (offs_dv[None, :] < HEAD_DIM_V), other=0.0)

        # -- Scores of the whole group against BLOCK_N keys, log2 units, fp32 accumulation.
        qk = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_G, N)
        qk = tl.where(live[None, :], qk, float("-inf"))

        # -- The online softmax update (FlashAttention-2's, as in triton_attention). A stretch
        #    never starts on a dead key, so m_new is finite after the first step; the guard
        #    keeps a shift of 0 in any case rather than -inf - -inf.
        m_new = tl.maximum(m, tl.max(qk, 1))
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m - shift)
        p = tl.math.exp2(qk - shift[:, None])
        l = l * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=DOT_PRECISION)
        m = m_new
    return acc, l, m


@triton.jit
def _split_kv_stage1_kernel(
    q_ptr,  # (batch, q_heads, head_dim)
    k_ptr, v_ptr,  # (num_blocks, block_size, kv_heads, head_dim[_v])
    table_ptr,  # (batch, max_blocks) int32
    lens_ptr,  # (batch,) int32
    m_ptr, l_ptr, acc_ptr,  # (batch, q_heads, num_splits[, head_dim_v]) fp32 partials
    stride_qb, stride_qh, stride_qd,
    stride_kb, stride_ks, stride_kh, stride_kd,
    stride_vb, stride_vs, stride_vh, stride_vd,
    stride_tb,
    stride_mb, stride_mh, stride_ms,
    stride_ab, stride_ah, stride_as, stride_ad,
    group_size, num_splits, block_size, window, sink_tokens, qk_scale,
    HEAD_DIM: tl.constexpr, HEAD_DIM_V: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr, WINDOWED: tl.constexpr, DOT_PRECISION: tl.constexpr,
):
    # -- Who am I? Split s of KV head g of sequence b, and the query heads that read g.
    b = tl.program_id(0)
    g = tl.program_id(1)
    s = tl.program_id(2)
    offs_g = tl.arange(0, BLOCK_G)
    heads = g * group_size + offs_g  # (BLOCK_G,) query heads, group_size of them real
    head_ok = offs_g < group_size
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)

    q = tl.load(q_ptr + b.to(tl.int64) * stride_qb + heads[:, None] * stride_qh
                + offs_d[None, :] * stride_qd,
                mask=head_ok[:, None] & (offs_d[None, :] < HEAD_DIM), other=0.0)
    table_ptr += b.to(tl.int64) * stride_tb
    k_ptr += g.to(tl.int64) * stride_kh
    v_ptr += g.to(tl.int64) * stride_vh

    # -- This split's keys: paged.split_ranges, cdiv(n, num_splits) keys per split.
    n = tl.load(lens_ptr + b)  # context length; the query sits at position n - 1
    per = tl.cdiv(n, num_splits)
    start = tl.minimum(s * per, n)
    stop = tl.minimum(start + per, n)

    m = tl.full([BLOCK_G], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_DV], dtype=tl.float32)

    # -- The visible keys of the split. No window: all of them (causal is automatic, the
    #    query is the last position). A window: the sink tokens [start, sink_tokens) and the
    #    band [n - window, stop) from the first key that is no sink; nothing between is read.
    band_lo = start
    if WINDOWED:
        sink_hi = tl.minimum(stop, sink_tokens)
        acc, l, m = _attend_to_stretch(
            acc, l, m, start, sink_hi, q, table_ptr, k_ptr, v_ptr, block_size,
            stride_kb, stride_ks, stride_kd, stride_vb, stride_vs, stride_vd, qk_scale,
            HEAD_DIM, HEAD_DIM_V, BLOCK_N, BLOCK_D, BLOCK_DV, DOT_PRECISION)
        band_lo = tl.maximum(tl.maximum(start, n - window), sink_tokens)
    acc, l, m = _attend_to_stretch(
        acc, l, m, band_lo, stop, q, table_ptr, k_ptr, v_ptr, block_size,
        stride_kb, stride_ks, stride_kd, stride_vb, stride_vs, stride_vd, qk_scale,
        HEAD_DIM, HEAD_DIM_V, BLOCK_N, BLOCK_D, BLOCK_DV, DOT_PRECISION)

    # -- The partial state, unnormalised (paged.SplitState); an empty split writes -inf, 0, 0.
    row = b.to(tl.int64) * stride_mb + heads * stride_mh + s * stride_ms
    tl.store(m_ptr + row, m, mask=head_ok)
    tl.store(l_ptr + row, l, mask=head_ok)
    tl.store(acc_ptr + b.to(tl.int64) * stride_ab + heads[:, None] * stride_ah + s * stride_as
             + offs_dv[None, :] * stride_ad, acc,
             mask=head_ok[:, None] & (offs_dv[None, :] < HEAD_DIM_V))


# ------------------------------------------------------------------------------------------------
# 2. Stage 2: merge one row's splits by their maxima and sums
# ------------------------------------------------------------------------------------------------
@triton.jit
def _split_kv_stage2_kernel(
    m_ptr, l_ptr, acc_ptr, o_ptr,
    stride_mb, stride_mh, stride_ms,
    stride_ab, stride_ah, stride_as, stride_ad,
    stride_ob, stride_oh, stride_od,
    num_splits,
    HEAD_DIM_V: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_DV: tl.constexpr,
):
    b = tl.program_id(0)
    h = tl.program_id(1)
    offs_dv = tl.arange(0, BLOCK_DV)
    dv_ok = offs_dv < HEAD_DIM_V
    m_ptr += b.to(tl.int64) * stride_mb + h.to(tl.int64) * stride_mh
    l_ptr += b.to(tl.int64) * stride_mb + h.to(tl.int64) * stride_mh
    acc_ptr += b.to(tl.int64) * stride_ab + h.to(tl.int64) * stride_ah

    # The merged state, a one-row online softmax over the splits themselves.
    big_m = tl.full([1], float("-inf"), dtype=tl.float32)
    big_l = tl.zeros([1], dtype=tl.float32)
    big_acc = tl.zeros([1, BLOCK_DV], dtype=tl.float32)
    for s0 in range(0, num_splits, BLOCK_S):
        offs_s = s0 + tl.arange(0, BLOCK_S)
        s_ok = offs_s < num_splits
        m_s = tl.load(m_ptr + offs_s * stride_ms, mask=s_ok, other=float("-inf"))
        l_s = tl.load(l_ptr + offs_s * stride_ms, mask=s_ok, other=0.0)
        acc_s = tl.load(acc_ptr + offs_s[:, None] * stride_as + offs_dv[None, :] * stride_ad,
                        mask=s_ok[:, None] & dv_ok[None, :], other=0.0)  # (BLOCK_S, BLOCK_DV)
        m_new = tl.maximum(big_m, tl.max(m_s, 0))  # (1,)
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # no -inf - -inf
        alpha = tl.math.exp2(big_m - shift)  # (1,)
        w = tl.math.exp2(m_s - shift)  # (BLOCK_S,): exactly 0 for a split with m = -inf
        big_l = big_l * alpha + tl.sum(w * l_s, 0)
        big_acc = big_acc * alpha[:, None] + tl.sum(w[:, None] * acc_s, 0)[None, :]
        big_m = m_new

    o = big_acc / big_l[:, None]  # l > 0: the query always sees itself
    tl.store(o_ptr + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
             + offs_dv[None, :] * stride_od, o.to(o_ptr.dtype.element_ty), mask=dv_ok[None, :])


# ------------------------------------------------------------------------------------------------
# 3. The host wrapper
# ------------------------------------------------------------------------------------------------
def split_kv_decode(q, key_cache, value_cache, block_table, context_lens, *, num_splits,
                    window=None, sink_tokens=0, scale=None):
    """One decode step of a batch, FlashDecoding's way: the keys of each query row split
    across ``num_splits`` programs (stage 1, partial online softmaxes in float32), merged
    exactly by their maxima and sums (stage 2). The batched, torch form of
    ``lessonlib.paged.split_kv_decode``, with its semantics for every sequence.

    ``q`` (batch, q_heads, head_dim): sequence b's query, at position ``context_lens[b] - 1``.
    ``key_cache`` (num_blocks, block_size, kv_heads, head_dim) and ``value_cache``
    (num_blocks, block_size, kv_heads, head_dim_v): vLLM's paged layout, q_heads a multiple of
    kv_heads (GQA; MQA is kv_heads = 1), head dims 1..256, any strides. q and the caches are
    torch tensors of one dtype (float32, float16 or bfloat16) on one device; the output,
    (batch, q_heads, head_dim_v), has their dtype. ``block_table`` (batch, max_blocks) and
    ``context_lens`` (batch,) are int32 tensors on that device: position j of sequence b is
    slot j % block_size of block ``block_table[b, j // block_size]``; 1 <= context_lens[b] <=
    max_blocks x block_size, and only the cdiv(context_lens[b], block_size) entries a
    sequence covers are read (the rest may hold anything). ``num_splits`` (1..65535) may
    exceed the keys (empty splits add nothing); ``window``, ``sink_tokens`` and ``scale`` are
    ``lessonlib.attention``'s.

    Only what the query sees is read: the null block (0), the positions a window hides and the
    slots past a context may hold anything, NaN included. A table whose null block covers a
    position the query sees, an id outside the cache, or NaN or inf in q or in a key or value
    the query reads is a ValueError naming it, raised before the launch; finite inputs whose
    scores overflow float32 are a ValueError saying what to scale. Runs on a CUDA device, or
    on the CPU when TRITON_INTERPRET=1; otherwise RuntimeError."""
    batch, q_heads, kv_heads, d, dv = _check_tensors(q, key_cache, value_cache)
    block_size = key_cache.shape[1]
    lens = _check_table(block_table, context_lens, batch, key_cache.shape[0], block_size,
                        q.device)
    num_splits = check.integer("num_splits", num_splits, minimum=1, maximum=_MAX_GRID)
    window = _check_window(window)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
    scale = _check_scale(scale, d)
    bound = _check_reads(q, key_cache, value_cache, block_table, lens, window, sink_tokens,
                         scale)
    _check_runnable(q)
    out = torch.empty((batch, q_heads, dv), dtype=q.dtype, device=q.device)
    _launch(q, key_cache, value_cache, block_table, context_lens, out, num_splits, window,
            sink_tokens, scale)
    if bound >= _FP32_MAX and not torch.isfinite(out).all():
        raise ValueError(f"finite q and key_cache overflowed the scores in float32: max|q| x "
                         f"max|k| x head_dim x max(1, scale x log2 e) = {bound:.3g} against a "
                         f"maximum of {_FP32_MAX:.3g}; scale q or key_cache down")
    return out


def _config(dtype, d, dv):
    """BLOCK_N keys per step and the launch options. GPU (checked by compiling for sm_90 with
    the pinned triton, tests/test_triton_decode.py: no register spills): fp16/bf16 take 64 keys
    on 4 warps up to head dim 64, on 8 warps up to 128, and 32 keys on 4 warps above; fp32 32
    keys on 8 warps, then 16 on 4 (vLLM's Triton decode kernel takes 64 or 32 keys on 4
    warps). Interpreter: 16 keys (its time goes by program x step, and the tests' contexts are
    a few dozen keys)."""
    if _interpreting():
        return dict(block_n=16, num_warps=4, num_stages=1)
    width = max(_block_d(d), _block_d(dv))
    if dtype == torch.float32:
        return dict(block_n=32 if width <= 128 else 16, num_warps=8 if width <= 128 else 4,
                    num_stages=2)
    return dict(block_n=64 if width <= 128 else 32, num_warps=8 if width == 128 else 4,
                num_stages=2)


def _launch(q, key_cache, value_cache, block_table, context_lens, out, num_splits, window,
            sink_tokens, scale, partials=None):
    """Both grids. ``partials``: a (m, l, acc) triple of float32 tensors to fill instead of
    fresh ones (the tests read stage 1's states from it); m is in log2 units."""
    if q.dtype == torch.bfloat16 and _interpreting():
        # Triton's interpreter multiplies bf16 tiles as raw uint16 bit patterns (see
        # triton_attention._launch), so on the CPU bf16 runs in fp32 and is rounded back.
        out32 = torch.empty(out.shape, dtype=torch.float32, device=out.device)
        _launch(q.float(), key_cache.float(), value_cache.float(), block_table, context_lens,
                out32, num_splits, window, sink_tokens, scale, partials)
        out.copy_(out32)
        return
    batch, q_heads, d = q.shape
    kv_heads, dv = key_cache.shape[2], value_cache.shape[3]
    group = q_heads // kv_heads
    if partials is None:
        m = torch.empty((batch, q_heads, num_splits), dtype=torch.float32, device=q.device)
        l = torch.empty_like(m)
        acc = torch.empty((batch, q_heads, num_splits, dv), dtype=torch.float32,
                          device=q.device)
    else:
        m, l, acc = partials
    config = _config(q.dtype, d, dv)
    block_dv = _block_d(dv)
    _split_kv_stage1_kernel[(batch, kv_heads, num_splits)](
        q, key_cache, value_cache, block_table, context_lens, m, l, acc,
        *q.stride(), key_cache.stride(0), key_cache.stride(1), key_cache.stride(2),
        key_cache.stride(3), value_cache.stride(0), value_cache.stride(1),
        value_cache.stride(2), value_cache.stride(3), block_table.stride(0),
        *m.stride(), *acc.stride(),
        group, num_splits, key_cache.shape[1], window if window is not None else 0,
        sink_tokens, scale * LOG2_E,
        HEAD_DIM=d, HEAD_DIM_V=dv, BLOCK_G=max(16, triton.next_power_of_2(group)),
        BLOCK_N=config["block_n"], BLOCK_D=_block_d(d), BLOCK_DV=block_dv,
        WINDOWED=window is not None,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )
    _split_kv_stage2_kernel[(batch, q_heads)](
        m, l, acc, out, *m.stride(), *acc.stride(), *out.stride(), num_splits,
        HEAD_DIM_V=dv, BLOCK_S=min(16, triton.next_power_of_2(num_splits)), BLOCK_DV=block_dv,
        num_warps=4 if block_dv >= 128 else 2,
    )


# ------------------------------------------------------------------------------------------------
# Input checks and the run-mode plumbing
# ------------------------------------------------------------------------------------------------
def _check_tensors(q, key_cache, value_cache):
    for name, t, ndim, dims in (("q", q, 3, "(batch, q_heads, head_dim)"),
                                ("key_cache", key_cache, 4,
                                 "(num_blocks, block_size, kv_heads, head_dim)"),
                                ("value_cache", value_cache, 4,
                                 "(num_blocks, block_size, kv_heads, head_dim_v)")):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {check.describe(t)}")
        if t.ndim != ndim:
            raise ValueError(f"{name} must have {ndim} dims {dims}, got shape {tuple(t.shape)}")
        if t.dtype not in _DTYPES:
            raise ValueError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
        if min(t.shape) < 1:
            raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    for name, t in (("key_cache", key_cache), ("value_cache", value_cache)):
        if t.dtype != q.dtype:
            raise ValueError(f"{name} must have q's dtype {q.dtype}, got {t.dtype}")
        if t.device != q.device:
            raise ValueError(f"{name} must be on q's device {q.device}, got {t.device}")
    batch, q_heads, d = q.shape
    kv_heads, dv = key_cache.shape[2], value_cache.shape[3]
    if key_cache.shape[3] != d:
        raise ValueError(f"key_cache's head_dim must equal q's {d}, got shape "
                         f"{tuple(key_cache.shape)}")
    if value_cache.shape[:3] != key_cache.shape[:3]:
        raise ValueError(f"value_cache must have key_cache's (num_blocks, block_size, kv_heads) "
                         f"= {tuple(key_cache.shape[:3])}, got {tuple(value_cache.shape[:3])}")
    if q_heads % kv_heads:
        raise ValueError(f"q heads ({q_heads}) must be a multiple of the cache's kv_heads "
                         f"({kv_heads}) (GQA)")
    for name, size in (("q", d), ("value_cache", dv)):
        if size > _MAX_HEAD_DIM:
            raise ValueError(f"{name} head dim must be 1..{_MAX_HEAD_DIM}, got {size}")
    if q_heads > _MAX_GRID:
        raise ValueError(f"q heads must be <= {_MAX_GRID} (the launch grid's second axis), got "
                         f"{q_heads}")
    return batch, q_heads, kv_heads, d, dv


def _check_table(block_table, context_lens, batch, num_blocks, block_size, device):
    """The table and the lengths, on the host: (batch,) int64 lengths on the CPU."""
    for name, t, shape in (("block_table", block_table, "(batch, max_blocks)"),
                           ("context_lens", context_lens, "(batch,)")):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be an int32 torch.Tensor {shape}, got "
                             f"{check.describe(t)}")
        if t.dtype != torch.int32:
            raise ValueError(f"{name} must be int32 (vLLM's dtype), got {t.dtype}")
        if t.device != device:
            raise ValueError(f"{name} must be on q's device {device}, got {t.device}")
    if block_table.ndim != 2 or block_table.shape[0] != batch or block_table.shape[1] < 1:
        raise ValueError(f"block_table must be (batch={batch}, max_blocks >= 1), got shape "
                         f"{tuple(block_table.shape)}")
    if context_lens.shape != (batch,):
        raise ValueError(f"context_lens must be (batch,) = ({batch},), got shape "
                         f"{tuple(context_lens.shape)}")
    lens = context_lens.to("cpu", torch.int64)
    capacity = block_table.shape[1] * block_size
    bad = (lens < 1) | (lens > capacity)
    if bad.any():
        b = int(bad.nonzero()[0, 0])
        raise ValueError(f"context_lens[{b}] = {int(lens[b])} must be 1..{capacity} (the table's "
                         f"{block_table.shape[1]} blocks of {block_size} tokens)")
    table = block_table.to("cpu", torch.int64)
    used = torch.arange(table.shape[1])[None, :] < (lens[:, None] + block_size - 1) // block_size
    bad = used & ((table < 0) | (table >= num_blocks))
    if bad.any():
        b, j = (int(i) for i in bad.nonzero()[0])
        raise ValueError(f"block_table[{b}, {j}] = {int(table[b, j])} is not a block of the "
                         f"cache (0 .. {num_blocks - 1})")
    return lens


def _visible(lens, window, sink_tokens):
    """(batch, max_len) bool: position j is visible to sequence b's query."""
    j = torch.arange(int(lens.max()))[None, :]
    p = lens[:, None] - 1
    seen = j <= p
    if window is not None:
        seen &= (p - j < window) | (j < sink_tokens)
    return seen


def _check_reads(q, key_cache, value_cache, block_table, lens, window, sink_tokens, scale):
    """The null block under a visible position, NaN or inf in q or in what the query reads:
    ValueError. Returns the score bound max|q| x max|k read| x d x max(1, scale log2 e)."""
    if not torch.isfinite(q).all():
        bad = ~torch.isfinite(q.detach())
        at = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(f"q holds non-finite values ({int(bad.sum())} of {q.numel()}; the "
                         f"first, {float(q[at])}, at index {at})")
    bs = key_cache.shape[1]
    seen = _visible(lens, window, sink_tokens)
    b_idx, pos = seen.nonzero(as_tuple=True)
    table = block_table.to("cpu", torch.int64)
    blocks = table[b_idx, pos // bs]
    null = blocks == _NULL_BLOCK
    if null.any():
        i = int(null.nonzero()[0, 0])
        b, p = int(b_idx[i]), int(pos[i])
        raise ValueError(f"block_table[{b}, {p // bs}] is the null block but sequence {b}'s "
                         f"query sees position {p} in it: the null block holds no keys (a "
                         f"window's freed slot must be one no query can see)")
    dev_blocks, dev_slots = blocks.to(q.device), (pos % bs).to(q.device)
    peak_k = 0.0
    for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
        read = cache.detach()[dev_blocks, dev_slots]  # (reads, kv_heads, d)
        finite = torch.isfinite(read).flatten(1).all(dim=1)
        if not finite.all():
            i = int((~finite).nonzero()[0, 0])
            b, p = int(b_idx[i]), int(pos[i])
            raise ValueError(f"{name} holds non-finite values at block {int(blocks[i])}, slot "
                             f"{p % bs} (sequence {b}, position {p}), which a query reads")
        if name == "key_cache":
            peak_k = float(read.abs().max())
    peak_q = float(q.detach().abs().max())
    return peak_q * peak_k * q.shape[-1] * max(1.0, scale * LOG2_E)


def _interpreting():
    """True when this module's kernels were built for Triton's CPU interpreter."""
    return _kernels_interpreted(_split_kv_stage1_kernel)


def _check_runnable(q):
    """A CUDA device with CUDA tensors, or Triton's CPU interpreter; else RuntimeError (the
    checks and words of ``triton_attention``'s, naming this module and its kernel)."""
    _runnable(q, _split_kv_stage1_kernel, module="lessonlib.triton_decode",
              what="the Triton split-KV decode kernel", function="split_kv_decode")

