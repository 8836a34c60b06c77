"""Reference solutions for notebooks/03_tiled_attention.ipynb (for instructors, not students)."""
import math

# Exercise 1: reads of tiled attention, n = 100, d = 8, B = 16, no mask.
# Queries once (n d = 800) plus, for each of ceil(100 / 16) = 7 query blocks, all K and V rows
# (2 n d = 1,600): 800 + 7 x 1,600 = 12,000.
n, d, B = 100, 8, 16
tiled_reads = n * d + math.ceil(n / B) * 2 * n * d

# Exercise 2: causal, n = 300, B = 64: ceil(300 / 64) = 5 blocks (the last holds 44 rows).
# Tile (i, j) is hidden when its first key j B comes after its last query i B + B - 1, i.e.
# j > i. The diagonal runs with a mask.
causal_skipped_blocks = {(i, j) for i in range(5) for j in range(5) if j > i}

# Exercise 3: naive / tiled floats at n = 4096, d = 128, B = 32 (exact counts).
n, d, B = 4096, 128, 32
naive = 4 * n * n + 4 * n * d          # S, P written and read twice; Q, K, V read; O written
tiled = n * d + math.ceil(n / B) * 2 * n * d + n * d  # Q once, K+V per query block, O once
small_block_ratio = naive / tiled                    # about 0.51: below B = d/2 tiling loses
