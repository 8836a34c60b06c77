"""Reference solutions for notebooks/01_attention_memory.ipynb (for instructors, not students).

Each value is worked from the question's inputs the way a student would, by the formula;
tests/test_checks_attention.py proves every check accepts it. Exercise 4 is a function: the
notebook's cell passes it to its check (``checks.attention.compute_buffer(compute_buffer)``),
which tries it on many configs and settings against lessonlib's estimate. It comes first in this
file so that its solution cell carries no values of the other exercises.
"""


def compute_buffer(config, n_ctx, ub, flash_attn):
    """Exercise 4 (going deeper): lessonlib's estimate of llama.cpp's compute buffer, in bytes.
    The logits and the unfused scores are never alive together (the allocator frees the last
    layer's scores and mask before the output projection runs), so the buffer holds the larger
    of the two peaks, not their sum."""
    logits = ub * config["vocab_size"] * 4                     # F32, one row per query
    if flash_attn:                                             # FLASH_ATTN_EXT: no score slice
        return logits
    scores = ub * n_ctx * config["num_attention_heads"] * 4    # every QUERY head, F32
    mask = ub * n_ctx * 4                                      # one F32 mask for all heads
    return max(logits, scores + mask)


GIB, MIB = 2 ** 30, 2 ** 20

# Exercise 1: one layer's FP32 score matrix at n = 16,384 with 40 query heads (a 40-layer model).
# n x n scores per head, 40 heads, 4 bytes: 16384^2 * 40 * 4 = 40 * 2^30 bytes = 40 GiB.
n, heads = 16384, 40
score_matrix_gib = n * n * heads * 4 / GIB

# Exercise 2: attention's share of prefill FLOPs at n = 65,536 (Llama 3.1 8B shape, causal).
n, params, layers, q_dim = 65536, 8.03e9, 32, 4096
weights = 2 * params * n                      # 2 FLOPs per parameter per token
attention = 2 * n * n * q_dim * layers        # Q K^T + P V = 4 n^2 q_dim per layer, halved
attention_share = attention / (weights + attention)   # about 0.517: past the crossover

# Exercise 3 (going deeper): llama.cpp -c 65536 -ub 256 -fa off on the tiny model (8 query
# heads, 2 KV heads). The scores are per QUERY head: 256 x 65,536 x 8 heads x 4 bytes = 512 MiB.
unfused_scores_mib = 256 * 65536 * 8 * 4 / MIB
