"""lessonlib.kv_cache: every number notebooks 01, 05, 06 and 09 print about KV caches,
recomputed from the texts' inputs, and each engine's rule against a per-layer loop."""
import math
import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib import kv_cache as kc
from lessonlib.attention import naive_attention
from lessonlib.models.configs import load_config
from lessonlib.llamacpp import load_results

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3


GQA8_SHAPE = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
              "head_dim": 16}


def llama3_8b_shape(kv_heads):
    """Notebook 05's Llama-3-8B shape: 32 layers, 32 query heads of 128, F16 cache."""
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


# --------------------------------------------------------------------------- llama.cpp (notebook 06)

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
    # a running vLLM keeps blocks for the tokens in flight in every windowed layer: the saving
    # shrinks (notebook 06): 3.66x with none, 3.37x with 4,096 (24 GB), 2.72x with 16,384 (H100)
    ratios = [uniform.total_bytes / kc.kv_cache_bytes(cfg, 131072, engine="vllm",
                                                      max_in_flight_tokens=f).total_bytes
              for f in (0, 4096, 16384)]
    assert [f"{r:.2f}" for r in ratios] == ["3.66", "3.37", "2.72"]


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
        if engine == "llama.cpp":  # llama-context.cpp: n_ctx = GGML_PAD(n_ctx, 256) first
            c = pad(n_ctx, 256)
            cells = pad(min(c, W * n_seq + n_ubatch), 256) if local and not swa_full else c
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
    if swa_full and engine == "ideal":
        assert one.total_bytes == everything.total_bytes
    if swa_full and engine == "llama.cpp":  # --swa-full: every layer holds all pad(n_ctx) cells
        padded = kc.kv_cache_bytes(cfg, pad(n_ctx, 256), engine="ideal", swa_full=True)
        assert one.total_bytes == padded.total_bytes


# --------------------------------------------------------------------------- llama.cpp's own view

@pytest.mark.parametrize("name, local", [("Mistral-7B", 0), ("Qwen2.5-7B-Instruct", 0),
                                         ("Phi-3.5-mini-instruct", 0), ("Gemma-3-27B", 52),
                                         ("gpt-oss-20b", 12), ("Llama-3-8B-hybrid-3to1", 24)])
def test_llamacpp_layer_windows(name, local):
    """llama.cpp's loaders: llama (Mistral converts to it), qwen2 and phi3 run no window."""
    cfg = load_config(name)
    windows = kc.llamacpp_layer_windows(cfg)
    assert sum(w is not None for w in windows) == local
    if local:
        assert windows == kc.layer_windows(cfg)
    mistral = kc.kv_cache_bytes(load_config("Mistral-7B"), 32768)
    assert mistral.sliding_layers.n_layers == 0 and mistral.global_layers.cells == 32768
    # HF and vLLM do apply Mistral's window
    assert kc.kv_cache_bytes(load_config("Mistral-7B"), 32768, engine="vllm").sliding_layers.n_layers == 32


def test_llamacpp_pads_the_context_to_256():
    cfg = load_config("Llama-3.1-8B")
    for n_ctx, cells in [(1, 256), (1000, 1024), (4096, 4096), (35000, 35072)]:
        assert kc.kv_cache_bytes(cfg, n_ctx).global_layers.cells == cells
        assert kc.kv_cache_bytes(cfg, n_ctx, engine="ideal").global_layers.cells == n_ctx


@pytest.mark.parametrize("kv_type, per_layer", [("f16", 2048 * 2), ("bf16", 4096), ("f32", 8192),
                                                 ("q8_0", 2 * 1024 // 32 * 34),
                                                 ("q4_0", 2 * 1024 // 32 * 18), ("fp8", 2048)])
def test_kv_cell_bytes_is_ggml_row_size(kv_type, per_layer):
    """Llama-3.1-8B: K and V rows of 8 x 128 = 1,024 values; q8_0 stores 32 values in 34 bytes."""
    cfg = load_config("Llama-3.1-8B")
    assert kc.kv_cell_bytes(cfg, kv_type) == per_layer
    engine = "vllm" if kv_type == "fp8" else "llama.cpp"
    assert kc.kv_cache_bytes(cfg, 4096, kv_type=kv_type, engine=engine).total_bytes == \
        32 * 4096 * per_layer
    # MLA: one row of kv_lora_rank + qk_rope_head_dim = 576 values
    assert kc.kv_cell_bytes(load_config("DeepSeek-V3"), kv_type) == {
        "f16": 1152, "bf16": 1152, "f32": 2304, "q8_0": 576 // 32 * 34, "q4_0": 576 // 32 * 18,
        "fp8": 576}[kv_type]


def test_kv_type_errors():
    cfg = load_config("Llama-3.1-8B")
    with pytest.raises(ValueError, match="kv_type 'q8_0' is not a cache type of engine 'vllm'"):
        kc.kv_cache_bytes(cfg, 4096, engine="vllm", kv_type="q8_0")  # engine 'vllm' named
    with pytest.raises(ValueError, match="kv_type or dtype_bytes, not both"):
        kc.kv_cache_bytes(cfg, 4096, kv_type="f16", dtype_bytes=1)
    with pytest.raises(ValueError, match="not a multiple of q8_0's block of 32"):
        kc.kv_cell_bytes({"num_hidden_layers": 1, "num_key_value_heads": 1, "head_dim": 40}, "q8_0")


# --------------------------------------------------------------------------- compute buffer (notebook 01)

def _engine_compute_mib():
    """What llama.cpp reserved for the tiny model at -c 65536 (the committed results notebook 01
    prints; tests/test_llamacpp.py checks them against the engine): (ub, fa) -> MiB."""
    return {(r["n_ubatch"], r["flash_attn"]): r["mib"] for r in load_results()["compute"]
            if r["model"] == "tiny-random-qwen2vocab" and r["n_ctx"] == 65536}


def test_the_engine_ran_notebook_01s_four_settings():
    assert sorted(_engine_compute_mib()) == [(128, False), (128, True), (512, False), (512, True)]


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
    fa_on, fa_off = _engine_compute_mib()[ub, True], _engine_compute_mib()[ub, False]
    assert f"{fa_off - off.scores_bytes / MIB:.2f}" == off_minus_scores
    # fa off: scores + the F32 KQ mask (ub x n_ctx x 4) explain the buffer to within 0.3%
    assert off.mask_bytes == ub * 65536 * 4
    assert abs(off.estimate_bytes / MIB - fa_off) / fa_off < 0.003
    assert off.estimate_bytes < fa_off * MIB and on.estimate_bytes < fa_on * MIB


@pytest.mark.parametrize("ub", [128, 512])
@pytest.mark.parametrize("fa", [True, False])
def test_the_engine_reserves_one_hidden_state_per_token_above_the_bound(ub, fa):
    """Notebook 01: the tiny model's buffer is lessonlib's bound plus about 1 KiB (one 256-wide
    F32 hidden state) per micro-batch token, never less than the bound."""
    cfg = load_config("tiny-random-qwen2vocab")
    bound = kc.llamacpp_compute_phases(cfg, 65536, ub, flash_attn=fa).lower_bound_bytes
    per_token = (_engine_compute_mib()[ub, fa] * MIB - bound) / ub
    assert 0.95 * 256 * 4 < per_token < 1.05 * 256 * 4


def test_example5_fa_off_nearly_four_times_at_ub_512():
    engine = _engine_compute_mib()
    fa_on, fa_off = engine[512, True], engine[512, False]
    cfg = load_config("tiny-random-qwen2vocab")
    ratio = (kc.llamacpp_compute_buffer(cfg, 65536, 512, flash_attn=False).estimate_bytes
             / kc.llamacpp_compute_buffer(cfg, 65536, 512, flash_attn=True).estimate_bytes)
    assert 3.5 < fa_off / fa_on < 4 and 3.5 < ratio < 4


def test_compute_phases_of_llama_3_1_8b_by_hand():
    """-c 32768 -ub 512: fused, the F16 mask 32 MiB + Q 8 + output 8 + two hidden states 16;
    unfused, 2 GiB of scores + the F32 mask 64 MiB + Q, output, new K/V 4 and 16; SwiGLU 3 x
    ub x 14336 x 4 + 16; logits ub x 128,256 x 4 + 8. The logits are the fused lower bound."""
    cfg = load_config("Llama-3.1-8B")
    on = kc.llamacpp_compute_phases(cfg, 32768, 512, flash_attn=True)
    off = kc.llamacpp_compute_phases(cfg, 32768, 512, flash_attn=False)
    assert on.attention_bytes == (32 + 8 + 8 + 16) * MIB
    assert off.attention_bytes == (2048 + 64 + 8 + 8 + 4 + 16) * MIB
    assert on.ffn_bytes == off.ffn_bytes == 3 * 512 * 14336 * 4 + 16 * MIB
    assert on.output_bytes == 512 * (128256 + 4096) * 4
    assert on.lower_bound_bytes == on.output_bytes and off.lower_bound_bytes == off.attention_bytes
    assert kc.llamacpp_compute_phases(cfg, 32769, 512, flash_attn=True).attention_bytes \
        == on.attention_bytes + 512 * 256 * 2  # n_kv is the cache: -c rounded up to 256
    with pytest.raises(ValueError, match="num_local_experts"):
        kc.llamacpp_compute_phases(load_config("gpt-oss-20b"), 4096, 512, flash_attn=True)


def test_non_unified_caches_give_each_sequence_its_stream():
    """llama.cpp without --kv-unified: n_ctx_seq = pad(pad(c, 256) // n_seq, 256) cells per
    stream; windowed layers pad(min(n_ctx_seq, W + ub), 256) per stream (the engine agrees:
    tests/test_llamacpp.py)."""
    g = load_config("Gemma-3-27B")  # W = 1024, 10 global and 52 sliding layers
    split = kc.kv_cache_bytes(g, 4097, n_seq=3, n_ubatch=200, kv_unified=False)
    assert split.global_layers.cells == 3 * 1536  # 4352 // 3 = 1450 -> 1536
    assert split.sliding_layers.cells == 3 * 1280  # min(1536, 1024 + 200) -> 1280
    shared = kc.kv_cache_bytes(g, 4097, n_seq=3, n_ubatch=200)
    assert shared.global_layers.cells == 4352  # one stream of all the cells
    assert shared.sliding_layers.cells == 3328  # min(4352, 3 x 1024 + 200) -> 3328
    one = kc.kv_cache_bytes(g, 4097, n_ubatch=200, kv_unified=False)
    assert one == kc.kv_cache_bytes(g, 4097, n_ubatch=200)
    with pytest.raises(ValueError, match="kv_unified=False is llama.cpp's"):
        kc.kv_cache_bytes(g, 4096, engine="vllm", kv_unified=False)


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
    (dict(BASE, sliding_window=128, sliding_window_pattern=0), "sliding_window_pattern"),
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


# --------------------------------------------------------------------------- issue 13's examples

GQA8 = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16}


@pytest.mark.parametrize("kv_heads, says", [
    (3, "num_key_value_heads must divide num_attention_heads=8"),
    (16, "num_key_value_heads must be <= num_attention_heads=8"),
    (5, "must divide"), (0, "num_key_value_heads must be an integer >= 1"),
    (2.0, "num_key_value_heads must be an integer, got the float 2.0")])
def test_kv_heads_must_divide_the_query_heads(kv_heads, says):
    """3 or 16 KV heads for 8 query heads used to give a size. HuggingFace's repeat_kv copies
    each KV head num_attention_heads // num_key_value_heads times and vLLM's Attention asserts
    num_heads % num_kv_heads == 0: the groups must be whole."""
    cfg = dict(GQA8, num_key_value_heads=kv_heads)
    for f in (kc.kv_bytes_per_token, kc.kv_bytes_per_token_per_layer,
              lambda c: kc.kv_cache_bytes(c, 4096)):
        with pytest.raises(ValueError, match=says):
            f(cfg)
    for ok in (1, 2, 4, 8, None):  # None: MHA, as in HuggingFace
        assert kc.kv_bytes_per_token(dict(GQA8, num_key_value_heads=ok)) == \
            2 * 4 * (ok or 8) * 16 * 2


def test_flags_are_true_or_false_not_strings():
    """swa_full="no" meant full and flash_attn="off" meant on."""
    cfg = load_config("tiny-gemma3-swa")
    with pytest.raises(ValueError, match=r"^swa_full must be True or False, got 'no'"):
        kc.kv_cache_bytes(cfg, 4096, swa_full="no")
    tiny = load_config("tiny-random-qwen2vocab")
    with pytest.raises(ValueError, match=r"^flash_attn must be True or False, got 'off'"):
        kc.llamacpp_compute_buffer(tiny, 65536, 512, flash_attn="off")
    assert kc.llamacpp_compute_buffer(tiny, 65536, 512, flash_attn=np.False_).scores_bytes > 0
    with pytest.raises(ValueError, match=r"^engine must be one of 'llama.cpp', 'vllm', 'ideal'"):
        kc.kv_cache_bytes(cfg, 4096, engine="VLLM")
    with pytest.raises(ValueError, match=r"^engine must be one of"):
        kc.kv_cache_bytes(cfg, 4096, engine=["vllm"])  # was TypeError: unhashable type


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None, "False"])
def test_use_sliding_window_is_true_false_or_absent(value):
    """use_sliding_window "false" or 0 still applied the windows. HuggingFace's strict
    Qwen2Config refuses everything but a bool (null included)."""
    cfg = dict(load_config("Qwen2.5-7B-Instruct"), use_sliding_window=value, max_window_layers=20,
               sliding_window=4096)
    with pytest.raises(ValueError, match=r"^use_sliding_window must be True or False"):
        kc.layer_windows(cfg)
    assert kc.layer_windows(dict(cfg, use_sliding_window=False)) == [None] * 28
    assert kc.layer_windows(dict(cfg, use_sliding_window=True)) == [None] * 20 + [4096] * 8
    absent = {k: v for k, v in cfg.items() if k != "use_sliding_window"}
    assert kc.layer_windows(absent) == [4096] * 28  # no switch: sliding_window alone, every layer


def test_swa_pattern_and_layer_windows_agree_past_the_layer_count():
    """swa_pattern(10, 4) gave all-local while layer_windows rejected the same pattern. In
    llama.cpp (set_swa_pattern: il % n < n - 1) and in HuggingFace's Gemma3Config ((i + 1) % n)
    a pattern longer than the model makes every layer local: both here say so now."""
    assert kc.swa_pattern(10, 4).tolist() == [True] * 4
    cfg = {"num_hidden_layers": 4, "num_key_value_heads": 1, "head_dim": 4, "sliding_window": 8,
           "sliding_window_pattern": 10}
    assert kc.layer_windows(cfg) == [8] * 4
    for n in range(1, 12):
        windows = kc.layer_windows(dict(cfg, sliding_window_pattern=n))
        assert [w is not None for w in windows] == kc.swa_pattern(n, 4).tolist()
    # n = 0: llama.cpp's "all layers are SWA"; a config's pattern must be >= 1, as HuggingFace
    # divides by it ((i + 1) % 0 is a ZeroDivisionError there)
    assert kc.swa_pattern(0, 5).all()
    with pytest.raises(ValueError, match="sliding_window_pattern must be an integer >= 1"):
        kc.layer_windows(dict(cfg, sliding_window_pattern=0))
    with pytest.raises(ValueError, match="^n must be an integer >= 0"):
        kc.swa_pattern(-1, 4)


def test_max_window_layers_past_the_layer_count_leaves_none_windowed():
    """HuggingFace's Qwen2 rule, layer i windowed when i >= max_window_layers: a value past
    num_hidden_layers (Qwen2.5-3B ships 70 for 36 layers) windows nothing. Rejected before."""
    cfg = dict(load_config("Qwen2.5-7B-Instruct"), use_sliding_window=True, sliding_window=4096)
    assert kc.layer_windows(dict(cfg, max_window_layers=70)) == [None] * 28
    assert kc.layer_windows(dict(cfg, max_window_layers=0)) == [4096] * 28
    for bad in (-1, 2.5, "20", True):
        with pytest.raises(ValueError, match="max_window_layers must be an integer"):
            kc.layer_windows(dict(cfg, max_window_layers=bad))


@pytest.mark.parametrize("types, says", [
    ([["sliding_attention"]] * 6, "unsupported entries"),  # was TypeError: unhashable type
    ([None] * 6, "unsupported entries"), ([1] * 6, "unsupported entries"),
    ("sliding_attention", "must be a list"), (["sliding_attention"] * 5, "must list"),
    ({"0": "full_attention"}, "must be a list")])
def test_layer_types_entries_are_named(types, says):
    with pytest.raises(ValueError, match=f"layer_types.*{says}"):
        kc.layer_windows(dict(BASE, sliding_window=128, layer_types=types))


@pytest.mark.parametrize("key, value", [
    ("sliding_window", "4096"), ("sliding_window", 4096.0), ("sliding_window", True),
    ("sliding_window", 0), ("sliding_window_pattern", 6.0), ("sliding_window_pattern", "LLLG"),
    ("num_hidden_layers", 6.0)])
def test_window_keys_are_integers(key, value):
    cfg = {**BASE, "sliding_window": 128, "sliding_window_pattern": 6, key: value}
    with pytest.raises(ValueError, match=rf"^{key} must be an integer"):
        kc.layer_windows(cfg)
    # sliding_window is checked even where no layer reads it (HuggingFace's config types it)
    if key == "sliding_window":
        with pytest.raises(ValueError, match="^sliding_window must be"):
            kc.layer_windows(dict(BASE, use_sliding_window=False, sliding_window=value))


@pytest.mark.parametrize("call, name", [
    (lambda: kc.gqa_kv_head(1.5, 8, 2), "h"), (lambda: kc.gqa_kv_head(True, 8, 2), "h"),
    (lambda: kc.gqa_head_map(8, 16), "hkv"), (lambda: kc.gqa_head_map(8.0, 2), "hq"),
    (lambda: kc.gqa_head_map(8, 2.0), "hkv"),
    (lambda: kc.mla_absorb_query(np.ones((2, 3)), "W"), "W_UK"),  # was IndexError
    (lambda: kc.mla_absorb_query(np.ones((2, 3)), np.ones((2, 3))), "W_UK"),
    (lambda: kc.mla_scores_direct(np.ones((2, 3)), np.ones((2, 3, 4)), np.ones((5, 3))), "c"),
    (lambda: kc.mla_scores_direct(np.ones((2, 3)), np.ones((2, 3, 4)),
                                  np.full((5, 4), np.nan)), "c"),
    (lambda: kc.mla_scores_absorbed(np.ones((2, 2)), np.ones((2, 3, 4)), np.ones(4)), "q"),
    (lambda: kc.mla_scores_absorbed(np.ones((2, 3)) + 1j, np.ones((2, 3, 4)), np.ones(4)), "q"),
    (lambda: kc.llamacpp_swa_cells(32768, 128.0), "n_swa"),
    (lambda: kc.vllm_full_blocks(1000, 0), "block_size"),
    (lambda: kc.vllm_sliding_blocks(1000, 0), "sliding_window"),
    (lambda: kc.kv_bytes_per_token(GQA8, dtype_bytes=2.0), "dtype_bytes"),
    (lambda: kc.kv_bytes_per_token(GQA8, dtype_bytes=True), "dtype_bytes")])
def test_helpers_name_a_bad_argument(call, name):
    with pytest.raises(ValueError) as err:
        call()
    assert names_argument(str(err.value), name), str(err.value)


def test_gqa_head_map_is_what_it_was():
    for hq, hkv in [(8, 2), (32, 8), (4, 4), (7, 1)]:
        mapping = kc.gqa_head_map(hq, hkv)
        assert mapping.dtype == np.int64 and mapping.tolist() == \
            [kc.gqa_kv_head(h, hq, hkv) for h in range(hq)] == [h // (hq // hkv) for h in range(hq)]


# --------------------------------------------------------------------------- model shape

# Written from the published configs by hand (layers, query heads, KV heads, d_h, d_v, q_dim,
# kv_dim): Gemma gives head_dim 128 (its hidden 5376 / 32 would be 168), DeepSeek's keys are
# qk_nope 128 + qk_rope 64 wide and its values 128, Phi and Qwen derive d_h from hidden_size.
SHAPES = {
    "Llama-3.1-8B": (32, 32, 8, 128, 128, 4096, 1024),
    "Mistral-7B": (32, 32, 8, 128, 128, 4096, 1024),
    "Gemma-3-27B": (62, 32, 16, 128, 128, 4096, 2048),
    "DeepSeek-V3": (61, 128, 128, 192, 128, 24576, 24576),
    "Llama-3.2-1B": (16, 32, 8, 64, 64, 2048, 512),
    "Phi-3.5-mini-instruct": (32, 32, 32, 96, 96, 3072, 3072),
    "Qwen2.5-7B-Instruct": (28, 28, 4, 128, 128, 3584, 512),
}


@pytest.mark.parametrize("name", SHAPES)
def test_model_shape_of_real_configs(name):
    s = kc.model_shape(load_config(name))
    assert (s.layers, s.heads, s.kv_heads, s.head_dim, s.v_head_dim, s.q_dim, s.kv_dim) == \
        SHAPES[name]
    assert all(type(v) is int for v in (s.layers, s.heads, s.kv_heads, s.head_dim, s.q_dim))


@pytest.mark.parametrize("name", [n for n in SHAPES if n != "DeepSeek-V3"])
def test_model_shape_agrees_with_the_cache_it_sizes(name):
    """2 (K and V) x L x kv_dim x 2 bytes: the cache of the same shape, for every GQA model."""
    cfg = load_config(name)
    s = kc.model_shape(cfg)
    assert kc.kv_bytes_per_token(cfg) == 2 * s.layers * s.kv_dim * 2


def test_model_shape_is_frozen_and_reads_a_nested_text_config():
    shape = kc.model_shape({"text_config": load_config("Llama-3.1-8B")})
    assert shape == kc.model_shape(load_config("Llama-3.1-8B"))
    with pytest.raises(AttributeError):
        shape.heads = 8


@pytest.mark.parametrize("cfg, says", [
    (load_config("tiny-gemma3-swa"), "config is missing 'num_attention_heads'"),  # kv sizes fine
    (dict(GQA8_SHAPE, hidden_size=100, head_dim=None), "'hidden_size' 100 is not divisible"),
    (dict(GQA8_SHAPE, num_key_value_heads=3), "num_key_value_heads must divide"),
    (dict(GQA8_SHAPE, head_dim=0), "head_dim must be an integer >= 1"),
    (dict(GQA8_SHAPE, num_hidden_layers=2.0), "num_hidden_layers must be an integer"),
    ({k: v for k, v in GQA8_SHAPE.items() if k != "num_hidden_layers"},
     "config is missing 'num_hidden_layers'"),
])
def test_model_shape_refuses_what_compute_refuses(cfg, says):
    """The old widget copies read these silently (a KeyError, or d_h = 100 // 8 = 12)."""
    with pytest.raises(ValueError, match=re.escape(says)):
        kc.model_shape(cfg)


# --------------------------------------------------------------------------- bad inputs
# Every argument of kv_cache's public functions and every config key they read, fed what a
# careful user might pass by mistake: a ValueError naming it (tests/_bad.py).
from _bad import DELETE, Case, arrays_with, bad_input_tests, choices, flags, ints, texts, \
    names_argument  # noqa: E402

_SWA = {"num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 32, "sliding_window": 128, "sliding_window_pattern": 6}
_TYPES = {"num_hidden_layers": 4, "num_key_value_heads": 2, "head_dim": 8, "sliding_window": 16,
          "layer_types": ["sliding_attention", "full_attention"] * 2}
_QWEN = {"num_hidden_layers": 6, "num_key_value_heads": 2, "head_dim": 8, "sliding_window": 16,
         "use_sliding_window": True, "max_window_layers": 3}
_MLA = {"num_hidden_layers": 3, "kv_lora_rank": 16, "qk_rope_head_dim": 4}
_MHA_SHAPED = {"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
               "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8}
_NESTED = {"text_config": dict(GQA8)}
_TINY = load_config("tiny-random-qwen2vocab")

_CONFIG = st.sampled_from(["Llama-3.1-8B", None, 3, [GQA8]])
_HEADS = dict(config=_CONFIG,
              **{"config.num_hidden_layers": ints(minimum=1) | st.just(DELETE),
                 "config.num_key_value_heads": ints(minimum=1, none_ok=True)
                 | st.sampled_from([3, 5, 16]),
                 "config.num_attention_heads": ints(minimum=1, none_ok=True)
                 | st.sampled_from([1, 3, 7]),
                 "config.head_dim": ints(minimum=1) | st.just(DELETE)},
              dtype_bytes=ints(minimum=1))
_LAYERS = {"config.num_hidden_layers": ints(minimum=1) | st.just(DELETE),
           "config.sliding_window": ints(minimum=1) | st.just(DELETE),
           "config.use_sliding_window": flags()}
_BAD_TYPES = st.sampled_from([["sliding_attention"] * 3, ["chunked_attention"] * 4, [[1]] * 4,
                              [None] * 4, "sliding_attention", 4, {"a": 1}])
_RNG = np.random.default_rng(13)
_Wuk, _q, _c = _RNG.normal(size=(2, 3, 4)), _RNG.normal(size=(2, 3)), _RNG.normal(size=(5, 4))
_MLA_ARRAYS = dict(q=arrays_with(_q, kind="real", ranks=(2,)) | st.just(_q[:, :2]),
                   W_UK=arrays_with(_Wuk, kind="real", ranks=(3,))
                   | st.sampled_from([_Wuk[:, :2], _Wuk[:1], np.ones((2, 3, 0))]),
                   c=arrays_with(_c, kind="real", ranks=(1, 2)) | st.just(_c[:, :3]))

BAD_INPUTS = [
    Case(kc.kv_bytes_per_token, args=(GQA8,), bad=_HEADS),
    Case(kc.kv_bytes_per_token, args=(_NESTED,), id="kv_bytes_per_token[text_config]",
         bad={"config.text_config.num_key_value_heads": ints(minimum=1, none_ok=True)
              | st.sampled_from([3, 16]),
              "config.text_config.num_hidden_layers": ints(minimum=1) | st.just(DELETE)},
         names={"config.text_config.num_key_value_heads": "num_key_value_heads",
                "config.text_config.num_hidden_layers": "num_hidden_layers"}),
    Case(kc.kv_bytes_per_token_per_layer, args=(GQA8,),
         bad={k: v for k, v in _HEADS.items() if k != "config.num_hidden_layers"}),
    Case(kc.kv_bytes_per_token_per_layer, args=(_MLA,), id="kv_bytes_per_token_per_layer[MLA]",
         bad={"config.kv_lora_rank": ints(minimum=1, none_ok=True),
              "config.qk_rope_head_dim": ints(minimum=1) | st.just(DELETE),
              "dtype_bytes": ints(minimum=1)}),
    Case(kc.kv_bytes_per_token_per_layer, args=(_MHA_SHAPED,),
         id="kv_bytes_per_token_per_layer[MLA as MHA]",
         bad={"config.qk_nope_head_dim": ints(minimum=1, none_ok=True),  # None: plain MHA
              "config.qk_rope_head_dim": ints(minimum=1) | st.just(DELETE),
              "config.v_head_dim": ints(minimum=1) | st.just(DELETE),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True) | st.just(3)}),
    Case(kc.model_shape, args=(GQA8,),
         bad={"config": _CONFIG,
              "config.num_hidden_layers": ints(minimum=1) | st.just(DELETE),
              "config.num_attention_heads": ints(minimum=1) | st.sampled_from([1, 3, 7, DELETE]),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True)
              | st.sampled_from([3, 5, 16]),
              "config.head_dim": ints(minimum=1) | st.just(DELETE)}),
    Case(kc.model_shape, args=({"num_hidden_layers": 2, "num_attention_heads": 4,
                                "hidden_size": 64},), id="model_shape[hidden_size]",
         bad={"config.hidden_size": ints(minimum=1) | st.sampled_from([63, 66, DELETE]),
              "config.num_attention_heads": ints(minimum=1) | st.sampled_from([3, 5, DELETE])}),
    Case(kc.model_shape, args=(_MHA_SHAPED,), id="model_shape[MLA]",
         bad={"config.qk_nope_head_dim": ints(minimum=1, none_ok=True),  # None: plain MHA
              "config.qk_rope_head_dim": ints(minimum=1) | st.just(DELETE),
              "config.v_head_dim": ints(minimum=1) | st.just(DELETE)}),
    Case(kc.model_shape, args=(_NESTED,), id="model_shape[text_config]",
         bad={"config.text_config.num_attention_heads": ints(minimum=1) | st.just(DELETE)},
         names={"config.text_config.num_attention_heads": "num_attention_heads"}),
    Case(kc.swa_pattern, args=(6, 12), bad=dict(n=ints(minimum=0), n_layers=ints(minimum=1))),
    Case(kc.layer_windows, args=(_SWA,),
         bad=dict(config=_CONFIG, **_LAYERS,
                  **{"config.sliding_window_pattern": ints(minimum=1, none_ok=True)})),
    Case(kc.layer_windows, args=(_TYPES,), id="layer_windows[layer_types]",
         bad=dict(**_LAYERS, **{"config.layer_types": _BAD_TYPES})),
    Case(kc.layer_windows, args=(_QWEN,), id="layer_windows[max_window_layers]",
         bad=dict(**_LAYERS, **{"config.max_window_layers": ints(minimum=0, none_ok=True)})),
    Case(kc.kv_cache_bytes, args=(_SWA, 4096),
         kwargs=dict(engine="vllm", n_seq=2, n_ubatch=256, block_size=16, swa_full=False,
                     dtype_bytes=2, extra_retained_tokens=1, max_in_flight_tokens=64),
         bad=dict(config=_CONFIG, n_ctx=ints(minimum=1),
                  engine=choices(list(kc.ENGINES)) | st.sampled_from(["sglang", "llamacpp"]),
                  n_seq=ints(minimum=1), n_ubatch=ints(minimum=1), block_size=ints(minimum=1),
                  swa_full=flags(), dtype_bytes=ints(minimum=1),
                  extra_retained_tokens=ints(minimum=0), max_in_flight_tokens=ints(minimum=0),
                  **_LAYERS, **{"config.num_key_value_heads": ints(minimum=1, none_ok=True)
                                | st.sampled_from([3, 8])})),
    Case(kc.kv_cache_bytes, args=(_SWA, 4096), id="kv_cache_bytes[kv_type]",
         kwargs=dict(engine="llama.cpp", kv_type="q8_0"),
         bad=dict(kv_type=st.sampled_from(["q8", "F16", "fp16", "Q8_0", " f16", "", 2, True, ["f16"]]),
                  engine=st.sampled_from(["vllm"]))),
    Case(kc.kv_cache_bytes, args=(_SWA, 4097), id="kv_cache_bytes[kv_unified]",
         kwargs=dict(engine="llama.cpp", n_seq=3, kv_unified=False),
         bad=dict(kv_unified=flags(), engine=st.sampled_from(["vllm", "ideal"]))),
    Case(kc.kv_cell_bytes, args=(GQA8, "q8_0"),
         bad=dict(kv_type=choices(list(kc.KV_TYPES)) | st.sampled_from(["q8", "Q8_0"]),
                  **{"config.head_dim": ints(minimum=1) | st.sampled_from([40, 33])})),
    Case(kc.llamacpp_layer_windows, args=(_SWA,), bad=dict(config=_CONFIG, **_LAYERS)),
    Case(kc.llamacpp_swa_cells, args=(32768, 128), kwargs=dict(n_seq=2, n_ubatch=300),
         bad=dict(n_ctx=ints(minimum=1), n_swa=ints(minimum=1), n_seq=ints(minimum=1),
                  n_ubatch=ints(minimum=1))),
    Case(kc.vllm_full_blocks, args=(131072, 16),
         bad=dict(max_model_len=ints(minimum=1), block_size=ints(minimum=1))),
    Case(kc.vllm_sliding_blocks, args=(131072, 4096, 16),
         kwargs=dict(extra_retained_tokens=3, max_in_flight_tokens=2048),
         bad=dict(max_model_len=ints(minimum=1), sliding_window=ints(minimum=1),
                  block_size=ints(minimum=1), extra_retained_tokens=ints(minimum=0),
                  max_in_flight_tokens=ints(minimum=0))),
    Case(kc.vllm_serve_in_flight_tokens, args=(24 * kc.GIB, "NVIDIA H100"),
         bad=dict(gpu_memory_bytes=ints(minimum=1, none_ok=True),
                  device_name=texts(none_ok=True))),
    Case(kc.vllm_kv_cache_groups, args=(_SWA,), bad=dict(config=_CONFIG, **_LAYERS)),
    Case(kc.vllm_capacity, args=(_SWA, 32768, 8 * kc.GIB),
         kwargs=dict(kv_type="fp8", block_size=16, max_in_flight_tokens=2048),
         bad=dict(config=_CONFIG, max_model_len=ints(minimum=1), budget_bytes=ints(minimum=0),
                  kv_type=choices(list(kc.KV_TYPES)), block_size=ints(minimum=1),
                  max_in_flight_tokens=ints(minimum=0), **_LAYERS)),
    Case(kc.vllm_request_bytes, args=(_SWA, 32768),
         kwargs=dict(kv_type="fp8", block_size=16, max_in_flight_tokens=2048),
         bad=dict(config=_CONFIG, max_model_len=ints(minimum=1),
                  kv_type=choices(list(kc.KV_TYPES)), block_size=ints(minimum=1),
                  max_in_flight_tokens=ints(minimum=0), **_LAYERS)),
    Case(kc.cache_room, args=(24 * kc.GIB, 15 * kc.GIB), kwargs=dict(engine="vllm"),
         bad=dict(gpu_memory=ints(minimum=1), weights_bytes=ints(minimum=0),
                  engine=choices(list(kc.BUDGET_ENGINES)))),
    Case(kc.sequence_bytes, args=(_SWA, 4097), kwargs=dict(engine="vllm", kv_type="fp8", n_seq=2,
                                                           max_in_flight_tokens=2048),
         bad=dict(config=_CONFIG, n=ints(minimum=1), engine=choices(list(kc.BUDGET_ENGINES)),
                  kv_type=choices(list(kc.KV_TYPES)), n_seq=ints(minimum=1),
                  max_in_flight_tokens=ints(minimum=0), **_LAYERS)),
    Case(kc.gpu_budget, args=(load_config("Llama-3.1-8B"), 24 * kc.GIB, 15 * kc.GIB),
         kwargs=dict(contexts=[4096], engines=["vllm", "ideal"], kv_types=["f16"],
                     max_in_flight_tokens=None),
         bad=dict(gpu_memory=ints(minimum=1), weights_bytes=ints(minimum=0),
                  max_in_flight_tokens=ints(minimum=0, none_ok=True))),
    Case(kc.llamacpp_compute_reserve, args=(load_config("Llama-3.1-8B"), 4097, 200),
         bad=dict(config=_CONFIG, n_ctx=ints(minimum=1), n_ubatch=ints(minimum=1),
                  **{f"config.{k}": ints(minimum=1) | st.just(DELETE) for k in (
                      "hidden_size", "intermediate_size", "vocab_size")})),
    Case(kc.vllm_window_blocks, args=(250, 50, 64, 16),
         bad=dict(num_computed=ints(minimum=0), num_new=ints(minimum=1),
                  sliding_window=ints(minimum=1), block_size=ints(minimum=1))),
    Case(kc.vllm_prefix_hits, args=([[1, 2, 3], [1, 2]], 16),
         bad=dict(prompts=st.sampled_from([[], None, "abc", [[]], 3, [[1], 5], [[1], ()]]),
                  block_size=ints(minimum=1)),
         names={"prompts": "prompts"}),
    Case(kc.llamacpp_compute_phases, args=(load_config("Llama-3.1-8B"), 4097, 200),
         kwargs=dict(flash_attn=False),
         bad=dict(n_ctx=ints(minimum=1), n_ubatch=ints(minimum=1), flash_attn=flags(),
                  **{f"config.{k}": ints(minimum=1) | st.just(DELETE) for k in (
                      "hidden_size", "intermediate_size", "vocab_size")},
                  **{"config.num_local_experts": st.just(32)})),
    Case(kc.llamacpp_compute_buffer, args=(_TINY, 65536, 512), kwargs=dict(flash_attn=False),
         bad=dict(config=_CONFIG, n_ctx=ints(minimum=1), n_ubatch=ints(minimum=1),
                  flash_attn=flags(),
                  **{"config.num_attention_heads": ints(minimum=1) | st.just(DELETE),
                     "config.vocab_size": ints(minimum=1) | st.just(DELETE)})),
    Case(kc.gqa_kv_head, args=(5, 8, 2),
         bad=dict(h=ints(minimum=0, maximum=7), hq=ints(minimum=1) | st.sampled_from([3, 5]),
                  hkv=ints(minimum=1) | st.sampled_from([3, 16]))),
    Case(kc.gqa_head_map, args=(8, 2),
         bad=dict(hq=ints(minimum=1) | st.sampled_from([3, 5]),
                  hkv=ints(minimum=1) | st.sampled_from([3, 16]))),
    Case(kc.mla_absorb_query, args=(_q, _Wuk),
         bad={k: v for k, v in _MLA_ARRAYS.items() if k != "c"}),
    Case(kc.mla_scores_direct, args=(_q, _Wuk, _c), bad=_MLA_ARRAYS),
    Case(kc.mla_scores_absorbed, args=(_q, _Wuk, _c), bad=_MLA_ARRAYS),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_vllm_serve_in_flight_tokens_follows_the_gpu_memory():
    """vLLM 0.32's vllm serve: 2 batches (async scheduling) x max_num_batched_tokens, which is
    2,048 under 70 GiB, 8,192 from 70 GiB (an 80 GB H100) and 16,384 from 160 GiB."""
    G = kc.GIB
    assert kc.vllm_serve_in_flight_tokens() == kc.vllm_serve_in_flight_tokens(24 * G) == 4096
    assert kc.vllm_serve_in_flight_tokens(70 * G - 1) == 4096
    assert kc.vllm_serve_in_flight_tokens(70 * G) == kc.vllm_serve_in_flight_tokens(80 * 10**9) == 16384
    assert kc.vllm_serve_in_flight_tokens(141 * G) == 16384
    assert kc.vllm_serve_in_flight_tokens(160 * G) == 32768
    assert kc.vllm_serve_in_flight_tokens(80 * 10**9, "NVIDIA A100-SXM4-80GB") == 4096  # by name
    for bad in (0, -1, 2.5, "24GiB"):
        with pytest.raises(ValueError, match="gpu_memory_bytes"):
            kc.vllm_serve_in_flight_tokens(bad)


def test_vllm_groups_pad_gemma3_and_keep_gpt_oss_even():
    """vLLM 0.32's KV cache groups, by hand: Gemma 3 27B has 10 full and 52 sliding layers, so
    groups of 10: one full, six sliding (9, 9, 9, 9, 8, 8 real layers), 8 padding; gpt-oss's
    12 + 12 are one group each; the 3:1 hybrid 8 + 24 four groups of 8; a dense model one."""
    size, groups, pad = kc.vllm_kv_cache_groups(load_config("Gemma-3-27B"))
    assert size == 10 and pad == 8
    assert sorted(groups, key=lambda g: (g[0] is None, -g[1])) == \
        [(1024, 9)] * 4 + [(1024, 8)] * 2 + [(None, 10)]
    assert kc.vllm_kv_cache_groups(load_config("gpt-oss-20b"))[::2] == (12, 0)
    assert kc.vllm_kv_cache_groups(load_config("Llama-3-8B-hybrid-3to1"))[0] == 8
    assert kc.vllm_kv_cache_groups(load_config("Llama-3.1-8B")) == (32, [(None, 32)], 0)


def test_vllm_capacity_by_hand():
    """Gemma 3 27B, 8 GiB, 32K, 2,048 in flight: a page is 16 tokens x 16 heads x 128 x 2 x 2 B
    = 128 KiB, a block 10 pages, so 6,553 blocks; a request takes 2,048 full blocks and 6 x 193
    sliding ones (cdiv(1,023 + 2,048, 16) + 1): 3,206, so 2.04 requests. Without the padding
    the bytes alone would say 2.15."""
    cfg = load_config("Gemma-3-27B")
    cap = kc.vllm_capacity(cfg, 32768, 8 * kc.GIB, max_in_flight_tokens=2048)
    assert (cap.num_blocks, cap.blocks_per_request) == (8 * kc.GIB // (10 * 131072), 2048 + 6 * 193)
    assert f"{cap.max_concurrency:.3f}" == "2.044" and not cap.refuses
    exact = kc.kv_cache_bytes(cfg, 32768, engine="vllm", max_in_flight_tokens=2048).total_bytes
    assert f"{8 * kc.GIB / exact:.2f}" == "2.15"
    dense = kc.vllm_capacity(load_config("Llama-3.1-8B"), 131072, 8 * kc.GIB)
    assert dense.num_blocks == 4096 and dense.blocks_per_request == 8192 and dense.refuses
    assert kc.vllm_capacity(load_config("Llama-3.1-8B"), 100, 0).refuses
    for bad, name in ((dict(max_model_len=0), "max_model_len"), (dict(budget_bytes=-1), "budget_bytes"),
                      (dict(max_in_flight_tokens=-1), "max_in_flight_tokens")):
        args = {"max_model_len": 100, "budget_bytes": kc.GIB, **bad}
        with pytest.raises(ValueError, match=name):
            kc.vllm_capacity(cfg, args.pop("max_model_len"), args.pop("budget_bytes"), **args)


def test_vllm_window_blocks_and_prefix_hits_by_hand():
    """W = 64, blocks of 16: after 250 settled and 50 new tokens the table has cdiv(300, 16) =
    19 slots; tokens 0..186 are out of every later window, so (250 - 63) // 16 = 11 slots hold
    the null block and 8 are live. A window of 1 keeps only the block being written."""
    assert kc.vllm_window_blocks(250, 50, 64) == (8, 11)
    assert kc.vllm_window_blocks(0, 50, 64) == (4, 0)
    assert kc.vllm_window_blocks(32, 1, 1) == (1, 2)
    a = list(range(100))
    assert kc.vllm_prefix_hits([a, a[:80] + [999] * 30, a, a[:33], a[:32], [5] + a[1:]]) == \
        [0, 80, 96, 32, 16, 0]
    for call, name in ((lambda: kc.vllm_window_blocks(-1, 5, 4), "num_computed"),
                       (lambda: kc.vllm_window_blocks(0, 0, 4), "num_new"),
                       (lambda: kc.vllm_window_blocks(0, 5, 0), "sliding_window"),
                       (lambda: kc.vllm_prefix_hits([]), "prompts"),
                       (lambda: kc.vllm_prefix_hits([[1], []]), "prompts\\[1\\]")):
        with pytest.raises(ValueError, match=name):
            call()


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Mistral-7B", "Gemma-3-27B", "gpt-oss-20b",
                                  "DeepSeek-V3", "Qwen2.5-7B-Instruct"])
@pytest.mark.parametrize("n", [1, 17, 4096, 4097, 131072])
def test_one_vllm_request_is_the_smallest_budget_its_pool_serves(name, n):
    """vllm_request_bytes against vllm_capacity: that budget serves one request of n, one byte
    less refuses it; less the null block and without padding layers it is kv_cache_bytes."""
    cfg = load_config(name)
    need = kc.vllm_request_bytes(cfg, n, max_in_flight_tokens=2048)
    assert not kc.vllm_capacity(cfg, n, need, max_in_flight_tokens=2048).refuses
    assert kc.vllm_capacity(cfg, n, need - 1, max_in_flight_tokens=2048).refuses
    cap = kc.vllm_capacity(cfg, n, need, max_in_flight_tokens=2048)
    null_block = need // cap.num_blocks  # the pool's one block no request holds
    exact = kc.kv_cache_bytes(cfg, n, engine="vllm", max_in_flight_tokens=2048).total_bytes
    padding = kc.vllm_kv_cache_groups(cfg)[2]
    assert need - null_block == exact if padding == 0 else need - null_block > exact


def test_llamacpp_compute_reserve_is_the_phases_bound_or_the_experts_estimate():
    dense, moe = load_config("Llama-3.1-8B"), load_config("gpt-oss-20b")
    assert kc.llamacpp_compute_reserve(dense, 8192, 512) == kc.llamacpp_compute_phases(
        dense, 8192, 512, flash_attn=True).lower_bound_bytes
    assert kc.llamacpp_compute_reserve(moe, 8192, 512) == kc.llamacpp_compute_buffer(
        moe, 8192, 512, flash_attn=True).estimate_bytes



# --------------------------------------------------------------------------- the GPU budget

@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Gemma-3-27B", "gpt-oss-20b", "DeepSeek-V3",
                                  "Mistral-7B"])
@pytest.mark.parametrize("gpu_gib", [16, 24, 80])
def test_gpu_budget_is_the_longest_sequence_and_the_most_sequences_that_fit(name, gpu_gib):
    """Against sequence_bytes and cache_room, one token or one sequence more never fits; vLLM's
    rule is its pool's: k requests start while k x blocks_per_request < num_blocks (the null
    block), with a pool of the room's bytes."""
    cfg, gpu, weights = load_config(name), gpu_gib * kc.GIB, 14 * kc.GIB
    for b in kc.gpu_budget(cfg, gpu, weights, contexts=[4096, 32768], kv_types=["f16", "q8_0"],
                           max_in_flight_tokens=4096):
        assert b.room_bytes == (int(gpu * 0.92) if b.engine == "vllm" else gpu) - weights
        assert b.kv_type == "f16" or b.engine != "vllm"  # vLLM has no q8_0 cache

        def fits(n, k=1, b=b):
            need = kc.sequence_bytes(cfg, n, engine=b.engine, kv_type=b.kv_type, n_seq=k,
                                     max_in_flight_tokens=4096)
            if b.engine == "vllm":
                cap = kc.vllm_capacity(cfg, n, b.room_bytes, kv_type=b.kv_type,
                                       max_in_flight_tokens=4096)
                assert (need <= b.room_bytes) == (k * cap.blocks_per_request < cap.num_blocks)
            return need <= b.room_bytes
        if b.max_tokens is None:
            assert fits(1 << 40)  # every layer slides: the cache stops growing
        else:
            assert fits(b.max_tokens) and not fits(b.max_tokens + 1)
        for n, k in b.sequences:
            assert (k == 0 or fits(n, k)) and not fits(n, k + 1)


def test_sequence_bytes_is_each_engines_rule():
    cfg = load_config("Llama-3.1-8B")
    assert kc.sequence_bytes(cfg, 5000, engine="ideal") == kc.kv_cache_bytes(
        cfg, 5000, engine="ideal").total_bytes
    assert kc.sequence_bytes(cfg, 5000, engine="vllm") == kc.vllm_request_bytes(cfg, 5000)
    assert kc.sequence_bytes(cfg, 5000, engine="llama.cpp", n_seq=3) == kc.kv_cache_bytes(
        cfg, 15000, engine="llama.cpp", n_seq=3).total_bytes + kc.llamacpp_compute_reserve(
        cfg, 15000, 512)
    # three requests: three requests' blocks and one null block
    one = kc.sequence_bytes(cfg, 5000, engine="vllm")
    block = kc.kv_cell_bytes(cfg) * 16 * kc.vllm_kv_cache_groups(cfg)[0]  # a page per layer
    assert kc.sequence_bytes(cfg, 5000, engine="vllm", n_seq=3) == 3 * (one - block) + block
    with pytest.raises(ValueError, match="kv_type 'q8_0' is not a cache type of vllm"):
        kc.sequence_bytes(cfg, 5000, engine="vllm", kv_type="q8_0")


def test_gpu_budget_when_the_weights_do_not_fit_and_bad_lists():
    cfg = load_config("Llama-3.1-8B")
    (b,) = kc.gpu_budget(cfg, 8 * kc.GIB, 16 * kc.GIB, contexts=[4096], engines=["vllm"])
    assert b.room_bytes < 0 and b.max_tokens == 0 and b.sequences == ((4096, 0),)
    for kwargs, says in [(dict(contexts=4096), "contexts must be a list or tuple"),
                         (dict(contexts=[0]), r"contexts\[0\] must be an integer >= 1"),
                         (dict(engines=["sglang"]), r"engines\[0\] must be one of"),
                         (dict(kv_types=["int4"]), r"kv_types\[0\] must be one of")]:
        with pytest.raises(ValueError, match=says):
            kc.gpu_budget(cfg, 24 * kc.GIB, 0, **kwargs)


def test_layer_types_are_checked_even_where_use_sliding_window_switches_windows_off():
    """An unknown layer type was ignored behind use_sliding_window: false (a typo, or a type
    lessonlib does not size, like chunked attention, read as global)."""
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
           "head_dim": 64, "sliding_window": 128, "use_sliding_window": False,
           "layer_types": ["sliding_attention", "full_attention", "chunked_attention",
                           "full_attention"]}
    with pytest.raises(ValueError, match=r"config 'layer_types' has unsupported entries "
                                         r"\['chunked_attention'\]"):
        kc.layer_windows(cfg)
    cfg["layer_types"][2] = "sliding_attention"
    assert kc.layer_windows(cfg) == [None] * 4  # the switch still wins
