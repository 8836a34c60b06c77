"""FlashAttention-2 forward in Triton: causal, sliding window, sink tokens, learned sinks, GQA.

The contract is docs/CONTRACT.md, "Attention semantics" (the rule lessonlib.attention states) and
its section on this module.

The same attention as `lessonlib.attention.tiled_attention`, written as a GPU kernel. Read it top
to bottom, the way the Triton tutorials are read:

1. `_attend_to_key_blocks`: the inner loop. One key block at a time: scores, mask, online
   softmax update of the running state, and P @ V into the accumulator.
2. `_flash_attention_fwd_kernel`: one program per (query block, batch x head). It loads its query
   block once, decides which key blocks it must visit (and which of those need a mask), runs the
   inner loop over them, folds in the learned sink and writes its output block once.
3. `flash_attention`: the host wrapper. Checks the inputs, picks block sizes, launches the grid.
4. `kernel_tile_map`: asks the kernel itself which (query block, key block) tiles it computed,
   as the tile codes of `lessonlib.attention` (`TILE_SKIPPED`, `TILE_MASKED`, `TILE_FULL`,
   re-exported here).

Symbols (FlashAttention-2, Dao 2023, Algorithm 1), all per query row and kept in fp32:
  m    running maximum of the scores seen so far (in log2 units, see below)
  l    running softmax denominator, sum of exp2(score - m)
  acc  running unnormalised output, sum of exp2(score - m) * v
Scores are multiplied by `scale * log2(e)` so that the kernel can use `exp2`, the GPU's native
exponential: exp(x) == exp2(x * log2(e)).

Position rule (the same as lessonlib.attention's): query i sits at position p = nk - nq + i, and key j is
visible to it iff (not causal or j <= p) and (window is None or p - j < window or j < sink_tokens).

Runs on a CUDA GPU, or on the CPU under Triton's interpreter (`TRITON_INTERPRET=1`, set before
triton is first imported), where every program runs as numpy code: a few ms per (program x key
block), so keep sizes to a few hundred there.
"""

import math

import numpy as np
import torch
import triton
import triton.language as tl

from . import _validate as check
from .kernel_plan import LOG2_E, TILE_FULL, TILE_MASKED, TILE_SKIPPED
from .kernel_plan import block_d as _block_d

__all__ = ["flash_attention", "kernel_tile_map", "default_config", "TILE_SKIPPED", "TILE_MASKED",
           "TILE_FULL"]  # attention's tile codes, re-exported: what kernel_tile_map records

_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_MAX_HEAD_DIM = 256
_MAX_GRID_Y = 65535  # CUDA's limit on the grid's second axis, where (batch x head) goes
_MAX_WARPS = 32  # 32 warps x 32 threads = 1024, CUDA's limit on the threads of one program
_MAX_TILE = tl.core.TRITON_MAX_TENSOR_NUMEL  # elements in one Triton tensor (2**20)
_FP32_MAX = float(torch.finfo(torch.float32).max)


# ------------------------------------------------------------------------------------------------
# 1. The inner loop: stream K/V blocks through the online softmax
# ------------------------------------------------------------------------------------------------
@triton.jit
def _attend_to_key_blocks(
    acc, l, m,  # running state: (BLOCK_M, BLOCK_D), (BLOCK_M,), (BLOCK_M,), fp32
    start_n, end_n,  # visit keys [start_n, end_n); both are multiples of BLOCK_N
    MASKED: tl.constexpr,  # False for interior tiles: no bounds check, no mask, nothing to pay
    q,  # (BLOCK_M, BLOCK_D) this program's query block, in the input dtype
    k_ptrs, v_ptrs,  # (BLOCK_N, BLOCK_D) pointers to keys / values 0 .. BLOCK_N - 1
    d_mask,  # (1, BLOCK_D): False on the padded head dims (BLOCK_D > HEAD_DIM)
    stride_kn, stride_vn,
    pos_m,  # (BLOCK_M,) position of each query row
    nk, window, sink_tokens, qk_scale,
    tiles_ptr,  # this program's row of the tile map (written only when RECORD_TILES)
    BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, WINDOWED: tl.constexpr,
    DOT_PRECISION: tl.constexpr, RECORD_TILES: tl.constexpr,
):
    # Point at the first key block of the stretch; each step moves the pointers one block on.
    k_ptrs += start_n * stride_kn
    v_ptrs += start_n * stride_vn
    k_step = BLOCK_N * stride_kn
    v_step = BLOCK_N * stride_vn
    for start in range(start_n, end_n, BLOCK_N):
        # -- Load K_j and V_j, (BLOCK_N, BLOCK_D). Padded head dims read as 0 and add nothing to
        #    the dot products; in masked tiles, so do the keys past nk.
        if MASKED:
            offs_n = start + tl.arange(0, BLOCK_N)  # (BLOCK_N,) key indices of this block
            kv_mask = d_mask & (offs_n[:, None] < nk)
        else:
            kv_mask = d_mask
        k = tl.load(k_ptrs, mask=kv_mask, other=0.0)
        v = tl.load(v_ptrs, mask=kv_mask, other=0.0)

        # -- S_ij = Q_i K_j^T * scale, in log2 units. The tensor cores take the input dtype and
        #    accumulate in fp32.
        qk = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N)

        # -- The visibility rule, only on tiles the loop bounds could not prove fully visible.
        if MASKED:
            visible = offs_n[None, :] < nk  # (1, BLOCK_N): keys past the end do not exist
            if CAUSAL:
                visible = visible & (offs_n[None, :] <= pos_m[:, None])
            if WINDOWED:
                in_window = (pos_m[:, None] - offs_n[None, :]) < window
                visible = visible & (in_window | (offs_n[None, :] < sink_tokens))
            qk = tl.where(visible, qk, float("-inf"))

        # -- Online softmax, notebook 02's one-pass update for a whole tile: the new running max
        #    m_new, the old l and acc rescaled by alpha = exp2(m_old - m_new), then this tile's
        #    p = exp2(S - m_new) added to l (row sums) and to acc (as p @ V).
        m_new = tl.maximum(m, tl.max(qk, 1))  # (BLOCK_M,)
        if MASKED:
            # A row that has seen no visible key yet still has m_new = -inf, and -inf - -inf is
            # NaN. Shift such rows by 0 instead: their p and alpha come out as exactly 0.
            shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            shift = m_new
        alpha = tl.math.exp2(m - shift)  # (BLOCK_M,), 0 on a row's first visible block
        p = tl.math.exp2(qk - shift[:, None])  # (BLOCK_M, BLOCK_N), unnormalised probabilities
        l = l * alpha + tl.sum(p, 1)
        # P goes back to the input dtype for the second tensor-core product, as FlashAttention-2
        # does.
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=DOT_PRECISION)
        m = m_new

        if RECORD_TILES:  # the bookkeeping behind kernel_tile_map; compiled away otherwise
            if MASKED:
                tl.store(tiles_ptr + start // BLOCK_N, 1)  # TILE_MASKED
            else:
                tl.store(tiles_ptr + start // BLOCK_N, 2)  # TILE_FULL
        k_ptrs += k_step
        v_ptrs += v_step
    return acc, l, m


# ------------------------------------------------------------------------------------------------
# 2. The kernel: one program per (query block, batch x head)
# ------------------------------------------------------------------------------------------------
@triton.jit
def _flash_attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,  # q, o: (b, hq, nq, d); k, v: (b, hkv, nk, d)
    sink_logits_ptr,  # (hq,) fp32 learned sink logits in log2 units (read when HAS_SINK_LOGITS)
    tiles_ptr,  # (b * hq, cdiv(nq, BLOCK_M), cdiv(nk, BLOCK_N)) int8 (written when RECORD_TILES)
    stride_qb, stride_qh, stride_qm, stride_qd,
    stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd,
    stride_ob, stride_oh, stride_om, stride_od,
    hq, group_size,  # query heads, and query heads per KV head (hq // hkv)
    nq, nk, window, sink_tokens, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,  # BLOCK_D: HEAD_DIM rounded up to a power of 2
    CAUSAL: tl.constexpr, WINDOWED: tl.constexpr, HAS_SINK_LOGITS: tl.constexpr,
    DOT_PRECISION: tl.constexpr, RECORD_TILES: tl.constexpr,
):
    # -- Who am I? A query block of one query head of one batch element.
    pid_m = tl.program_id(0)  # query block
    pid_bh = tl.program_id(1)  # batch x head
    b = pid_bh // hq
    h = pid_bh % hq
    h_kv = h // group_size  # GQA/MQA: query heads share a KV head by index, no K/V copy

    # Move each pointer to its (batch, head). int64: b * stride can pass 2**31 on big inputs.
    q_ptr += b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    o_ptr += b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
    k_ptr += b.to(tl.int64) * stride_kb + h_kv.to(tl.int64) * stride_kh
    v_ptr += b.to(tl.int64) * stride_vb + h_kv.to(tl.int64) * stride_vh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,) query rows, some past nq
    offs_n = tl.arange(0, BLOCK_N)  # (BLOCK_N,) key offsets inside a key block
    offs_d = tl.arange(0, BLOCK_D)  # (BLOCK_D,) head dims, HEAD_DIM of them real
    pos_m = nk - nq + offs_m  # (BLOCK_M,) positions: the queries are the last nq tokens
    d_mask = offs_d[None, :] < HEAD_DIM  # (1, BLOCK_D)

    # -- Q_i stays on chip for the whole loop; rows past nq and padded dims read as 0.
    q_mask = (offs_m[:, None] < nq) & d_mask
    q = tl.load(q_ptr + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=q_mask, other=0.0)
    # Pointers to the first key block; the loop moves them along the keys.
    k_ptrs = k_ptr + offs_n[:, None] * stride_kn + offs_d[None, :] * stride_kd  # (BLOCK_N, d)
    v_ptrs = v_ptr + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd

    # -- Running state. m = -inf: nothing seen yet; l = 0 and acc = 0: empty sums.
    m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    # -- Which key blocks can any query of this block see? p_first and p_last are the positions
    #    of the block's first and last real query.
    p_first = nk - nq + pid_m * BLOCK_M
    p_last = tl.minimum(p_first + BLOCK_M, nk) - 1
    # [lo, hi): the band of keys the block can see. Causal: nothing after p_last (the diagonal).
    # Windowed: nothing before the first query's window, p_first - window + 1.
    lo = 0
    hi = nk
    if CAUSAL:
        hi = p_last + 1
    if WINDOWED:
        lo = tl.maximum(p_first - window + 1, 0) // BLOCK_N * BLOCK_N
    # [full_lo, full_hi): the blocks inside the band that every query sees whole (no mask):
    # causal: keys <= p_first; windowed: keys >= p_last - window + 1; and no key past nk.
    full_lo = lo
    full_hi = nk // BLOCK_N * BLOCK_N
    if CAUSAL:
        full_hi = (p_first + 1) // BLOCK_N * BLOCK_N
    if WINDOWED:
        full_lo = (tl.maximum(p_last - window + 1, 0) + BLOCK_N - 1) // BLOCK_N * BLOCK_N
    full_lo = tl.minimum(tl.maximum(full_lo, lo), hi)  # keep lo <= full_lo <= full_hi <= hi
    full_hi = tl.maximum(tl.minimum(full_hi, hi), full_lo)
    # The sink tokens (keys < sink_tokens) are visible to every query. Their blocks are visited
    # separately, stopping where the band starts so that no block is visited twice.
    sink_hi = 0
    if WINDOWED:
        sink_hi = tl.minimum((sink_tokens + BLOCK_N - 1) // BLOCK_N * BLOCK_N, lo)

    if RECORD_TILES:
        tiles_ptr += (pid_bh * tl.num_programs(0) + pid_m) * ((nk + BLOCK_N - 1) // BLOCK_N)

    # -- The loop over K/V, in up to four stretches of one inner loop, each with its key range
    #    and whether it needs the mask: sink blocks | band edge | interior | band edge. Only the
    #    interior skips the mask. With a window the band has a fixed width, so the work per
    #    query block is bounded and the total cost is linear in n.
    if WINDOWED:
        acc, l, m = _attend_to_key_blocks(
            acc, l, m, 0, sink_hi, True,  # the sink blocks, before the band
            q, k_ptrs, v_ptrs, d_mask, stride_kn, stride_vn, pos_m, nk, window, sink_tokens,
            qk_scale, tiles_ptr, BLOCK_N, CAUSAL, WINDOWED, DOT_PRECISION, RECORD_TILES)
        acc, l, m = _attend_to_key_blocks(
            acc, l, m, lo, full_lo, True,  # the band's leading edge: the window boundary
            q, k_ptrs, v_ptrs, d_mask, stride_kn, stride_vn, pos_m, nk, window, sink_tokens,
            qk_scale, tiles_ptr, BLOCK_N, CAUSAL, WINDOWED, DOT_PRECISION, RECORD_TILES)
    acc, l, m = _attend_to_key_blocks(
        acc, l, m, full_lo, full_hi, False,  # the interior: every key visible, no mask
        q, k_ptrs, v_ptrs, d_mask, stride_kn, stride_vn, pos_m, nk, window, sink_tokens,
        qk_scale, tiles_ptr, BLOCK_N, CAUSAL, WINDOWED, DOT_PRECISION, RECORD_TILES)
    acc, l, m = _attend_to_key_blocks(
        acc, l, m, full_hi, hi, True,  # the trailing edge: the diagonal, or a ragged last block
        q, k_ptrs, v_ptrs, d_mask, stride_kn, stride_vn, pos_m, nk, window, sink_tokens,
        qk_scale, tiles_ptr, BLOCK_N, CAUSAL, WINDOWED, DOT_PRECISION, RECORD_TILES)

    # -- A learned sink (gpt-oss) is one more logit z in the denominator, with no value vector:
    #    fold it in once, at the end, exactly like one more key block of a single key.
    if HAS_SINK_LOGITS:
        z = tl.load(sink_logits_ptr + h)  # scalar, already in log2 units
        m_final = tl.maximum(m, z)
        alpha = tl.math.exp2(m - m_final)
        l = l * alpha + tl.math.exp2(z - m_final)
        acc = acc * alpha[:, None]

    # -- Normalise and write the output block, once. Every real query sees at least itself, so
    #    l > 0 there; only padding rows past nq can have l = 0 (they are not stored).
    l = tl.where(l == 0.0, 1.0, l)
    o = acc / l[:, None]
    o_mask = (offs_m[:, None] < nq) & d_mask
    tl.store(o_ptr + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
             o.to(o_ptr.dtype.element_ty), mask=o_mask)


# ------------------------------------------------------------------------------------------------
# 3. The host wrapper
# ------------------------------------------------------------------------------------------------
def flash_attention(q, k, v, *, causal=False, window=None, sink_tokens=0, sink_logits=None,
                    scale=None, block_m=None, block_n=None, num_warps=None, num_stages=None):
    """Attention with the FlashAttention-2 forward kernel (the semantics of lessonlib.attention).

    q: (b, hq, nq, d); k, v: (b, hkv, nk, d); torch tensors on one device, all fp32, all fp16
    or all bf16, any strides, 1 <= d <= 256 and b x hq <= 65535 (CUDA's limit on the grid's
    second axis). Returns o: (b, hq, nq, d) in the input dtype. `sink_logits`: (hq,), a tensor
    or an array, or None. `block_m`, `block_n` (powers of two >= 16), `num_warps` (a power of
    two <= 32), `num_stages` (>= 1): tuning knobs; the defaults depend on the head dim and on
    GPU vs interpreter (see `default_config`).

    Every argument is checked before the launch: NaN or inf in q, k or v is a ValueError naming
    the tensor, and so is a tile past Triton's 2**20 elements per tensor. Finite q and k whose
    scores could pass float32's range (max|q| max|k| d scale, a bound) are run, and an output
    that overflowed is a ValueError saying what to scale.

    Runs on a CUDA device, or on the CPU when TRITON_INTERPRET=1; otherwise RuntimeError.
    """
    b, hq, nq, d = _check_qkv(q, k, v)
    causal = check.flag("causal", causal)
    window = _check_window(window)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
    sink = _check_sink_logits(sink_logits, hq, q.device)
    scale = _check_scale(scale, d)
    config = default_config(d, nq, q.dtype)
    for name, given in (("block_m", block_m), ("block_n", block_n)):
        if given is not None:
            config[name] = _check_block(given, name)
    _check_tiles(config["block_m"], config["block_n"], d)
    if num_warps is not None:
        config["num_warps"] = _check_num_warps(num_warps)
    if num_stages is not None:
        config["num_stages"] = check.integer("num_stages", num_stages, minimum=1)
    bound = _score_bound(q, k, v, scale)  # also: NaN or inf in q, k, v is an error here
    _check_runnable(q)

    o = torch.empty((b, hq, nq, d), dtype=q.dtype, device=q.device)
    _launch(q, k, v, o, causal, window, sink_tokens, sink, scale, config, tiles=None)
    if bound >= _FP32_MAX and not torch.isfinite(o).all():
        raise ValueError(f"finite q and k overflowed the scores in float32: max|q| x max|k| x d x "
                         f"max(1, scale x log2 e) = {bound:.3g} against a maximum of "
                         f"{_FP32_MAX:.3g}; scale q or k down")
    return o


def default_config(d, nq=None, dtype=torch.float16):
    """Block sizes and launch options `flash_attention` uses when it is given none: a dict of
    ``block_m``, ``block_n``, ``num_warps`` and ``num_stages``.

    GPU (Hopper-class, checked by compiling for sm_90 with the pinned triton: no register
    spills): fp16/bf16 take BLOCK_M = 128 query rows x BLOCK_N = 64 keys per step with 3 pipeline
    stages and 8 warps (two warp groups of 64 rows) up to d = 128 (4 warps spilled at d = 64 with
    the window and sink masks under triton 3.7); d = 256 takes 64 x 32 tiles. fp32
    (exact "ieee" dot products, no tensor-core shortcut) takes 32 x 32 tiles. A short query
    (decode) gets a smaller BLOCK_M. Interpreter: time goes by (programs x key blocks), so 64 x 64.
    ``d``: the head dim, 1..256; ``nq``: the query length (>= 1) or None; ``dtype``:
    torch.float32, torch.float16 or torch.bfloat16.
    """
    d = check.integer("d", d, minimum=1, maximum=_MAX_HEAD_DIM)
    nq = None if nq is None else check.integer("nq", nq, minimum=1)
    if not isinstance(dtype, torch.dtype) or dtype not in _DTYPES:  # (a numpy type too)
        raise ValueError(f"dtype must be one of torch.float32, torch.float16, torch.bfloat16; "
                         f"got {dtype!r} (a {type(dtype).__name__})")
    block_d = _block_d(d)
    short_m = max(16, triton.next_power_of_2(nq)) if nq is not None else 128
    if _interpreting():
        config = dict(block_m=64, block_n=64, num_warps=4, num_stages=1)
    elif dtype == torch.float32:
        config = dict(block_m=32, block_n=32, num_warps=4 if block_d <= 64 else 8, num_stages=2)
    elif block_d <= 128:
        config = dict(block_m=128, block_n=64, num_warps=8, num_stages=3)
    else:
        config = dict(block_m=64, block_n=32, num_warps=8, num_stages=2)
    config["block_m"] = min(config["block_m"], short_m)
    return config


def _launch(q, k, v, o, causal, window, sink_tokens, sink, scale, config, tiles):
    """Launch the grid: one program per (query block, batch x head)."""
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    if q.dtype == torch.bfloat16 and _interpreting():
        # Triton 3.9's interpreter multiplies bf16 tiles as their raw uint16 bit patterns (tl.dot
        # gives garbage), so on the CPU bf16 runs in fp32 and is rounded back. On a GPU the
        # kernel runs in bf16.
        o32 = torch.empty(o.shape, dtype=torch.float32, device=o.device)
        _launch(q.float(), k.float(), v.float(), o32, causal, window, sink_tokens, sink, scale,
                config, tiles)
        o.copy_(o32)
        return
    block_m, block_n = config["block_m"], config["block_n"]
    grid = (triton.cdiv(nq, block_m), b * hq)
    dummy = torch.empty(1, dtype=torch.float32, device=q.device)  # for pointers never read
    _flash_attention_fwd_kernel[grid](
        q, k, v, o,
        sink if sink is not None else dummy,
        tiles if tiles is not None else dummy,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        hq, hq // hkv, nq, nk,
        window if window is not None else 0, sink_tokens, scale * LOG2_E,
        BLOCK_M=block_m, BLOCK_N=block_n, HEAD_DIM=d, BLOCK_D=_block_d(d),
        CAUSAL=causal, WINDOWED=window is not None, HAS_SINK_LOGITS=sink is not None,
        DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",  # fp32 stays fp32
        RECORD_TILES=tiles is not None,
        num_warps=config["num_warps"], num_stages=config["num_stages"],
    )


# ------------------------------------------------------------------------------------------------
# 4. Which tiles did the kernel compute?
# ------------------------------------------------------------------------------------------------
def kernel_tile_map(nq, nk, *, causal=False, window=None, sink_tokens=0, block_m=64,
                    block_n=64):
    """Run the kernel on a tiny input (one head, d = 16) and let it record every tile it visits.

    Returns an int8 array (cdiv(nq, block_m), cdiv(nk, block_n)) holding TILE_SKIPPED,
    TILE_MASKED or TILE_FULL for each (query block, key block): the kernel's own loop bounds,
    not a re-derivation of them. Sums of it are the kernel's work. ``block_m`` and ``block_n``
    are powers of two >= 16.
    """
    nq = check.integer("nq", nq, minimum=1)
    nk = check.integer("nk", nk, minimum=1)
    if nq > nk:
        raise ValueError(f"nq must be <= nk (the queries are the last nq keys), got {nq} > {nk}")
    causal = check.flag("causal", causal)
    window = _check_window(window)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
    block_m = _check_block(block_m, "block_m")
    block_n = _check_block(block_n, "block_n")
    _check_tiles(block_m, block_n, 16)
    _check_runnable(None)
    device = "cpu" if _interpreting() else "cuda"
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, 16, generator=gen).to(device) for n in (nq, nk, nk))
    o = torch.empty_like(q)
    tiles = torch.zeros((1, triton.cdiv(nq, block_m), triton.cdiv(nk, block_n)),
                        dtype=torch.int8, device=device)
    config = dict(block_m=block_m, block_n=block_n, num_warps=4, num_stages=2)
    _launch(q, k, v, o, causal, window, sink_tokens, None, 0.25, config, tiles)
    return tiles[0].cpu().numpy()


# ------------------------------------------------------------------------------------------------
# Input checks and the run-mode plumbing
# ------------------------------------------------------------------------------------------------
def _check_qkv(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.ndim != 4:
            raise ValueError(f"{name} must have 4 dims (b, heads, n, d), got shape "
                             f"{tuple(t.shape)}")
        if t.dtype not in _DTYPES:
            raise ValueError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise ValueError(f"{name} must have q's dtype {q.dtype}, got {t.dtype}")
        if t.device != q.device:
            raise ValueError(f"{name} must be on q's device {q.device}, got {t.device}")
    b, hq, nq, d = q.shape
    if min(b, hq, nq) < 1:
        raise ValueError(f"q must not be empty, got shape {tuple(q.shape)}")
    if k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"k must be (b={b}, hkv, nk, d={d}) to match q {tuple(q.shape)}, got "
                         f"{tuple(k.shape)}")
    if v.shape != k.shape:
        raise ValueError(f"v must have k's shape {tuple(k.shape)} (this kernel has no separate "
                         f"value dim), got {tuple(v.shape)}")
    hkv, nk = k.shape[1], k.shape[2]
    if hkv < 1 or hq % hkv != 0:
        raise ValueError(f"q heads ({hq}) must be a multiple of k/v heads ({hkv}) (GQA)")
    if nk < 1:
        raise ValueError(f"k must hold at least one key, got nk = {nk}")
    if nq > nk:
        raise ValueError(f"q must have nq <= nk (the queries are the last nq keys), got "
                         f"nq = {nq} > nk = {nk}")
    if not 1 <= d <= _MAX_HEAD_DIM:
        raise ValueError(f"q head dim must be 1..{_MAX_HEAD_DIM}, got {d}")
    if b * hq > _MAX_GRID_Y:
        raise ValueError(f"q batch x heads must be <= {_MAX_GRID_Y} (the launch grid's second "
                         f"axis), got {b} x {hq}")
    return b, hq, nq, d


def _non_finite(name, t):
    """The ValueError for a tensor holding NaN or inf: the count and the first index."""
    bad = ~torch.isfinite(t.detach())
    at = tuple(int(i) for i in bad.nonzero()[0])
    return ValueError(f"{name} holds non-finite values ({int(bad.sum())} of {t.numel()}; the "
                      f"first, {float(t[at])}, at index {at}): NaN or inf would come back as "
                      f"rows of NaN")


def _score_bound(q, k, v, scale):
    """max|q| x max|k| x d x max(1, scale log2 e): no score, nor its dot product before the
    scale, is larger. One reduction per tensor (and one device sync) also finds NaN and inf."""
    peaks = torch.stack([torch.linalg.vector_norm(t.detach(), ord=math.inf).float()
                         for t in (q, k, v)]).tolist()  # max |x|, NaN if any is NaN
    for name, t, peak in zip("qkv", (q, k, v), peaks):
        if not math.isfinite(peak):
            raise _non_finite(name, t)
    return peaks[0] * peaks[1] * q.shape[-1] * max(1.0, scale * LOG2_E)


def _check_block(value, name):
    value = check.integer(name, value, minimum=1)
    if value < 16 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two >= 16 (tl.arange needs a power of two, "
                         f"tl.dot at least 16), got {value}")
    return value


def _check_tiles(block_m, block_n, d):
    """Each tile the kernel holds, (block_m, BLOCK_D), (block_n, BLOCK_D) and the score tile
    (block_m, block_n), must fit in one Triton tensor (TRITON_MAX_TENSOR_NUMEL elements)."""
    block_d = _block_d(d)
    for names, numel in (("block_m", block_m * block_d), ("block_n", block_n * block_d),
                         ("block_m x block_n", block_m * block_n)):
        if numel > _MAX_TILE:
            raise ValueError(f"{names} too large: the kernel's tile of {numel:,} elements "
                             f"(block_m = {block_m}, block_n = {block_n}, BLOCK_D = {block_d}) "
                             f"passes Triton's limit of {_MAX_TILE:,} per tensor; choose "
                             f"smaller blocks")


def _check_num_warps(value):
    value = check.integer("num_warps", value, minimum=1, maximum=_MAX_WARPS)
    if value & (value - 1):
        raise ValueError(f"num_warps must be a power of two (Triton lays out a program's warps "
                         f"in powers of two), got {value}")
    return value


def _check_window(window):
    return None if window is None else check.integer("window", window, minimum=1)


def _check_sink_logits(sink_logits, hq, device):
    """(hq,) learned sink logits -> fp32 tensor in log2 units on the device, or None."""
    if sink_logits is None:
        return None
    if isinstance(sink_logits, torch.Tensor):
        if sink_logits.dtype == torch.bool or sink_logits.dtype.is_complex:
            raise ValueError(f"sink_logits must hold real numbers, got dtype {sink_logits.dtype}")
        sink = sink_logits.detach().to("cpu", torch.float64)
        if not torch.isfinite(sink).all():
            raise _non_finite("sink_logits", sink)
    else:
        sink = torch.from_numpy(np.asarray(
            check.array("sink_logits", sink_logits, kind="real"), dtype=np.float64))
    if sink.shape != (hq,):
        raise ValueError(f"sink_logits must have shape (hq,) = ({hq},), got {tuple(sink.shape)}")
    if float(sink.abs().max()) * LOG2_E >= _FP32_MAX:
        raise ValueError(f"sink_logits must be smaller than {_FP32_MAX / LOG2_E:.3g} in magnitude "
                         f"(the kernel holds them as float32 in log2 units), got "
                         f"{float(sink.abs().max()):.3g}")
    return (sink * LOG2_E).to(device=device, dtype=torch.float32)


def _check_scale(scale, d):
    """1 / sqrt(d) for None; else a finite number > 0 that stays finite as the kernel's float32
    scale x log2(e)."""
    if scale is None:
        return 1.0 / math.sqrt(d)
    return check.real("scale", scale, above=0.0, below=_FP32_MAX / LOG2_E)


def _interpreting(kernel=None):
    """True when the kernels were built for Triton's CPU interpreter. `@triton.jit` decides
    that once, from TRITON_INTERPRET, when a module is imported: this one (or ``kernel``'s), and
    triton.language (whose tl.max and tl.sum the kernels call) when triton is first imported."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_flash_attention_fwd_kernel if kernel is None else kernel,
                      InterpretedFunction)


def _check_runnable(q, kernel=None, *, module="lessonlib.triton_attention",
                    what="the Triton attention kernel", function="flash_attention"):
    """A CUDA device, or Triton's CPU interpreter; anything else is a RuntimeError. ``kernel``,
    ``module``, ``what`` and ``function`` name another module's kernel (lessonlib.triton_decode)."""
    from triton.runtime.interpreter import InterpretedFunction

    how = ("set TRITON_INTERPRET=1 to run on the CPU with Triton's interpreter, before triton is "
           "first imported: in a shell `TRITON_INTERPRET=1 python ...`, in a notebook "
           "`os.environ['TRITON_INTERPRET'] = '1'` in the first cell")
    if _interpreting(kernel) != isinstance(tl.sum, InterpretedFunction):
        raise RuntimeError(f"triton was imported before TRITON_INTERPRET changed and {module} "
                           f"after, so their kernels disagree; restart Python (or the notebook "
                           f"kernel) and {how}")
    if _interpreting(kernel):
        return
    if triton.knobs.runtime.interpret:
        raise RuntimeError("TRITON_INTERPRET=1 was set after triton was imported, too late for "
                           "the kernels (built for a GPU); restart Python (or the notebook "
                           f"kernel) and {how}")
    if not torch.cuda.is_available():
        raise RuntimeError(f"{what} needs a CUDA GPU, and none is available; {how}")
    if q is not None and q.device.type != "cuda":
        raise RuntimeError(f"{function} runs on CUDA tensors, got {q.device} tensors: move "
                           f"them with .cuda(), or {how}")
