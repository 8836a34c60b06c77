"""lessonlib.kv_cache: every number of Examples 5-8, 10 and 16 and of the hybrid-cache text,
recomputed from the texts' inputs, and each engine's rule against a per-layer loop."""
import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib import kv_cache as kc
from lessonlib.attention import naive_attention
from lessonlib.configs import load_config

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3


def llama3_8b_shape(kv_heads):
    """Example 6's Llama-3-8B shape: 32 layers, 32 query heads of 128, F16 cache."""
    return {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": kv_heads,
            "hidden_size": 4096}


def half_up(x, places=2):
    """Format like Java's printf: a tie (38.125) rounds up; Python's f-string rounds to even."""
    return str(Decimal(repr(x)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def pad(x, to):
    return (x + to - 1) // to * to


# --------------------------------------------------------------------------- bytes per token

def test_llama3_8b_128_kib_per_token_and_16_gib_at_128k():
    cfg = load_config("Llama-3.1-8B")  # same attention shape as Llama 3 8B
    per_token = 2 * 32 * 8 * 128 * 2  # K and V, layers, KV heads, head dim, F16
    assert kc.kv_bytes_per_token(cfg) == per_token == 128 * KIB
    for engine in kc.ENGINES:  # no window: every engine holds all 131,072 tokens
        size = kc.kv_cache_bytes(cfg, 131072, engine=engine)
        assert size.total_bytes == per_token * 131072 == 16 * GIB
        assert size.sliding_layers.n_layers == 0 and size.global_layers.n_layers == 32


@pytest.mark.parametrize("kv_heads, per_token, gib_32k", [(32, 524288, 16.0), (8, 131072, 4.0),
                                                          (1, 16384, 0.5)])
def test_mha_gqa_mqa_at_32k(kv_heads, per_token, gib_32k):
    cfg = llama3_8b_shape(kv_heads)
    assert kc.kv_bytes_per_token(cfg) == 2 * 32 * kv_heads * 128 * 2 == per_token
    size = kc.kv_cache_bytes(cfg, 32768, engine="ideal")
    assert size.total_gib == gib_32k
    assert f"{size.total_gib:5.2f}" == f"{gib_32k:5.2f}"


def test_deepseek_v3_mla_70272_bytes_and_8_58_gib_and_71_1x_less_than_mha():
    cfg = load_config("DeepSeek-V3")
    mla = 61 * (512 + 64) * 2  # layers x (kv_lora_rank + qk_rope_head_dim) x BF16
    assert kc.kv_bytes_per_token(cfg) == mla == 70272
    size = kc.kv_cache_bytes(cfg, 131072, engine="ideal")
    assert size.total_bytes == mla * 131072
    assert f"{size.total_gib:.2f}" == "8.58"

    mha_cfg = {k: v for k, v in cfg.items() if k != "kv_lora_rank"}  # the same model as MHA
    mha = 61 * 128 * ((128 + 64) + 128) * 2
    assert kc.kv_bytes_per_token(mha_cfg) == mha == 4997120
    assert f"{mha * 131072 / GIB:.2f}" == "610.00"
    assert f"{kc.kv_bytes_per_token(mha_cfg) / kc.kv_bytes_per_token(cfg):.1f}" == "71.1"
    gqa8 = dict(mha_cfg, num_key_value_heads=8)
    assert kc.kv_bytes_per_token(gqa8) == 61 * 8 * 320 * 2 == 312320
    gqa8_gib = kc.kv_cache_bytes(gqa8, 131072, engine="ideal").total_gib
    assert gqa8_gib == 312320 / 8192 == 38.125  # Java's %.2f rounds half up: "38.13"
    assert half_up(gqa8_gib) == "38.13"
    # about half of Llama 3 8B's 131,072 bytes per token, for a 671B model
    assert kc.kv_bytes_per_token(cfg) / kc.kv_bytes_per_token(load_config("Llama-3.1-8B")) < 0.54


def test_bytes_per_token_reads_head_dim_or_derives_it_and_honours_dtype():
    phi = load_config("Phi-3.5-mini-instruct")  # no head_dim key: 3072 / 32 = 96
    assert kc.kv_bytes_per_token(phi) == 2 * 32 * 32 * (3072 // 32) * 2
    gemma = load_config("Gemma-3-27B")  # head_dim 128 given (hidden 5376 / 32 would be 168)
    assert kc.kv_bytes_per_token(gemma) == 2 * 62 * 16 * 128 * 2
    assert kc.kv_bytes_per_token(gemma, dtype_bytes=1) * 2 == kc.kv_bytes_per_token(gemma)
    nested = {"text_config": {"num_hidden_layers": 2, "num_key_value_heads": 1, "head_dim": 4}}
    assert kc.kv_bytes_per_token(nested) == 2 * 2 * 1 * 4 * 2
    mha_default = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 32}
    assert kc.kv_bytes_per_token(mha_default) == 2 * 2 * 4 * 8 * 2  # kv heads default to heads


# --------------------------------------------------------------------------- layer patterns

def test_llamacpp_swa_pattern_6_reads_LLLLLG():
    assert "".join("L" if x else "G" for x in kc.swa_pattern(6, 12)) == "LLLLLGLLLLLG"
    assert not kc.swa_pattern(1, 4).any()  # n = 1: il % 1 < 0 never holds


def test_gemma3_layer_types_agree_with_the_llamacpp_rule():
    cfg = load_config("Gemma-3-27B")  # carries both layer_types and sliding_window_pattern
    from_types = kc.layer_windows(cfg)
    from_pattern = kc.layer_windows({k: v for k, v in cfg.items() if k != "layer_types"})
    assert from_types == from_pattern
    assert from_types == [1024 if il % 6 < 5 else None for il in range(62)]


def test_gpt_oss_layer_types_are_llamacpp_pattern_2():
    windows = kc.layer_windows(load_config("gpt-oss-20b"))  # gpt-oss files use pattern 2
    assert [w is not None for w in windows] == kc.swa_pattern(2, 24).tolist()


@pytest.mark.parametrize("name, n_sliding, window", [
    ("gpt-oss-20b", 12, 128),  # alternating layer_types
    ("Mistral-7B", 32, 4096),  # v0.1: every layer windowed
    ("Qwen2.5-7B-Instruct", 0, None),  # use_sliding_window: false
    ("Llama-3.1-8B", 0, None),
    ("DeepSeek-V3", 0, None),
    ("tiny-gemma3-swa", 5, 128),
    ("Llama-3-8B-hybrid-3to1", 24, 4096),
])
def test_layer_windows_of_real_configs(name, n_sliding, window):
    windows = kc.layer_windows(load_config(name))
    assert sum(w is not None for w in windows) == n_sliding
    assert {w for w in windows if w is not None} == ({window} if window else set())


def test_qwen2_max_window_layers_rule():
    cfg = dict(load_config("Qwen2.5-7B-Instruct"), use_sliding_window=True, max_window_layers=20,
               sliding_window=4096)
    assert kc.layer_windows(cfg) == [None] * 20 + [4096] * 8


# --------------------------------------------------------------------------- llama.cpp (Example 10)

def test_tiny_gemma3_logs():
    cfg = load_config("tiny-gemma3-swa")
    per_cell = 2 * 32 * 2 * 2  # KV heads x dims x (K, V) x F16 = 256 bytes per cell per layer
    assert kc.kv_bytes_per_token_per_layer(cfg) == per_cell == 256
    for n_ubatch, cells, local_mib in [(512, 768, "0.94"), (64, 256, "0.31")]:
        size = kc.kv_cache_bytes(cfg, 32768, n_ubatch=n_ubatch)
        g, s = size.global_layers, size.sliding_layers
        assert (g.n_layers, g.cells, f"{g.mib:.2f}") == (1, 32768, "8.00")
        assert (s.n_layers, s.cells) == (5, pad(min(32768, 128 + n_ubatch), 256)) == (5, cells)
        assert s.bytes == 5 * cells * per_cell and f"{s.mib:.2f}" == local_mib
        assert f"{s.mib / 2:.2f}" == {512: "0.47", 64: "0.16"}[n_ubatch]  # K (f16) = V (f16)
    full = kc.kv_cache_bytes(cfg, 32768, swa_full=True).sliding_layers
    assert (full.cells, f"{full.mib:.2f}") == (32768, "40.00")


def test_62_layer_model_10_61_gib_vs_62_gib():
    text_inputs = {"num_hidden_layers": 62, "num_key_value_heads": 16, "head_dim": 128,
                   "sliding_window": 1024, "sliding_window_pattern": 6}
    per_cell = 2 * 16 * 128 * 2
    n_global = sum(1 for il in range(62) if not il % 6 < 5)
    cells = pad(min(131072, 1024 + 512), 256)
    expected = n_global * 131072 * per_cell + (62 - n_global) * cells * per_cell
    for cfg in (text_inputs, load_config("Gemma-3-27B")):
        size = kc.kv_cache_bytes(cfg, 131072)
        assert (size.global_layers.n_layers, size.sliding_layers.n_layers) == (10, 52)
        assert size.sliding_layers.cells == cells == 1536
        assert size.total_bytes == expected
        assert (f"{size.global_layers.gib:.2f}", f"{size.sliding_layers.gib:.2f}",
                f"{size.total_gib:.2f}") == ("10.00", "0.61", "10.61")
        assert f"{kc.kv_cache_bytes(cfg, 131072, swa_full=True).total_gib:.2f}" == "62.00"


def test_llamacpp_swa_cells_n_seq_and_clamp():
    assert kc.llamacpp_swa_cells(32768, 128, n_seq=4, n_ubatch=512) == pad(4 * 128 + 512, 256)
    assert kc.llamacpp_swa_cells(300, 4096) == 512  # min(n_ctx, ...) then the 256 padding


# ---------------------------------------------------------------- vLLM and ideal (hybrid 3:1)

def test_hybrid_3_to_1_is_4_375_gib_against_16_gib():
    cfg = load_config("Llama-3-8B-hybrid-3to1")
    per_token_layer = 2 * 8 * 128 * 2  # 4 KiB
    expected = 8 * 131072 * per_token_layer + 24 * 4096 * per_token_layer
    ideal = kc.kv_cache_bytes(cfg, 131072, engine="ideal")
    assert ideal.total_bytes == expected and ideal.total_gib == 4.375
    assert f"{ideal.global_layers.gib:.0f} GiB" == "4 GiB" and ideal.sliding_layers.mib == 384
    uniform = kc.kv_cache_bytes(cfg, 131072, engine="vllm", swa_full=True)  # manager disabled
    assert uniform.total_gib == 16
    assert f"{uniform.total_bytes / ideal.total_bytes:.2f}" == "3.66"


def test_vllm_257_vs_8192_blocks():
    cfg = load_config("Llama-3-8B-hybrid-3to1")
    size = kc.kv_cache_bytes(cfg, 131072, engine="vllm", block_size=16)
    assert size.sliding_layers.blocks == math.ceil(4095 / 16) + 1 == 257
    assert size.global_layers.blocks == math.ceil(131072 / 16) == 8192
    assert size.sliding_layers.cells == 257 * 16
    # blocks cost a little more than exact tokens: 24 layers x 16 extra slots x 4 KiB
    ideal = kc.kv_cache_bytes(cfg, 131072, engine="ideal")
    assert size.total_bytes - ideal.total_bytes == 24 * (257 * 16 - 4096) * 4096


def test_vllm_in_flight_and_extra_retained_tokens():
    assert kc.vllm_sliding_blocks(131072, 4096, 16, max_in_flight_tokens=2048) == \
        math.ceil((4095 + 2048) / 16) + 1
    assert kc.vllm_sliding_blocks(131072, 4096, 16, extra_retained_tokens=3) == \
        math.ceil(4098 / 16) + 1
    assert kc.vllm_sliding_blocks(1000, 4096, 16) == math.ceil(1000 / 16) + 1  # max_model_len caps
    assert kc.vllm_sliding_blocks(100, 4, 4) == 2  # the comment's example: [XXCD][EF]
    # W - 1 tokens behind the query: a window of 17 at block 16 needs 1 + 1 blocks, not 2 + 1
    assert kc.vllm_sliding_blocks(100, 17, 16) == 2 and kc.vllm_sliding_blocks(100, 18, 16) == 3


layer_cfgs = st.builds(
    lambda L, h, d, W, n, mode: {
        "num_hidden_layers": L, "num_key_value_heads": h, "head_dim": d,
        **({"sliding_window": W, "sliding_window_pattern": min(n, L)} if mode == "pattern" else
           {"sliding_window": W} if mode == "all" else {})},
    st.integers(1, 40), st.integers(1, 8), st.sampled_from([16, 64, 128]),
    st.integers(1, 5000), st.integers(1, 8), st.sampled_from(["pattern", "all", "none"]))


def per_layer_reference(cfg, n_ctx, engine, n_seq, n_ubatch, block_size, swa_full):
    """Layer by layer, the way the engines' sources state it."""
    L, per_cell = cfg["num_hidden_layers"], 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * 2
    n = cfg.get("sliding_window_pattern")
    W = cfg.get("sliding_window")
    total = 0
    for il in range(L):
        local = W is not None and (il % n < n - 1 if n else True)
        if engine == "llama.cpp":
            cells = pad(min(n_ctx, W * n_seq + n_ubatch), 256) if local and not swa_full else n_ctx
        elif engine == "vllm":
            blocks = (math.ceil(min(W - 1, n_ctx) / block_size) + 1 if local and not swa_full
                      else math.ceil(n_ctx / block_size))
            cells = n_seq * blocks * block_size
        else:
            cells = n_seq * (min(n_ctx, W) if local and not swa_full else n_ctx)
        total += cells * per_cell
    return total


@given(layer_cfgs, st.integers(1, 200000), st.sampled_from(sorted(kc.ENGINES)),
       st.integers(1, 4), st.integers(1, 2048), st.sampled_from([1, 16, 32]), st.booleans())
def test_engine_rules_match_a_per_layer_loop(cfg, n_ctx, engine, n_seq, n_ubatch, block_size,
                                             swa_full):
    size = kc.kv_cache_bytes(cfg, n_ctx, engine=engine, n_seq=n_seq, n_ubatch=n_ubatch,
                             block_size=block_size, swa_full=swa_full)
    assert size.total_bytes == per_layer_reference(cfg, n_ctx, engine, n_seq, n_ubatch,
                                                   block_size, swa_full)
    assert size.global_layers.n_layers + size.sliding_layers.n_layers == cfg["num_hidden_layers"]
    # one sequence: every engine holds at least the tokens attention needs (llama.cpp's n_ctx
    # is shared by all sequences, vLLM's and ideal's is per sequence, so compare at n_seq = 1)
    one = kc.kv_cache_bytes(cfg, n_ctx, engine=engine, n_ubatch=n_ubatch, block_size=block_size,
                            swa_full=swa_full)
    ideal = kc.kv_cache_bytes(cfg, n_ctx, engine="ideal", swa_full=swa_full)
    everything = kc.kv_cache_bytes(cfg, n_ctx, engine="ideal", swa_full=True)
    assert ideal.total_bytes <= one.total_bytes
    assert ideal.total_bytes <= everything.total_bytes
    # (llama.cpp's 256-cell padding and vLLM's "+ 1" block may exceed a tiny context)
    if swa_full and engine != "vllm":  # --swa-full: every layer holds all n_ctx cells
        assert one.total_bytes == everything.total_bytes


# --------------------------------------------------------------------------- Example 5

LOGGED_MIB = {128: (74.44, 288.69), 512: (297.75, 1154.76)}  # the lesson's log: fa on, fa off


@pytest.mark.parametrize("ub, scores_mib, logits_mib, off_minus_scores", [
    (128, "256.00", "74.19", "32.69"), (512, "1024.00", "296.75", "130.76")])
def test_example5_score_matrix_and_logits(ub, scores_mib, logits_mib, off_minus_scores):
    cfg = load_config("tiny-random-qwen2vocab")
    on = kc.llamacpp_compute_buffer(cfg, 65536, ub, flash_attn=True)
    off = kc.llamacpp_compute_buffer(cfg, 65536, ub, flash_attn=False)
    assert off.scores_bytes == ub * 65536 * 8 * 4 and on.scores_bytes == 0
    assert on.logits_bytes == off.logits_bytes == ub * 151936 * 4
    assert f"{off.scores_bytes / MIB:.2f}" == scores_mib
    assert f"{on.logits_bytes / MIB:.2f}" == logits_mib
    fa_on, fa_off = LOGGED_MIB[ub]
    assert f"{fa_off - off.scores_bytes / MIB:.2f}" == off_minus_scores
    # fa on: the logits plus under 1.1 MiB of per-thread workspace
    assert 0 < fa_on - on.estimate_bytes / MIB < 1.1
    # fa off: scores + the F32 KQ mask (ub x n_ctx x 4) explain the buffer to within 0.3%
    assert off.mask_bytes == ub * 65536 * 4
    assert abs(off.estimate_bytes / MIB - fa_off) / fa_off < 0.003
    assert off.estimate_bytes < fa_off * MIB and on.estimate_bytes < fa_on * MIB


def test_example5_fa_off_nearly_four_times_at_ub_512():
    fa_on, fa_off = LOGGED_MIB[512]
    cfg = load_config("tiny-random-qwen2vocab")
    ratio = (kc.llamacpp_compute_buffer(cfg, 65536, 512, flash_attn=False).estimate_bytes
             / kc.llamacpp_compute_buffer(cfg, 65536, 512, flash_attn=True).estimate_bytes)
    assert 3.5 < fa_off / fa_on < 4 and 3.5 < ratio < 4


# --------------------------------------------------------------------------- GQA and MLA

def test_gqa_head_map_of_the_tiny_model():
    mapping = kc.gqa_head_map(8, 2)
    assert " ".join(f"{h}->{k}" for h, k in enumerate(mapping)) == \
        "0->0 1->0 2->0 3->0 4->1 5->1 6->1 7->1"


@given(st.integers(1, 8), st.integers(1, 6))
def test_gqa_groups_are_contiguous_and_equal(hkv, group):
    hq = hkv * group
    mapping = kc.gqa_head_map(hq, hkv)
    assert np.array_equal(np.bincount(mapping, minlength=hkv), np.full(hkv, group))
    assert np.all(np.diff(mapping) >= 0)
    assert all(kc.gqa_kv_head(h, hq, hkv) == h * hkv // hq for h in range(hq))


def test_gqa_map_agrees_with_attention_on_repeated_heads():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(8, 5, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 4))
    mapping = kc.gqa_head_map(8, 2)
    shared = naive_attention(q, k, v, causal=True)
    copied = naive_attention(q, k[mapping], v[mapping], causal=True)  # MHA with copied KV heads
    np.testing.assert_allclose(shared, copied, rtol=1e-12)


def test_gqa_bad_arguments_name_them():
    with pytest.raises(ValueError, match="hkv"):
        kc.gqa_head_map(8, 3)
    with pytest.raises(ValueError, match="h must"):
        kc.gqa_kv_head(8, 8, 2)


@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 5), st.integers(1, 7),
       st.integers(0, 2 ** 31))
def test_mla_absorption_identity(heads, head_dim, latent, n_tokens, seed):
    rng = np.random.default_rng(seed)
    W_UK = rng.normal(size=(heads, head_dim, latent))
    q, c = rng.normal(size=(heads, head_dim)), rng.normal(size=(n_tokens, latent))
    direct = np.array([[q[h] @ (W_UK[h] @ c[t]) for t in range(n_tokens)] for h in range(heads)])
    np.testing.assert_allclose(kc.mla_scores_direct(q, W_UK, c), direct, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kc.mla_scores_absorbed(q, W_UK, c), direct, rtol=1e-10, atol=1e-12)
    assert kc.mla_absorb_query(q, W_UK).shape == (heads, latent)  # the query now scores c directly


def test_mla_example7_shapes_cache_2_floats_instead_of_12():
    rng = np.random.default_rng(7)
    d_model, latent, head_dim, heads = 8, 2, 3, 2
    W_DKV = rng.normal(size=(latent, d_model))
    c = W_DKV @ rng.normal(size=d_model)  # the only thing MLA caches
    W_UK, q = rng.normal(size=(heads, head_dim, latent)), rng.normal(size=(heads, head_dim))
    np.testing.assert_allclose(kc.mla_scores_absorbed(q, W_UK, c), kc.mla_scores_direct(q, W_UK, c))
    assert (c.size, heads * head_dim * 2) == (2, 12)
    with pytest.raises(ValueError, match="q must"):
        kc.mla_scores_direct(q[:, :2], W_UK, c)


# --------------------------------------------------------------------------- bad configs

BASE = {"num_hidden_layers": 6, "num_key_value_heads": 2, "head_dim": 32}


@pytest.mark.parametrize("cfg, key", [
    ({"num_key_value_heads": 2, "head_dim": 32}, "num_hidden_layers"),
    (dict(BASE, num_hidden_layers=0), "num_hidden_layers"),
    (dict(BASE, sliding_window_pattern=6), "sliding_window"),  # a pattern, but no window size
    (dict(BASE, layer_types=["sliding_attention"] * 6), "sliding_window"),
    (dict(BASE, layer_types=["sliding_attention"] * 6, sliding_window=None), "sliding_window"),
    (dict(BASE, sliding_window=0), "sliding_window"),
    (dict(BASE, sliding_window=128, sliding_window_pattern=8), "sliding_window_pattern"),
    (dict(BASE, sliding_window=128, layer_types=["full_attention"] * 7), "layer_types"),
    (dict(BASE, sliding_window=128, layer_types=["chunked_attention"] * 6), "layer_types"),
    ({"num_hidden_layers": 6, "num_key_value_heads": 2}, "head_dim"),
    ({"num_hidden_layers": 6, "head_dim": 32}, "num_key_value_heads"),
    ({"num_hidden_layers": 6, "num_attention_heads": 5, "hidden_size": 32}, "hidden_size"),
    ({"num_hidden_layers": 61, "kv_lora_rank": 512}, "qk_rope_head_dim"),
    (dict(BASE, num_key_value_heads=2.5), "num_key_value_heads"),
])
def test_bad_configs_raise_naming_the_key(cfg, key):
    with pytest.raises(ValueError, match=key):
        kc.kv_cache_bytes(cfg, 4096)


def test_bad_arguments_raise_naming_them():
    cfg = load_config("tiny-gemma3-swa")
    for kwargs, name in [({"engine": "sglang"}, "engine"), ({"n_seq": 0}, "n_seq"),
                         ({"n_ubatch": -1}, "n_ubatch"), ({"block_size": 0}, "block_size"),
                         ({"dtype_bytes": 0}, "dtype_bytes"),
                         ({"max_in_flight_tokens": -1}, "max_in_flight_tokens")]:
        with pytest.raises(ValueError, match=name):
            kc.kv_cache_bytes(cfg, 4096, **kwargs)
    with pytest.raises(ValueError, match="n_ctx"):
        kc.kv_cache_bytes(cfg, 0)
    with pytest.raises(ValueError, match="config must be a dict"):
        kc.kv_bytes_per_token("Llama-3.1-8B")


@pytest.mark.parametrize("h", [1.5, True, -1, 8, "3"])
def test_gqa_kv_head_wants_an_integer_head_in_range(h):
    """gqa_kv_head(1.5, 8, 2) used to return KV head 0.0."""
    with pytest.raises(ValueError, match="h must be"):
        kc.gqa_kv_head(h, 8, 2)
    assert kc.gqa_kv_head(np.int64(7), 8, 2) == 1
