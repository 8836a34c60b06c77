"""Reference solutions for notebooks/05_kv_cache.ipynb (for instructors, not students).

Each value is worked from the question's inputs the way a student would, by the formula;
tests/test_checks_kv_cache.py proves every check accepts it.
"""
GIB = 2 ** 30

# Exercise 1: Qwen2.5-7B-Instruct's cache for one 32,768-token sequence, F16.
# config.json: 28 layers, 28 query heads, 4 KV heads, hidden 3584 -> head_dim 3584 / 28 = 128.
# Per token: 2 (K and V) x 28 layers x 4 KV heads x 128 x 2 bytes = 57,344 bytes (56 KiB).
layers, kv_heads, head_dim, n = 28, 4, 3584 // 28, 32768
kv_cache_gib = 2 * layers * kv_heads * head_dim * 2 * n / GIB  # 1.75 GiB

# Exercise 4 (going deeper, MLA): DeepSeek-V3's MLA cache at its full 163,840-token context, BF16.
# One latent (kv_lora_rank 512) plus the shared RoPE key (qk_rope_head_dim 64) per layer,
# no separate V, 61 layers: 576 x 61 x 2 = 70,272 bytes per token.
mla_cache_gib = (512 + 64) * 61 * 2 * 163840 / GIB  # 10.72 GiB

# Exercise 3 (going deeper, the head map): Llama 3.1 8B, 32 query heads and 8 KV heads: groups
# of 32 / 8 = 4 neighbours.
kv_head_map = [h // (32 // 8) for h in range(32)]  # [0, 0, 0, 0, 1, 1, 1, 1, ..., 7]

# Exercise 5 (going deeper, what llama.cpp allocates): Qwen2.5-7B-Instruct at -c 5000
# -ctk q8_0 -ctv q8_0 -fa on (flash attention on, so V is quantized too).
# llama.cpp rounds -c up to a multiple of 256: 5,120 cells. A cell holds 2 x 28 x 4 x 128 =
# 28,672 numbers (K and V, every layer), and q8_0 stores 32 numbers in 34 bytes.
cells = -(-5000 // 256) * 256  # 5,120
llamacpp_cache_mib = cells * 2 * 28 * 4 * 128 * 34 / 32 / 2 ** 20  # 148.75 MiB


# Exercise 2: bytes per token for any config.json, F16 / BF16 (2 bytes a number).
def bytes_per_token(config):
    if "num_hidden_layers" not in config and "text_config" in config:
        config = config["text_config"]  # multimodal: the language model's keys
    layers = config["num_hidden_layers"]
    if config.get("kv_lora_rank") is not None:  # MLA: one latent + the shared RoPE key, no V
        return layers * (config["kv_lora_rank"] + config["qk_rope_head_dim"]) * 2
    kv_heads = config.get("num_key_value_heads")
    if kv_heads is None:  # absent or null: MHA, one KV head per query head
        kv_heads = config["num_attention_heads"]
    head_dim = config.get("head_dim")
    if head_dim is None:  # the key wins; only without it is d_h the division
        head_dim = config["hidden_size"] // config["num_attention_heads"]
    return 2 * layers * kv_heads * head_dim * 2  # K and V, every layer, 2 bytes a number
