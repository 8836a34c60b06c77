"""Counting what attention costs: score-matrix sizes, memory traffic, long-context FLOPs.

Examples 1, 4 and 16 of the lesson. Traffic is counted in floats moved between slow memory
(HBM, the "warehouse") and fast memory (SRAM, the "workbench"):

    naive  reads Q, K (2 n d), S for the softmax (n^2), P and V (n^2 + n d);
           writes S, P (2 n^2) and O (n d)
    tiled  reads each query block once (n d) and, per query block, the K and V blocks it
           visits (2 d per key row); writes only O (n d)

The tiled count walks the same key-block plan as ``attention.tiled_attention``, so causal and
window skipping show up in the numbers.
"""
from dataclasses import dataclass

from . import _validate as check
from ._validate import positive_int
from .attention import key_blocks

__all__ = ["Traffic", "naive_traffic", "tiled_traffic", "traffic_ratio_table",
           "score_matrix_table", "score_slice_bytes", "ScoreMatrixRow", "long_context_cost",
           "CostRow", "GIB", "MIB"]

GIB = 1024 ** 3
MIB = 1024 ** 2


@dataclass(frozen=True)
class Traffic:
    """Floats read from and written to slow memory by one head's attention."""
    reads: int
    writes: int

    @property
    def total(self):
        return self.reads + self.writes


def naive_traffic(n, d):
    """Example 4's count for naive attention of n queries and n keys, head dim d."""
    n, d = positive_int("n", n), positive_int("d", d)
    reads = 2 * n * d + n * n + (n * n + n * d)  # Q and K; S for the softmax; P and V
    writes = n * n + n * n + n * d  # S, P, O
    return Traffic(reads, writes)


def tiled_traffic(n, d, block_q, block_k=None, *, causal=False, window=None, sink_tokens=0):
    """Example 4's count for tiled attention: the K/V rows each query block actually visits.

    ``block_k`` defaults to ``block_q`` (the lesson's square tiles). Lengths need not be block
    multiples; blocks that the mask hides completely are not read.
    """
    n, d = positive_int("n", n), positive_int("d", d)
    block_q = positive_int("block_q", block_q)
    block_k = block_q if block_k is None else positive_int("block_k", block_k)
    causal = check.flag("causal", causal)
    window = None if window is None else check.integer("window", window, minimum=1)
    sink_tokens = check.integer("sink_tokens", sink_tokens, minimum=0)
    reads = n * d  # every query block is loaded once
    if not causal and window is None:  # no mask: every query block reads all of K and V
        return Traffic(reads + -(-n // block_q) * 2 * n * d, n * d)
    for i0 in range(0, n, block_q):
        i1 = min(i0 + block_q, n)
        for j0 in key_blocks(i0, i1, n, block_k, causal=causal, window=window,
                             sink_tokens=sink_tokens):
            reads += 2 * (min(j0 + block_k, n) - j0) * d  # a K block and a V block
    return Traffic(reads, n * d)  # only O is written


def _items(name, values):
    """``values`` (a list, tuple or 1-D array) as a list; anything else is an error naming it."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} must be a list of values, got {check.describe(values)}")
    try:
        return list(values)
    except TypeError:  # a 0-d array
        raise ValueError(f"{name} must be a list of values, got {check.describe(values)}") from None


def _lengths(lengths):
    """Context lengths, each an int >= 1, a bad one named as ``lengths[i]``."""
    return [positive_int(f"lengths[{i}]", n) for i, n in enumerate(_items("lengths", lengths))]


def traffic_ratio_table(cases, d=128):
    """Per-head floats moved, naive vs tiled, for (n, block) cases (Example 4's bottom table).

    Returns dicts with n, block, naive, tiled, ratio (about 2B/d), score_buffer (n^2 floats)
    and tile (B^2 floats).
    """
    d = positive_int("d", d)
    rows = []
    for i, case in enumerate(_items("cases", cases)):
        if isinstance(case, (str, bytes, dict)) or not hasattr(case, "__len__") or len(case) != 2:
            raise ValueError(f"cases[{i}] must be an (n, block) pair, got {check.describe(case)}")
        n, block = positive_int(f"n of cases[{i}]", case[0]), \
            positive_int(f"block of cases[{i}]", case[1])
        naive, tiled = naive_traffic(n, d).total, tiled_traffic(n, d, block).total
        rows.append(dict(n=n, block=block, naive=naive, tiled=tiled, ratio=naive / tiled,
                         score_buffer=n * n, tile=block * block))
    return rows


@dataclass(frozen=True)
class ScoreMatrixRow:
    """Example 1: one context length's score matrix for every head of a layer."""
    n: int
    scores_per_head: int
    layer_bytes: int  # S for all heads of one layer
    traffic_bytes: int  # write S, read S, write P, read P
    model_traffic_bytes: int  # traffic_bytes x layers


def score_matrix_table(lengths, *, heads=32, layers=32, bytes_per_score=4):
    """Example 1's table (defaults: a Llama-3-8B shape with FP32 scores)."""
    heads, layers = positive_int("heads", heads), positive_int("layers", layers)
    bytes_per_score = positive_int("bytes_per_score", bytes_per_score)
    rows = []
    for n in _lengths(lengths):
        layer = n * n * heads * bytes_per_score
        rows.append(ScoreMatrixRow(n, n * n, layer, 4 * layer, 4 * layer * layers))
    return rows


def score_slice_bytes(n_queries, n_keys, *, heads=32, bytes_per_score=4):
    """Bytes of the score matrix for a slice of queries (a -ub micro-batch, or 1 for decode)."""
    return (positive_int("n_queries", n_queries) * positive_int("n_keys", n_keys)
            * positive_int("heads", heads) * positive_int("bytes_per_score", bytes_per_score))


@dataclass(frozen=True)
class CostRow:
    """Example 16: prefill compute and KV-cache size at one context length."""
    n: int
    weight_flops: float  # 2 FLOPs per parameter per token
    attention_flops: float  # Q K^T and P V
    kv_bytes: int  # the whole cache, read by every decode step

    @property
    def attention_share(self):
        return self.attention_flops / (self.weight_flops + self.attention_flops)

    @property
    def total_flops(self):
        return self.weight_flops + self.attention_flops


def long_context_cost(lengths, *, params, layers, q_dim, kv_bytes_per_token, causal=True):
    """Example 16's table: prefill FLOPs (weights vs attention) and KV bytes per length.

    Attention: Q K^T and P V cost 2 n^2 q_dim FLOPs each per layer without a mask; the causal
    mask halves both, leaving 2 n^2 q_dim per layer.
    """
    params = check.real("params", params, above=0)
    layers, q_dim = positive_int("layers", layers), positive_int("q_dim", q_dim)
    kv_bytes_per_token = positive_int("kv_bytes_per_token", kv_bytes_per_token)
    causal = check.flag("causal", causal)
    rows = []
    for n in _lengths(lengths):
        attention = 2 * (2.0 * n * n * q_dim) * layers  # two matmuls, 2 n^2 q_dim each
        if causal:
            attention /= 2
        rows.append(CostRow(n, 2.0 * params * n, attention, kv_bytes_per_token * n))
    return rows
