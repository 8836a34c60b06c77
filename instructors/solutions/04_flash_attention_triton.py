"""Reference solutions for notebooks/04_flash_attention_triton.ipynb (for instructors, not
students). Exercises 2 and 4 are functions: the notebook's cells pass them to
``checks.triton.program_tiles(tiles)`` and ``checks.triton.program_heads(program_heads)``; a
stub, which returns None, is "not attempted". Exercises 3 to 7 are in the going-deeper sections.
"""
import math

# Exercise 3 (going deeper: pointers): programs launched for q (2, 8, 1000, d) and k, v (2, 2,
# 1000, d) with BLOCK_M = BLOCK_N = 64. The grid is (cdiv(nq, BLOCK_M), b x hq): 1000 / 64 = 15.6,
# so 16 query blocks (the last holds 40 rows, masked), times 2 x 8 = 16 (batch, query head) pairs.
# The KV heads and the key blocks do not appear: each program loops over the key blocks itself.
grid_programs = math.ceil(1000 / 64) * 2 * 8  # 256


# Exercise 4 (going deeper: pointers): the "who am I?" lines. Axis 1 packs batch x query head
# with the head fastest; a GQA group is hq // hkv consecutive query heads sharing one KV head.
def program_heads(pid_bh, hq, hkv):
    b, h = divmod(pid_bh, hq)
    return b, h, h // (hq // hkv)


# Exercise 1: n = 1024, BLOCK_M = 128, BLOCK_N = 64, causal, W = 193, 4 sink tokens, pid_m = 5.
# Queries sit at positions 640..767. The first query's window reaches back to 640 - 193 + 1 =
# 448 = 7 x 64: the band starts at block 7. Causal: nothing after p_last = 767, block 11. The
# sink tokens 0..3 live in block 0, visited first. Blocks 1..6 hold no visible key: skipped.
visited_key_blocks = {0} | set(range(448 // 64, 767 // 64 + 1))  # {0, 7, 8, 9, 10, 11}

# Exercise 2, the build: one program's key blocks, split into the tiles that need the mask and the
# full ones (n queries over n keys, BLOCK_M = BLOCK_N = B, W = 0: no window). The kernel's loop
# bounds: a band [lo, hi) that some query can see, inside it [full_lo, full_hi) that every query
# sees whole by the causal and window rules, and the sink blocks before the band (with a window
# only; they always run masked). The band starts at the FIRST query's window, the full tiles at
# the LAST query's; causally the full tiles end at the first query and the band at the last.
def program_tiles(pid_m, n, B, causal, W, sinks):
    p_first = pid_m * B  # the program's first query ...
    p_last = min(p_first + B, n) - 1  # ... and its last real one (the last program is short)
    lo, hi = 0, n
    if causal:
        hi = p_last + 1
    if W:
        lo = max(p_first - W + 1, 0) // B * B  # the block holding p_first's oldest key
    full_lo, full_hi = lo, n // B * B  # a partial last block is never full
    if causal:
        full_hi = (p_first + 1) // B * B  # blocks every query sees: keys <= p_first
    if W:
        full_lo = -(-max(p_last - W + 1, 0) // B) * B  # ... and keys >= p_last - W + 1
    full_lo = min(max(full_lo, lo), hi)
    full_hi = max(min(full_hi, hi), full_lo)
    sink_hi = min(-(-sinks // B) * B, lo) if W else 0  # sink blocks the band does not cover

    def blocks(start, stop):  # key blocks holding keys start .. stop - 1
        return set(range(start // B, -(-stop // B))) if stop > start else set()

    masked = blocks(0, sink_hi) | blocks(lo, full_lo) | blocks(full_hi, hi)
    return sorted(masked), sorted(blocks(full_lo, full_hi))


# Exercise 5 (going deeper: the NaN guard): the worked example without sinks, n = 256, B = 32,
# causal, W = 80, program 6 (queries 192..223). Its first tile is the window-edge block 3, keys
# 96..127. Query p sees keys p - 79 .. p, so it sees none of them once p - 79 > 127: p = 207 ..
# 223, 17 rows whose m_new stays -inf after that tile (the guard shifts them by 0).
nan_guard_rows = sum(1 for p in range(192, 224) if p - 80 + 1 > 127)  # 17

# Exercise 6 (going deeper: the learned sink): m = 5, l = 3, acc = (6, -3), sink logit z = 6,
# m and l and z in log2 units. The sink is one more term in the denominator with no value:
# m_final = max(5, 6) = 6, alpha = 2^(5 - 6) = 0.5, l = 3 x 0.5 + 2^(6 - 6) = 2.5,
# acc = (3, -1.5), o = acc / l = (1.2, -0.6).
m, l, acc, z = 5.0, 3.0, (6.0, -3.0), 6.0
m_final = max(m, z)
alpha = 2.0 ** (m - m_final)
l_final = l * alpha + 2.0 ** (z - m_final)
sink_output = [a * alpha / l_final for a in acc]  # [1.2, -0.6]

# Exercise 7 (going deeper: vLLM's backends): an L4 (8.9) with heads of 64 and learned sinks:
# FlashAttention takes sinks only from 9.0, FlashInfer only through TensorRT-LLM kernels: Triton.
# A B200 (10.0), heads of 96: FlashInfer is tried first but takes 64, 128, 256, 512 only;
# FlashAttention takes 96. An A100 (8.0), heads of 512: FlashAttention stops at 256 there;
# FlashInfer takes 512.
vllm_backends = ["TRITON_ATTN", "FLASH_ATTN", "FLASHINFER"]
