"""Reference solutions for notebooks/06_sliding_windows_and_sinks.ipynb (for instructors).

Each value is worked from the question's inputs by the rule the notebook teaches;
tests/test_checks_windows.py proves every check accepts it.
"""
MIB = 2 ** 20

# Exercise 1: Mistral-7B-v0.1, 32 layers, every one windowed with W = 4096. One layer carries
# information W - 1 positions back (the window includes the query itself); 32 layers add up.
receptive_field_tokens = 32 * (4096 - 1)  # 131,040 (not the often quoted 32 x 4096 = 131,072)

# Exercise 3 (going deeper, llama.cpp's cells): tiny Gemma 3 model (n_swa = 128), -c 32768,
# 2 sequences sharing the cells (--kv-unified), -ub 800:
# GGML_PAD(min(n_ctx, n_swa x n_seq + n_ubatch), 256).
cells = min(32768, 128 * 2 + 800)      # 1,056
swa_cells = -(-cells // 256) * 256     # 1,280

# Exercise 4 (going deeper, vLLM's blocks): gpt-oss-20b (12 sliding layers, W = 128, 8 KV
# heads x 64, BF16), one request, block size 16. SlidingWindowSpec: cdiv(W - 1, 16) + 1 =
# 8 + 1 = 9 blocks per layer.
blocks = -(-(128 - 1) // 16) + 1
bytes_per_slot = 2 * 8 * 64 * 2        # K and V, 8 KV heads, head_dim 64, 2 bytes = 2,048
sliding_layers_mib = 12 * blocks * 16 * bytes_per_slot / MIB  # 3.375 MiB

# Exercise 2: a StreamingLLM cache after tokens 0..n-1 arrived (4 sinks, 8 recent, n = 20:
# the sinks 0..3 stay, the 8 newest are 12..19). Before it is full nothing is evicted; with
# no sinks it is a plain window. RoPE gets the slot indices, not the original positions.
def streaming_cache(n_sink, n_recent, n):
    sinks = list(range(min(n_sink, n)))
    recent = list(range(max(n_sink, n - n_recent), n))  # never a sink twice
    positions = sinks + recent
    return positions, list(range(len(positions)))


# Exercise 5 (going deeper, context shift): llama-server's cache after n tokens with -c n_ctx
# --keep n_keep --context-shift (token 0 is the BOS). Before a token goes in, a cache already
# holding n_ctx - 1 tokens keeps BOS + --keep (never more than n_ctx - 4), drops half of the
# rest, rounded down, and closes the gap; the new token then goes in at the end.
def context_shift(n, n_ctx, n_keep):
    keep = min(n_ctx - 4, n_keep + 1)
    n_discard = (n_ctx - 1 - keep) // 2
    held = []
    for token in range(n):
        if len(held) == n_ctx - 1:
            del held[keep:keep + n_discard]
        held.append(token)
    return held
