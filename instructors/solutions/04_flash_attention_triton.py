"""Reference solutions for notebooks/04_flash_attention_triton.ipynb (for instructors, not
students). Exercise 2 is a function: the notebook's cell passes it to
``checks.triton.program_heads(program_heads)``; the stub, which returns None, is "not attempted".
"""
import math

# Exercise 1: programs launched for q (2, 8, 1000, d) and k, v (2, 2, 1000, d) with
# BLOCK_M = BLOCK_N = 64. The grid is (cdiv(nq, BLOCK_M), b x hq): 1000 / 64 = 15.6, so 16 query
# blocks (the last holds 40 rows, masked), times 2 x 8 = 16 (batch, query head) pairs. The KV
# heads and the key blocks do not appear: each program loops over the key blocks itself.
grid_programs = math.ceil(1000 / 64) * 2 * 8  # 256


# Exercise 2: the "who am I?" lines. Axis 1 packs batch x query head with the head fastest; a
# GQA group is hq // hkv consecutive query heads sharing one KV head.
def program_heads(pid_bh, hq, hkv):
    b, h = divmod(pid_bh, hq)
    return b, h, h // (hq // hkv)


# Exercise 3: n = 1024, BLOCK_M = 128, BLOCK_N = 64, causal, W = 193, 4 sink tokens, pid_m = 5.
# Queries sit at positions 640..767. The first query's window reaches back to 640 - 193 + 1 =
# 448 = 7 x 64: the band starts at block 7. Causal: nothing after p_last = 767, block 11. The
# sink tokens 0..3 live in block 0, visited first. Blocks 1..6 hold no visible key: skipped.
visited_key_blocks = {0} | set(range(448 // 64, 767 // 64 + 1))  # {0, 7, 8, 9, 10, 11}

# Exercise 4: m = 5, l = 3, acc = (6, -3), sink logit s = 6, all in log2 units. The sink is one
# more term in the denominator with no value: m_final = max(5, 6) = 6, alpha = 2^(5 - 6) = 0.5,
# l = 3 x 0.5 + 2^(6 - 6) = 2.5, acc = (3, -1.5), o = acc / l = (1.2, -0.6).
m, l, acc, s = 5.0, 3.0, (6.0, -3.0), 6.0
m_final = max(m, s)
alpha = 2.0 ** (m - m_final)
l_final = l * alpha + 2.0 ** (s - m_final)
sink_output = [a * alpha / l_final for a in acc]  # [1.2, -0.6]
