"""Naive and tiled (FlashAttention-style) attention in numpy, with one masking rule for all.

The contract is docs/CONTRACT.md, "Attention semantics" (stated again below) and its section on
this module.

Shapes:
    q (hq, nq, d) or (nq, d); k (hkv, nk, d) or (nk, d); v (hkv, nk, dv) or (nk, dv).
    hq % hkv == 0 and query head h reads KV head h // (hq // hkv)   (GQA; MQA is hkv = 1).
    nq <= nk: query i sits at position p = nk - nq + i              (decode is nq = 1).

Key j is visible to the query at position p iff
    (not causal or j <= p) and (window is None or p - j < window or j < sink_tokens)
W = window counts the query itself (W = 1 sees only itself); sink_tokens are StreamingLLM's
always-kept first tokens. sink_logits (hq,) is one learned logit per query head that joins the
softmax denominator with no value vector (gpt-oss).

tiled_attention follows FlashAttention-2, Algorithm 1: per query block it keeps the running max
m, denominator l and numerator acc of every row, streams the key blocks the mask does not hide
completely, and writes the output block once. It never materialises more than one
block_q x block_k score tile per query head. The unit of work (one KV head with its query group
x one query block) depends on the problem only, so the output is bitwise the same for any
number of threads.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import _validate as check
from ._validate import non_negative_int, positive_int

__all__ = ["attention_mask", "naive_attention", "tiled_attention", "key_blocks",
           "AttentionInputs", "DEFAULT_BLOCK_Q", "DEFAULT_BLOCK_K", "TILE_SKIPPED",
           "TILE_MASKED", "TILE_FULL", "block_map", "MASK_HIDDEN", "MASK_WINDOW", "MASK_SINK",
           "mask_codes"]

# The fastest sizes benchmarks/attention_cpu.py found on a 2-core machine (see RESULTS.md).
DEFAULT_BLOCK_Q = 256
"""``tiled_attention``'s default query block, 256: the fastest that benchmarks/attention_cpu.py
found on a 2-core machine (benchmarks/RESULTS.md)."""
DEFAULT_BLOCK_K = 512
"""``tiled_attention``'s default key block, 512 (found with ``DEFAULT_BLOCK_Q``)."""

# The most entries one array built here may hold: 2^31 (2 GiB as bool, 8 GiB as float32). The
# course's largest is far below it (8 heads x 8,192^2 scores = 2^29 in benchmarks/attention_cpu.py);
# past it numpy fails with a MemoryError, or swaps for minutes, before saying which argument.
_MAX_ENTRIES = 2**31


def _count(n):
    return f"{n:,}" if n < 10**15 else f"{float(n):.3g}"


def _check_entries(subject, entries, itemsize, kind, builder, hint):
    """ValueError, before anything is allocated, when one array of ``entries`` would pass
    _MAX_ENTRIES. ``subject`` starts with the arguments that size it (``nq x nk = 10 x 10``)."""
    if entries > _MAX_ENTRIES:
        size = check.describe_bytes(entries * itemsize)
        raise ValueError(f"{subject} = {_count(entries)} entries ({size} as "
                         f"{kind}) is more than {builder} builds (lessonlib.attention builds at "
                         f"most 2^31 = {_MAX_ENTRIES:,} entries per array); {hint}")


def _check_mask_args(causal, window, sink_tokens):
    if window is not None:
        positive_int("window", window)
    non_negative_int("sink_tokens", sink_tokens)
    check.flag("causal", causal)


def _visible(p, j, causal, window, sink_tokens):
    """The visibility rule on broadcastable position arrays p (queries) and j (keys)."""
    ok = np.ones(np.broadcast_shapes(np.shape(p), np.shape(j)), dtype=bool)
    if causal:
        ok &= j <= p
    if window is not None:
        ok &= (p - j < window) | (j < sink_tokens)
    return ok


def attention_mask(nq, nk, *, causal=False, window=None, sink_tokens=0):
    """Boolean (nq, nk): True where query i (at position nk - nq + i) may see key j.

    ``nq`` and ``nk`` are ints >= 1 with nq <= nk; ``window`` None or >= 1, ``sink_tokens`` >= 0.
    """
    nq, nk = positive_int("nq", nq), positive_int("nk", nk)
    if nq > nk:
        raise ValueError(f"nq must be <= nk (queries are the last nq positions), got {nq} > {nk}")
    _check_mask_args(causal, window, sink_tokens)
    _check_entries(f"nq x nk = {nq:,} x {nk:,}", nq * nk, 1, "bool", "attention_mask",
                   "ask for the rows you need: the last nq queries (nq = 1 is one query's row)")
    p = np.arange(nk - nq, nk)[:, None]
    j = np.arange(nk)[None, :]
    return _visible(p, j, causal, window, sink_tokens)


@dataclass(frozen=True)
class AttentionInputs:
    """Validated inputs, always 3-D: q (hq, nq, d), k (hkv, nk, d), v (hkv, nk, dv).

    ``squeeze`` is True when the caller passed 2-D arrays (the result is then 2-D again);
    ``sink_logits`` a float (hq,) array or None; ``scale`` the number the scores are multiplied
    by."""
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    sink_logits: object  # (hq,) float array or None
    scale: float
    squeeze: bool  # the caller passed 2-D arrays: return 2-D

    @property
    def group(self):
        """Query heads per KV head, hq // hkv."""
        return self.q.shape[0] // self.k.shape[0]


def _validate(q, k, v, causal, window, sink_tokens, sink_logits, scale):
    # 2-D (n, d) or 3-D (heads, n, d) floats; NaN or inf would come back as NaN rows, silently
    q, k, v = (check.array(name, a, kind="float", ndim=(2, 3))
               for name, a in (("q", q), ("k", k), ("v", v)))
    if not q.ndim == k.ndim == v.ndim:
        raise ValueError(f"q, k and v must all be 2-D or all 3-D, got {q.ndim}, {k.ndim}, {v.ndim}")
    squeeze = q.ndim == 2
    if squeeze:
        q, k, v = q[None], k[None], v[None]
    hq, nq, d = q.shape
    hkv, nk, dk = k.shape
    if min(q.shape + k.shape) < 1 or v.shape[-1] < 1:
        raise ValueError(f"empty dimension in q {q.shape}, k {k.shape} or v {v.shape}")
    if dk != d:
        raise ValueError(f"k's last dim must equal q's head dim {d}, got {dk}")
    if v.shape[:2] != (hkv, nk):
        raise ValueError(f"v must have k's heads and length {(hkv, nk)}, got {v.shape[:2]}")
    if hq % hkv:
        raise ValueError(f"q heads ({hq}) must be a multiple of k/v heads ({hkv}): hq % hkv != 0")
    if nq > nk:
        raise ValueError(f"nq must be <= nk (queries are the last nq positions), got {nq} > {nk}")
    _check_mask_args(causal, window, sink_tokens)
    if sink_logits is not None:
        sink_logits = check.array("sink_logits", sink_logits, kind="real", ndim=(0, 1))
        if sink_logits.shape != (hq,):
            raise ValueError(f"sink_logits must have one logit per query head, shape ({hq},), "
                             f"got shape {sink_logits.shape}")
        sink_logits = sink_logits.astype(np.float64)
        dt = _work_dtype(q, k, v)
        too_big = np.abs(sink_logits) > np.finfo(dt).max  # would be inf in dt, then NaN rows
        if too_big.any():
            h = int(np.argmax(too_big))
            raise ValueError(f"sink_logits[{h}] = {sink_logits[h]:g} does not fit "
                             f"{np.dtype(dt).name}, the dtype attention is computed in for "
                             f"these q, k and v (largest {float(np.finfo(dt).max):.3g}); a "
                             "learned sink is a logit like a score, a few units")
    scale = 1.0 / np.sqrt(d) if scale is None else check.real("scale", scale, above=0.0)
    return AttentionInputs(q, k, v, sink_logits, float(scale), squeeze)


def _check_finite_output(out, a, dt):
    """Finite q, k, v can still overflow the scores (|q . k| * scale past the float type's
    maximum) into inf and then NaN: say so, with the bound and what to do, instead of NaN rows."""
    if np.isfinite(out).all():
        return out
    bound = float(np.abs(a.q).max()) * float(np.abs(a.k).max()) * a.q.shape[-1] * a.scale
    raise ValueError(f"finite q and k overflowed the scores in {np.dtype(dt).name}: "
                     f"max|q| x max|k| x d x scale = {bound:.3g} against a maximum of "
                     f"{float(np.finfo(dt).max):.3g}; scale q or k down, or pass float64 arrays")


def _check_sinks_leave_the_keys(keys_weight, a, dt):
    """keys_weight (hq, nq): each row's keys' softmax weights sum(exp(s_j - m)) against
    m = max(largest score, sink logit). Below the dtype's smallest normal number the sink has
    swamped every key: the row comes out 0 (or rounding noise) whatever v holds, a result that
    looks like one. Without a sink, or a sink below the row's largest score, it is >= 1."""
    tiny = np.finfo(dt).tiny
    swamped = keys_weight < tiny
    if not swamped.any():
        return
    h, i = (int(x) for x in np.argwhere(swamped)[0])
    name = np.dtype(dt).name
    raise ValueError(f"sink_logits[{h}] = {a.sink_logits[h]:g} swamps every key of query head "
                     f"{h}: at query {i} the keys' weights exp(score - sink) sum to "
                     f"{float(keys_weight[h, i]):.3g} (the sink's is 1), below {name}'s smallest "
                     f"normal number {float(tiny):.3g}, so that output row would be 0 (or "
                     f"rounding noise) whatever v holds; a sink logit may exceed a row's largest "
                     f"score by at most ln(1 / {float(tiny):.3g}) = {-np.log(tiny):.0f} in {name}")


def _work_dtype(*arrays):
    """float64 in, float64 out; everything else is computed in float32."""
    return np.float64 if any(a.dtype == np.float64 for a in arrays) else np.float32


def naive_attention(q, k, v, *, causal=False, window=None, sink_tokens=0, sink_logits=None,
                    scale=None):
    """Materialise the full (hq, nq, nk) score matrix S, softmax it into P, return P @ V:
    (hq, nq, dv), or (nq, dv) for 2-D inputs.

    Beyond the argument checks, a ``sink_logits`` entry the working dtype cannot hold, or one
    that swamps every key of a row (the keys' weights sum below the dtype's smallest normal
    number, so the row would come out 0), is a ValueError naming ``sink_logits``, the head and
    the query. A score matrix (or a per-head copy of k or v, or the output) past 2^31 entries is
    refused before allocating, naming the arguments and the bytes: ``tiled_attention`` computes
    the same one tile at a time."""
    a = _validate(q, k, v, causal, window, sink_tokens, sink_logits, scale)
    dt = _work_dtype(a.q, a.k, a.v)
    (hq, nq, d), nk, dv = a.q.shape, a.k.shape[1], a.v.shape[-1]
    size = np.dtype(dt).itemsize
    for subject, entries in (
            (f"q and k: the score matrix hq x nq x nk = {hq:,} x {nq:,} x {nk:,}", hq * nq * nk),
            (f"q and k: k per query head, hq x nk x d = {hq:,} x {nk:,} x {d:,}", hq * nk * d),
            (f"q and v: v per query head, hq x nk x dv = {hq:,} x {nk:,} x {dv:,}", hq * nk * dv),
            (f"q and v: the output hq x nq x dv = {hq:,} x {nq:,} x {dv:,}", hq * nq * dv)):
        _check_entries(subject, entries, size, np.dtype(dt).name, "naive_attention",
                       "tiled_attention computes the same one tile at a time")
    kv_of_head = np.arange(a.q.shape[0]) // a.group
    k_h, v_h = a.k[kv_of_head].astype(dt), a.v[kv_of_head].astype(dt)  # (hq, nk, d), a copy
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked on the output
        S = np.matmul(a.q.astype(dt), k_h.transpose(0, 2, 1)) * dt(a.scale)  # (hq, nq, nk)
        nq, nk = S.shape[1:]
        S = np.where(attention_mask(nq, nk, causal=causal, window=window,
                                    sink_tokens=sink_tokens), S, -np.inf)
        m = S.max(axis=-1, keepdims=True)  # every row sees its own position: m is finite
        if a.sink_logits is not None:
            m = np.maximum(m, a.sink_logits.astype(dt)[:, None, None])
        P = np.exp(S - m)
        denom = P.sum(axis=-1, keepdims=True)
        keys_weight = denom[..., 0]  # (hq, nq): what is left to the keys (>= 1 without a sink)
        if a.sink_logits is not None:
            denom = denom + np.exp(a.sink_logits.astype(dt)[:, None, None] - m)
        out = np.matmul(P / denom, v_h)
    out = _check_finite_output(out, a, dt)
    if a.sink_logits is not None:
        _check_sinks_leave_the_keys(keys_weight, a, dt)
    return out[0] if a.squeeze else out


def key_blocks(q_lo, q_hi, nk, block_k, *, causal=False, window=None, sink_tokens=0):
    """Start indices of the key blocks that queries at positions q_lo..q_hi-1 must visit, sorted
    (0 <= q_lo < q_hi).

    A block is skipped when the mask hides it from every query of the block: after the
    diagonal (causal) or entirely before the window and past the sink tokens.
    """
    nk, block_k = positive_int("nk", nk), positive_int("block_k", block_k)
    q_lo = non_negative_int("q_lo", q_lo)
    q_hi = check.integer("q_hi", q_hi, minimum=q_lo + 1)  # queries q_lo..q_hi-1: at least one
    _check_mask_args(causal, window, sink_tokens)
    last = nk if not causal else min(nk, q_hi)  # keys j <= p <= q_hi - 1
    first = 0 if window is None else max(0, q_lo - window + 1)  # p - j < W for some p
    blocks = range((first // block_k) * block_k, last, block_k)
    sinks = range(0, min(sink_tokens, last), block_k) if window is not None else range(0)
    if len(blocks) + len(sinks) > _MAX_ENTRIES:  # (tiled_attention calls this once per unit)
        _check_entries(f"nk and block_k: the key blocks to visit ({nk:,} keys in blocks of "
                       f"{block_k:,})", len(blocks) + len(sinks), 36, "a list of Python ints",
                       "key_blocks", "raise block_k")
    starts = set(blocks)
    if window is not None and sink_tokens > 0:  # the sink blocks, always kept
        starts.update(sinks)
    return sorted(starts)


def _tile_fully_visible(q_lo, q_hi, j0, j1, causal, window, sink_tokens):
    """True when every (query, key) pair of the tile is visible: no mask needed. Key bounds
    j0, j1 may be arrays (one tile per element of a query block's row): one answer each."""
    causal_ok = np.logical_or(not causal, np.asarray(j1) - 1 <= q_lo)
    if window is None:
        return causal_ok
    return causal_ok & (((q_hi - 1) - np.asarray(j0) < window) | (np.asarray(j1) <= sink_tokens))


# ------------------------------------------------------------------ what a tile, a cell is
# The one set of tile codes: the numpy plan (block_map), the Triton kernel's plan and record
# (kernel_plan, triton_attention.kernel_tile_map) and every figure of them use these.
TILE_SKIPPED = 0
"""Tile code 0: a tile never visited, the mask hides every pair of it."""
TILE_MASKED = 1
"""Tile code 1: a tile visited with the mask applied (diagonal, window edge, sinks, ragged end)."""
TILE_FULL = 2
"""Tile code 2: a tile visited without a mask, every key visible to every query of it."""

# The codes of one (query, key) cell of a causal mask with a window and sinks (mask_codes).
MASK_HIDDEN = 0
"""Cell code 0: the query cannot see the key."""
MASK_WINDOW = 1
"""Cell code 1: the key is inside the query's window (or its causal range, without a window)."""
MASK_SINK = 2
"""Cell code 2: outside the window, seen only because the key is one of the first
``sink_tokens`` keys."""


def block_map(n, block, *, causal=True):
    """int8 (T, T), T = ceil(n / block): what ``tiled_attention`` does with each (query block,
    key block) tile of n queries over n keys with block_q = block_k = block.

    TILE_SKIPPED where ``key_blocks`` leaves the key block out, TILE_FULL where the mask hides
    nothing inside the tile (no mask is applied: under the causal mask, the tile's last key is
    at or before its first query), TILE_MASKED otherwise. A ragged last block is classified by
    its real rows and keys only.
    """
    n, block = positive_int("n", n), positive_int("block", block)
    causal = check.flag("causal", causal)
    t = -(-n // block)
    _check_entries(f"n and block: T x T tiles, T = ceil(n / block) = ceil({n:,} / {block:,}) = "
                   f"{t:,}", t * t, 1, "int8", "block_map", "raise block")
    codes = np.full((t, t), TILE_SKIPPED, dtype=np.int8)  # 16 KiB at T = 128
    for i, q_lo in enumerate(range(0, n, block)):
        q_hi = min(q_lo + block, n)  # queries q_lo..q_hi-1 sit at positions q_lo..q_hi-1
        j0 = np.array(key_blocks(q_lo, q_hi, n, block, causal=causal))  # visited key blocks
        full = _tile_fully_visible(q_lo, q_hi, j0, np.minimum(j0 + block, n), causal, None, 0)
        codes[i, j0 // block] = np.where(full, TILE_FULL, TILE_MASKED)
    return codes


def mask_codes(n, window, sink_tokens):
    """int8 (n, n): each (query p, key j) cell of the causal mask over n tokens with window
    ``window`` (None: no window) and the first ``sink_tokens`` keys kept, classified:
    MASK_WINDOW where the window (or causality alone) shows the key, MASK_SINK where only the
    sink rule does, MASK_HIDDEN where the query cannot see it (``attention_mask`` is False)."""
    n = positive_int("n", n)
    _check_mask_args(True, window, sink_tokens)
    _check_entries(f"n x n = {n:,} x {n:,}", n * n, 1, "int8", "mask_codes",
                   "draw fewer tokens")
    visible = attention_mask(n, n, causal=True, window=window, sink_tokens=sink_tokens)
    in_window = attention_mask(n, n, causal=True, window=window)  # (n, n)
    codes = np.full((n, n), MASK_HIDDEN, dtype=np.int8)
    codes[visible] = MASK_SINK
    codes[in_window] = MASK_WINDOW
    return codes


_ALIGN_BYTES = 64  # a cache line, and at least what malloc gives a fresh array


def _aligned(n_items, itemsize):
    """n_items rounded up to a whole number of _ALIGN_BYTES."""
    per = _ALIGN_BYTES // itemsize
    return -(-n_items // per) * per


def _scratch(rows, block_k, dv, dt):
    """Flat, 64-byte aligned scratch for one thread's units: the P @ V product (rows x dv), then
    one score tile (rows x block_k), each starting on a 64-byte boundary."""
    itemsize = np.dtype(dt).itemsize
    size = _aligned(rows * dv, itemsize) + rows * block_k
    buf = np.empty(size + _ALIGN_BYTES // itemsize, dtype=dt)
    start = (-buf.ctypes.data % _ALIGN_BYTES) // itemsize
    return buf[start:start + size]


def _tiled_unit(q, k, v, sinks, scale, q_lo, causal, window, sink_tokens, block_k, out, work,
                keys_weight=None):
    """One unit of work: one KV head with its whole query group, over one query block.

    q (g, bq, d): the g query heads that read this KV head, rows q_lo..q_lo+bq-1 (positions);
    k (nk, d), v (nk, dv): the KV head; sinks (g,) or None; out (g, bq, dv) is written once;
    work: this thread's flat scratch (_scratch), so that the tile and the P @ V product are
    not allocated (and first touched) per tile: the same numpy calls on the same shapes as with
    fresh arrays, hence the same bits. keys_weight (g, bq), with sinks: receives l * alpha, the
    keys' share of the denominator against the sink (checked by the caller).
    The shapes of every numpy call here follow from (g, bq, d, nk, dv, block_k) alone.
    """
    g, bq, d = q.shape
    nk, dv, dt = k.shape[0], v.shape[-1], out.dtype.type
    q_hi, rows = q_lo + bq, g * bq
    # The g query heads share the K block: stack their rows, one (g*bq, d) @ (d, bk) matmul.
    qb = (q.astype(dt, copy=False) * dt(scale)).reshape(rows, d)
    m = np.full(rows, -np.inf, dtype=dt)  # running max: no score seen yet
    l = np.zeros(rows, dtype=dt)  # running denominator: empty sum
    acc = np.zeros((rows, dv), dtype=dt)  # running numerator
    pv = work[:rows * dv].reshape(rows, dv)  # (g*bq, dv): this tile's P @ V
    s0 = _aligned(rows * dv, work.itemsize)  # where the tile starts, 64-byte aligned
    for j0 in key_blocks(q_lo, q_hi, nk, block_k, causal=causal, window=window,
                         sink_tokens=sink_tokens):
        j1 = min(j0 + block_k, nk)
        bk = j1 - j0
        s = work[s0:s0 + rows * bk].reshape(rows, bk)  # C-contiguous, like a fresh array
        np.matmul(qb, k[j0:j1].T, out=s)  # (g*bq, bk): the one tile
        if not _tile_fully_visible(q_lo, q_hi, j0, j1, causal, window, sink_tokens):
            hidden = ~_visible(np.arange(q_lo, q_hi)[:, None], np.arange(j0, j1)[None, :],
                               causal, window, sink_tokens)  # (bq, bk), the same for all g heads
            np.copyto(s.reshape(g, bq, bk), -np.inf, where=hidden)
        m_new = np.maximum(m, s.max(axis=-1))
        m_ref = np.where(m_new == -np.inf, 0, m_new)  # a row with nothing visible yet
        alpha = np.exp(m - m_ref)  # rescale what was accumulated against the old max
        np.subtract(s, m_ref[:, None], out=s)
        np.exp(s, out=s)  # the tile now holds p = exp(s - m_new), in place
        l = l * alpha + s.sum(axis=-1)
        acc *= alpha[:, None]
        acc += np.matmul(s, v[j0:j1], out=pv)
        m = m_new
    if sinks is not None:  # the learned sink joins the denominator, no value vector
        sink = np.repeat(sinks, bq)  # (g*bq,)
        m_new = np.maximum(m, sink)
        alpha = np.exp(m - m_new)
        acc *= alpha[:, None]
        kept = l * alpha  # the keys' weights against the sink's max (l * alpha + ... as before)
        keys_weight[...] = kept.reshape(g, bq)
        l = kept + np.exp(sink - m_new)
    out[...] = (acc / l[:, None]).reshape(g, bq, -1)


@lru_cache(maxsize=1)
def _threadpools():
    from threadpoolctl import ThreadpoolController
    return ThreadpoolController()


def _blas_threads(n):
    """Limit BLAS to n threads inside the block. A tile's matmuls are small; left at its default,
    OpenBLAS wakes its own threads for each call and busy-waits for them, on top of ours
    (measured on 2 busy cores: 20x slower)."""
    return _threadpools().limit(limits=n, user_api="blas")


def tiled_attention(q, k, v, *, causal=False, window=None, sink_tokens=0, sink_logits=None,
                    scale=None, block_q=DEFAULT_BLOCK_Q, block_k=DEFAULT_BLOCK_K, threads=None):
    """FlashAttention in numpy: the same result as naive_attention (to float32 tolerance)
    without the n x n matrix (FlashAttention-2, Algorithm 1).

    Works on one (query block x key block) tile at a time, keeps m, l, acc per query row, and
    skips key blocks the mask hides completely (``key_blocks``). Any positive block sizes work;
    the lengths need not be multiples of them. ``threads``, when given, is an int >= 1. Errors
    as ``naive_attention``'s, the 2^31-entry bound applying to each thread's scratch and the
    output.

    The unit of work is fixed by the problem alone, as in the Triton grid: one KV head with its
    whole query group (g query heads stacked, g * block_q rows) over one query block. ``threads``
    (default: the CPU count) only schedules those units over a thread pool, since numpy's
    elementwise work runs on one core; BLAS runs one thread inside. Every unit makes the same
    numpy calls on the same shapes whatever ``threads`` is, so the output is bitwise independent
    of ``threads`` on every CPU and BLAS (BLAS kernels and summation orders are picked by shape).
    Each thread holds one (g * block_q) x block_k score tile, reused by all the units it runs.
    """
    a = _validate(q, k, v, causal, window, sink_tokens, sink_logits, scale)
    block_q, block_k = positive_int("block_q", block_q), positive_int("block_k", block_k)
    threads = (os.cpu_count() or 1) if threads is None else positive_int("threads", threads)
    dt = _work_dtype(a.q, a.k, a.v)
    hq, nq, d = a.q.shape
    hkv, g = a.k.shape[0], a.group
    nk, dv = a.k.shape[1], a.v.shape[-1]
    size = np.dtype(dt).itemsize
    rows, bk = g * min(block_q, nq), min(block_k, nk)
    _check_entries(f"block_q and block_k: each thread's scratch, (g x block_q) x (dv + block_k) "
                   f"= ({g:,} x {min(block_q, nq):,}) x ({dv:,} + {bk:,})",
                   _aligned(rows * dv, size) + rows * bk, size, np.dtype(dt).name,
                   "tiled_attention", "lower block_q or block_k")
    _check_entries(f"q and v: the output hq x nq x dv = {hq:,} x {nq:,} x {dv:,}", hq * nq * dv,
                   size, np.dtype(dt).name, "tiled_attention", "ask for fewer queries or heads")
    qg = a.q.reshape(hkv, g, nq, d)  # query head h = kv * g + i reads KV head kv
    k, v = a.k.astype(dt, copy=False), a.v.astype(dt, copy=False)
    sinks = None if a.sink_logits is None else a.sink_logits.astype(dt).reshape(hkv, g)
    out = np.empty((hkv, g, nq, dv), dtype=dt)
    keys_weight = None if sinks is None else np.empty((hkv, g, nq), dtype=dt)
    offset = nk - nq  # query i sits at position offset + i

    # Last query blocks first: under a causal mask they visit the most key blocks, so a pool
    # that hands out units in this order ends with the short ones (scheduling only).
    units = [(kv, i0) for i0 in reversed(range(0, nq, block_q)) for kv in range(hkv)]

    # Each thread's scratch: one score tile and one P @ V product, reused by all its units.
    scratch = threading.local()

    def run(unit):
        kv, i0 = unit
        i1 = min(i0 + block_q, nq)
        if not hasattr(scratch, "work"):
            scratch.work = _scratch(g * min(block_q, nq), min(block_k, nk), dv, dt)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: checked on the output
            _tiled_unit(qg[kv, :, i0:i1], k[kv], v[kv], None if sinks is None else sinks[kv],
                        a.scale, offset + i0, causal, window, sink_tokens, block_k,
                        out[kv, :, i0:i1], scratch.work,
                        None if sinks is None else keys_weight[kv, :, i0:i1])

    workers = min(threads, len(units))
    with _blas_threads(1):  # tiles are small matmuls: our threads, not BLAS's, use the cores
        if workers == 1:
            for unit in units:
                run(unit)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(run, units))
    out = _check_finite_output(out.reshape(hq, nq, -1), a, dt)
    if sinks is not None:
        _check_sinks_leave_the_keys(keys_weight.reshape(hq, nq), a, dt)
    return out[0] if a.squeeze else out
