"""Reference solutions for notebooks/03_tiled_attention.ipynb (for instructors, not students).

Exercise 3 is a function: the notebook's cell passes it to its check
(``checks.attention.tiled_causal(tiled_causal)``), which tries it on many generated inputs
against naive attention. It comes first in this file so that its solution cell carries no
values of the other exercises. Exercises 4 and 5 are in the going-deeper sections.
"""
import math

import numpy as np


def tiled_causal(q, k, v, B):
    """Exercise 3: causal attention, tile by tile. q (nq, d), k (nk, d), v (nk, dv); query i
    sits at position nk - nq + i. Returns (out, tiles computed)."""
    nq, nk = len(q), len(k)
    offset = nk - nq
    out, tiles = np.empty((nq, v.shape[1])), 0
    for i0 in range(0, nq, B):
        i1 = min(i0 + B, nq)                          # a partial last block ends at nq
        p = offset + np.arange(i0, i1)                # the block's query positions
        qi = q[i0:i1] / np.sqrt(q.shape[1])
        m, l = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0)   # running max and denominator
        acc = np.zeros((i1 - i0, v.shape[1]))         # running numerator
        # Key blocks up to the one that holds the last query's position; later ones are hidden
        # from every query of the block. Block 0 comes first and every query sees key 0, so no
        # row has seen nothing when a later tile masks all of its keys.
        for j0 in range(0, min(nk, p[-1] + 1), B):
            j1 = min(j0 + B, nk)
            x = qi @ k[j0:j1].T                       # (rows, keys): the one tile
            x = np.where(np.arange(j0, j1)[None, :] <= p[:, None], x, -np.inf)  # j <= p
            m_new = np.maximum(m, x.max(axis=1))
            alpha, w = np.exp(m - m_new), np.exp(x - m_new[:, None])
            l, acc, m = l * alpha + w.sum(axis=1), acc * alpha[:, None] + w @ v[j0:j1], m_new
            tiles += 1
        out[i0:i1] = acc / l[:, None]
    return out, tiles


# Exercise 1: reads of tiled attention, n = 100, d = 8, B = 16, no mask.
# Queries once (n d = 800) plus, for each of ceil(100 / 16) = 7 query blocks, all K and V rows
# (2 n d = 1,600): 800 + 7 x 1,600 = 12,000.
n, d, B = 100, 8, 16
tiled_reads = n * d + math.ceil(n / B) * 2 * n * d

# Exercise 2: causal, n = 300, B = 64: ceil(300 / 64) = 5 blocks (the last holds 44 rows).
# Tile (i, j) is hidden when its first key j B comes after its last query i B + B - 1, i.e.
# j > i. The diagonal runs with a mask.
causal_skipped_blocks = {(i, j) for i in range(5) for j in range(5) if j > i}

# Exercise 4 (going deeper): naive / tiled floats at n = 4096, d = 128, B = 32 (exact counts).
n, d, B = 4096, 128, 32
naive = 4 * n * n + 4 * n * d          # S, P written and read twice; Q, K, V read; O written
tiled = n * d + math.ceil(n / B) * 2 * n * d + n * d  # Q once, K+V per query block, O once
small_block_ratio = naive / tiled                    # about 0.51: below B = d/2 tiling loses

# Exercise 5 (going deeper): FlashAttention's Algorithm 1 for one head, n = 10,000, d = 64 and an
# SRAM of M = 32,768 floats. B_c = ceil(M / 4d) = 128 key rows per block, so the queries are
# streamed past T_c = ceil(10,000 / 128) = 79 blocks (78.125: the last one partial).
# O = 0, l = 0, m = -inf written once (n d + 2 n); every K, V row loaded once (2 n d); per pass,
# Q_i, O_i, l_i, m_i loaded and O_i, l_i, m_i written back for each query row (3 d + 4).
n, d, M = 10000, 64, 32768
B_c = math.ceil(M / (4 * d))
flash_io_floats = (n * d + 2 * n) + 2 * n * d + math.ceil(n / B_c) * (3 * d + 4) * n  # 156,780,000
