import numpy as np
import pytest

from lessonlib import traffic as T
from lessonlib.attention import attention_mask
from lessonlib.models.configs import load_config
from lessonlib.traffic import (GIB, MIB, crossover_length, flash_hbm_accesses,
                               long_context_cost, naive_traffic, score_matrix_table,
                               score_slice_bytes, tiled_traffic, traffic_ratio_table)
from lessonlib.models import load_model
from lessonlib.models.weights import weight_bytes

# Llama 3.1 8B's N_param as notebooks 01 and 09 take it: counted from its config.json.
LLAMA_PARAMS = weight_bytes(load_config("Llama-3.1-8B")).params


def test_tile_walk_exact_counts():
    assert (naive_traffic(64, 8).reads, naive_traffic(64, 8).writes) == (9728, 8704)
    assert naive_traffic(64, 8).total == 18432
    t = tiled_traffic(64, 8, 16)
    assert (t.reads, t.writes, t.total) == (4608, 512, 5120)


def test_per_head_traffic_table():
    rows = traffic_ratio_table([(4096, 128), (131072, 128), (131072, 64), (131072, 256)], d=128)
    assert [round(r["naive"] / 1e6) for r in rows] == [69, 68787, 68787, 68787]
    assert [round(r["tiled"] / 1e6) for r in rows] == [35, 34393, 68753, 17213]
    assert [round(r["ratio"], 1) for r in rows] == [2.0, 2.0, 1.0, 4.0]
    assert [r["score_buffer"] for r in rows] == [16_777_216] + [17_179_869_184] * 3
    assert [r["tile"] for r in rows] == [16_384, 16_384, 4_096, 65_536]
    for r in rows:  # the closed forms, written independently
        n, b, d = r["n"], r["block"], 128
        assert r["naive"] == 3 * n * d + 4 * n * n + n * d
        assert r["tiled"] == n * d + (n // b) * 2 * n * d + n * d
        assert r["ratio"] == pytest.approx(2 * b / d, rel=1e-2)


def test_tiled_traffic_counts_only_visited_blocks():
    n, d, b = 96, 4, 16
    dense = tiled_traffic(n, d, b)
    causal = tiled_traffic(n, d, b, causal=True)
    mask = attention_mask(n, n, causal=True)
    visited_rows = sum(min(b, n - j0) for i0 in range(0, n, b) for j0 in range(0, n, b)
                       if mask[i0:i0 + b, j0:j0 + b].any())
    assert causal.reads == n * d + 2 * d * visited_rows
    assert causal.reads < dense.reads
    windowed = tiled_traffic(n, d, b, causal=True, window=16, sink_tokens=4)
    assert windowed.reads < causal.reads
    full = attention_mask(n, n)  # no mask: the closed form must equal the block-by-block count
    assert dense.reads == n * d + 2 * d * sum(min(b, n - j0) for i0 in range(0, n, b)
                                              for j0 in range(0, n, b) if full[i0:i0 + b, j0:j0 + b].any())
    # Not a block multiple: the last partial blocks count their real rows.
    assert tiled_traffic(50, 2, 16).reads == 50 * 2 + 4 * 2 * 50 * 2


def test_score_matrix_table():
    rows = score_matrix_table([4096, 8192, 32768, 131072])
    assert [r.scores_per_head for r in rows] == [16777216, 67108864, 1073741824, 17179869184]
    assert [r.layer_bytes / GIB for r in rows] == [2, 8, 128, 2048]
    assert [r.traffic_bytes / GIB for r in rows] == [8, 32, 512, 8192]
    assert [r.model_traffic_bytes / GIB for r in rows] == [256, 1024, 16384, 262144]
    assert score_slice_bytes(512, 131072) / GIB == 8
    assert score_slice_bytes(1, 131072) / MIB == 16


def test_long_context_cost_table():
    rows = long_context_cost([4096, 32768, 131072], params=LLAMA_PARAMS, layers=32, q_dim=4096,
                             kv_bytes_per_token=131072)
    assert [round(r.weight_flops / 1e12, 1) for r in rows] == [65.8, 526.3, 2105.1]
    assert [round(r.attention_flops / 1e12, 1) for r in rows] == [4.4, 281.5, 4503.6]
    assert [round(100 * r.attention_share) for r in rows] == [6, 35, 68]
    assert [round(r.kv_bytes / GIB, 1) for r in rows] == [0.5, 4.0, 16.0]
    assert round(rows[0].total_flops / 1e12, 1) == 70.2
    assert round(rows[2].total_flops / 1e12, 1) == 6608.7
    assert round(rows[2].total_flops / rows[0].total_flops) == 94
    # causal halves the attention FLOPs of 4 n^2 d per layer
    dense = long_context_cost([4096], params=LLAMA_PARAMS, layers=32, q_dim=4096,
                              kv_bytes_per_token=131072, causal=False)[0]
    assert dense.attention_flops == 2 * rows[0].attention_flops == 4 * 4096 ** 2 * 4096 * 32


@pytest.mark.parametrize("params, layers, q_dim, tokens", [
    (8_030_261_248, 32, 4096, 61266.03125),  # Llama 3.1 8B, notebooks 01 and 09: 61,266
    (8.03e9, 32, 4096, 61264.0380859375),  # its published, rounded 8.03e9: 61,264
    (1_235_814_400, 16, 2048, 37714.0625),  # Llama 3.2 1B, notebook 09's exercise: 37,714
    (7.6e9, 28, 3584, 75733.41836734694),  # Qwen2.5-7B: 28 heads x 128 = 3,584
])
def test_crossover_length_is_p_over_q_dim_l(params, layers, q_dim, tokens):
    n = crossover_length(params, layers=layers, q_dim=q_dim)
    assert n == pytest.approx(tokens, rel=1e-12)
    assert crossover_length(params, layers=layers, q_dim=q_dim, causal=False) == \
        pytest.approx(tokens / 2, rel=1e-12)  # no mask: 4 n^2 q_dim L, twice the attention


@pytest.mark.parametrize("causal", [True, False])
def test_crossover_length_is_where_long_context_cost_terms_meet(causal):
    """The definition: at n the weights' FLOPs equal attention's (below, weights cost more)."""
    n = crossover_length(LLAMA_PARAMS, layers=32, q_dim=4096, causal=causal)
    at, before = long_context_cost([round(n), round(n) - 2000], params=LLAMA_PARAMS,
                                   layers=32, q_dim=4096, kv_bytes_per_token=1, causal=causal)
    assert at.attention_flops == pytest.approx(at.weight_flops, rel=1e-4)
    assert before.attention_flops < before.weight_flops
    assert LLAMA_PARAMS == 8_030_261_248  # the count notebooks 01 and 09 print


@pytest.mark.parametrize("call, match", [
    (lambda: naive_traffic(0, 8), "^n must"), (lambda: tiled_traffic(8, 8, 0), "block_q"),
    (lambda: tiled_traffic(8, 8, 4, 0), "block_k"), (lambda: score_matrix_table([4096], heads=0), "heads"),
    (lambda: long_context_cost([10], params=-1, layers=1, q_dim=1, kv_bytes_per_token=1), "params"),
    (lambda: score_slice_bytes(1, 1.5), "n_keys"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_np_integers_are_accepted():
    assert naive_traffic(np.int64(64), np.int32(8)).reads == 9728


# --------------------------------------------------------------------------- issue 13's examples

@pytest.mark.parametrize("kwargs, name", [
    (dict(window=0), "window"), (dict(window=-4, causal=True), "window"),
    (dict(window=2.5, causal=True), "window"), (dict(causal="no"), "causal"),
    (dict(causal=0), "causal"),  # was the dense count, silently
    (dict(sink_tokens=-1), "sink_tokens"),  # was ignored without a mask
    (dict(sink_tokens=1.5, window=4), "sink_tokens")])
def test_tiled_traffic_names_bad_mask_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must be"):
        tiled_traffic(64, 8, 16, **kwargs)


@pytest.mark.parametrize("cases, says", [
    ([(0, 128)], r"^n of cases\[0\] must be an integer >= 1"),
    ([(4096, 128), (4096, 12.5)], r"^block of cases\[1\] must be an integer, got the float"),
    ([(4096,)], r"^cases\[0\] must be an \(n, block\) pair"), (["ab"], r"^cases\[0\] must be"),
    ([4096], r"^cases\[0\] must be"), ("4096", "^cases must be a list"), (4096, "^cases must be")])
def test_traffic_ratio_table_names_the_bad_case(cases, says):
    with pytest.raises(ValueError, match=says):
        traffic_ratio_table(cases)


@pytest.mark.parametrize("f", [lambda x: score_matrix_table(x),
                               lambda x: long_context_cost(x, params=8e9, layers=32, q_dim=4096,
                                                           kv_bytes_per_token=131072)])
@pytest.mark.parametrize("lengths, says", [
    ([4096, 0], r"^lengths\[1\] must be an integer >= 1, got 0"),
    ([1.5], r"^lengths\[0\] must be an integer, got the float 1.5"),
    ([True], r"^lengths\[0\] must be an integer"), (4096, "^lengths must be a list"),
    ("4096", "^lengths must be a list"), (np.array(4096), "^lengths must be a list")])
def test_lengths_are_named(f, lengths, says):
    with pytest.raises(ValueError, match=says):
        f(lengths)


@pytest.mark.parametrize("kwargs, name", [
    (dict(params=True), "params"), (dict(params="8e9"), "params"), (dict(params=0), "params"),
    (dict(params=np.nan), "params"), (dict(layers=32.0), "layers"), (dict(q_dim=0), "q_dim"),
    (dict(kv_bytes_per_token=1.5), "kv_bytes_per_token"), (dict(causal="no"), "causal"),
    (dict(causal=1), "causal")])
def test_long_context_cost_names_bad_parameters(kwargs, name):
    args = dict(params=8.03e9, layers=32, q_dim=4096, kv_bytes_per_token=131072)
    with pytest.raises(ValueError, match=f"^{name} must be"):
        long_context_cost([4096], **{**args, **kwargs})


def test_numpy_lengths_give_the_same_rows():
    rows = score_matrix_table(np.array([4096, 8192]))
    assert rows == score_matrix_table([4096, 8192]) and type(rows[0].n) is int
    assert traffic_ratio_table(np.array([[4096, 128]])) == traffic_ratio_table([(4096, 128)])


# --------------------------------------------------------------------------- FlashAttention's count

def _algorithm1_by_walking(n, d, M):
    """Walk Algorithm 1 of the FlashAttention paper loop by loop, adding up what each line
    moves between HBM and SRAM (independent of the closed form in lessonlib)."""
    b_c = -(-M // (4 * d))
    b_r = min(b_c, d)
    moved = n * d + n + n  # line 2: O = 0, l = 0, m = -inf written in HBM
    for j0 in range(0, n, b_c):
        moved += 2 * (min(j0 + b_c, n) - j0) * d  # line 6: K_j, V_j
        for i0 in range(0, n, b_r):
            rows = min(i0 + b_r, n) - i0
            moved += rows * d + rows * d + rows + rows  # line 8: Q_i, O_i, l_i, m_i
            moved += rows * d + rows + rows  # lines 12-13: O_i, l_i, m_i written back
    return b_c, b_r, moved


@pytest.mark.parametrize("n, d, M", [(64, 8, 128), (100, 8, 200), (1000, 64, 16384),
                                     (4096, 128, 65536), (333, 16, 1000), (50, 4, 4000)])
def test_flash_hbm_accesses_walks_algorithm_1(n, d, M):
    io = flash_hbm_accesses(n, d, M)
    b_c, b_r, moved = _algorithm1_by_walking(n, d, M)
    assert (io.block_c, io.block_r, io.flash) == (b_c, b_r, moved)
    assert io.passes == len(range(0, n, b_c))
    # Algorithm 0 moves exactly what the tile walk's naive count moves
    assert io.standard == naive_traffic(n, d).total == 4 * n * d + 4 * n * n
    assert io.ratio == io.standard / io.flash


def test_flash_hbm_accesses_follows_theorem_2():
    # Theta(n^2 d^2 / M): doubling M halves the n^2 term, doubling d quadruples it
    big = [flash_hbm_accesses(131072, d, M) for d, M in ((128, 65536), (128, 131072), (64, 65536))]
    quad = [io.flash - 3 * io.n * io.d - 2 * io.n for io in big]  # the passes' share
    assert quad[0] / quad[1] == pytest.approx(2, rel=1e-2)
    assert quad[0] / quad[2] == pytest.approx(4, rel=0.02)
    for io in big:  # leading term (3d + 4) n^2 / B_c, B_c = M / 4d
        lead = (3 * io.d + 4) * io.n ** 2 * 4 * io.d / io.sram
        assert io.flash == pytest.approx(lead, rel=0.03)
    # the numbers notebook 03 prints
    rows = {(io.n, io.d, io.sram): io for io in
            (flash_hbm_accesses(n, d, M) for n, d, M in
             [(131072, 64, 16384), (131072, 64, 65536), (131072, 128, 16384),
              (131072, 128, 65536), (131072, 128, 131072)])}
    assert [round(r.ratio, 2) for r in rows.values()] == [1.31, 5.22, 0.33, 1.32, 2.64]
    assert [r.block_c for r in rows.values()] == [64, 256, 32, 128, 256]
    assert [r.block_r for r in rows.values()] == [64, 64, 32, 128, 128]
    # with B_c = d the count crosses standard near M = 3 d^2 (ratio ~ 4 B_c / (3 d + 4))
    io = flash_hbm_accesses(131072, 128, 3 * 128 * 128)
    assert io.ratio == pytest.approx(4 * io.block_c / (3 * 128 + 4), rel=1e-2)
    # SRAM of 4 n d floats or more: everything in one block, one pass
    assert flash_hbm_accesses(100, 8, 4 * 100 * 8).passes == 1


def test_flash_hbm_accesses_names_bad_arguments():
    with pytest.raises(ValueError, match=r"^sram must be at least d = 128 floats"):
        flash_hbm_accesses(4096, 128, 64)
    with pytest.raises(ValueError, match=r"^sram must be an integer"):
        flash_hbm_accesses(4096, 128, 65536.0)
    with pytest.raises(ValueError, match=r"^d must be"):
        flash_hbm_accesses(4096, 0, 65536)


# --------------------------------------------------------------------------- decode roofline
# Every expected number below is written from the published config.json by hand, not from
# lessonlib: the per-layer cell (K and V rows), the layers, llama.cpp's 256-cell padding.

def _pad256(n):
    return -(-n // 256) * 256


# Llama-3.1-8B: 32 layers, 8 KV heads of 128, bf16; 4,096 hidden, 14,336 MLP, 128,256 words,
# lm_head apart from embed_tokens; every weight 2 bytes.
_LLAMA_CELL = 2 * 8 * 128 * 2  # K and V rows of one layer, f16: 4,096 bytes
_LLAMA_LAYER = (4096 * 4096 + 2 * 1024 * 4096 + 4096 * 4096  # q, k, v, o
                + 3 * 4096 * 14336 + 2 * 4096)  # gate, up, down; two RMSNorms
_LLAMA_WEIGHTS = 2 * (32 * _LLAMA_LAYER + 2 * 128256 * 4096 + 4096)  # + embed, lm_head, norm
_H100 = 3.35e12


def test_gpus_are_the_datasheet_figures_in_decimal_bytes():
    expected = {"H100-SXM": 3.35e12, "H100-PCIe": 2.0e12, "H200": 4.8e12,
                "A100-80GB-SXM": 2.039e12, "A100-40GB": 1.555e12, "L4": 300e9,
                "RTX-4090": 1.008e12}
    assert {k: g.bandwidth for k, g in T.GPUS.items()} == expected
    for g in T.GPUS.values():
        assert isinstance(g.bandwidth, int) and g.source and g.name
    # 384 bits of GDDR6X at 21 Gbps a pin: the 4090's 1,008 GB/s
    assert T.GPUS["RTX-4090"].bandwidth == 384 // 8 * 21 * 10**9


@pytest.mark.parametrize("n", [1, 255, 1000, 4097, 8192, 32768, 131072])
def test_llama_roofline_by_hand(n):
    assert _LLAMA_WEIGHTS == 16_060_522_496
    llama = load_model("Llama-3.1-8B")
    for engine, cells in (("ideal", n), ("vllm", n), ("llama.cpp", _pad256(n))):
        r = T.decode_roofline(llama, n, gpu="H100-SXM", engine=engine)
        cache = 32 * cells * _LLAMA_CELL
        assert (r.weights_bytes, r.cache_bytes) == (_LLAMA_WEIGHTS, cache)
        assert r.step_bytes == r.bytes_per_token == _LLAMA_WEIGHTS + cache
        assert r.tokens_per_s == pytest.approx(_H100 / (_LLAMA_WEIGHTS + cache), rel=1e-12)
        assert r.cache_share == pytest.approx(cache / (_LLAMA_WEIGHTS + cache), rel=1e-12)
        assert r.step_seconds == pytest.approx((_LLAMA_WEIGHTS + cache) / _H100, rel=1e-12)
        assert (r.n, r.batch, r.engine, r.kv_type, r.gpu, r.bandwidth) == \
            (n, 1, engine, "f16", "H100-SXM", 3_350_000_000_000)


def test_llama_numbers_the_report_quotes():
    llama = load_model("Llama-3.1-8B")
    got = {(n, g): round(T.decode_roofline(llama, n, gpu=g).tokens_per_s, 1)
           for n in (8192, 32768, 131072) for g in ("H100-SXM", "RTX-4090")}
    assert got == {(8192, "H100-SXM"): 195.5, (32768, "H100-SXM"): 164.6,
                   (131072, "H100-SXM"): 100.8, (8192, "RTX-4090"): 58.8,
                   (32768, "RTX-4090"): 49.5, (131072, "RTX-4090"): 30.3}
    # at 128K the cache is half of what a step reads
    assert T.decode_roofline(llama, 131072, gpu="H100-SXM").cache_share == \
        pytest.approx(17_179_869_184 / (17_179_869_184 + _LLAMA_WEIGHTS))


# gpt-oss-20b: 24 layers, even ones sliding with W = 128, 8 KV heads of 64.
_OSS_CELL = 2 * 8 * 64 * 2


@pytest.mark.parametrize("n, exact_sliding, llamacpp_sliding", [
    (1, 1, 256), (100, 100, 256), (129, 128, 256), (1000, 128, 768), (4097, 128, 768),
    (131072, 128, 768)])
def test_sliding_layers_read_their_window(n, exact_sliding, llamacpp_sliding):
    """vLLM and the exact count read min(n, W) tokens of a sliding layer; llama.cpp every cell
    of its pad(min(n, W + 512), 256) (768 once the window has wrapped)."""
    oss = load_model("gpt-oss-20b")
    exact = 12 * n * _OSS_CELL + 12 * exact_sliding * _OSS_CELL
    assert T.decode_cache_bytes(oss, n, engine="ideal") == exact
    assert T.decode_cache_bytes(oss, n, engine="vllm") == exact
    assert T.decode_cache_bytes(oss, n, engine="llama.cpp") == \
        12 * _pad256(n) * _OSS_CELL + 12 * llamacpp_sliding * _OSS_CELL


@pytest.mark.parametrize("n", [1, 7, 5000])
def test_a_window_of_one_reads_one_token(n):
    oss = load_model(dict(load_config("gpt-oss-20b"), sliding_window=1))
    assert T.decode_cache_bytes(oss, n, engine="vllm") == 12 * n * _OSS_CELL + 12 * _OSS_CELL
    # llama.cpp keeps the window plus one micro-batch: pad(min(n, 1 + 512), 256) cells
    assert T.decode_cache_bytes(oss, n, engine="llama.cpp") == \
        12 * _pad256(n) * _OSS_CELL + 12 * min(_pad256(n), 768) * _OSS_CELL


def test_llama_cpp_reads_mistral_whole_and_vllm_reads_its_window():
    """llama.cpp runs Mistral-7B-v0.1 without its window (kv_cache.LLAMACPP_NO_SWA)."""
    mistral = load_model("Mistral-7B")
    n = 32769
    assert T.decode_cache_bytes(mistral, n, engine="llama.cpp") == 32 * _pad256(n) * 4096
    assert T.decode_cache_bytes(mistral, n, engine="vllm") == 32 * 4096 * 4096


@pytest.mark.parametrize("n", [1, 3, 999, 65537])
def test_mla_reads_one_latent_per_token(n):
    """DeepSeek-V3: 61 layers cache kv_lora_rank 512 + the RoPE key 64, 2 bytes each."""
    ds = load_model("DeepSeek-V3")
    cell = (512 + 64) * 2
    assert T.decode_cache_bytes(ds, n, engine="vllm") == 61 * n * cell
    assert T.decode_cache_bytes(ds, n, engine="llama.cpp") == 61 * _pad256(n) * cell
    r = T.decode_roofline(ds, n, bandwidth=4.8e12, weights_bytes=10**9)
    assert r.step_bytes == 10**9 + 61 * n * cell and r.gpu is None


def test_cache_types():
    llama = load_model("Llama-3.1-8B")
    assert T.decode_cache_bytes(llama, 1000, engine="vllm", kv_type="fp8") == 32 * 1000 * 2048
    # q8_0: 34 bytes per 32 values, K and V rows of 1,024 values each
    assert T.decode_cache_bytes(llama, 1000, engine="llama.cpp", kv_type="q8_0") == \
        32 * 1024 * 2 * (1024 // 32 * 34)
    with pytest.raises(ValueError, match=r"^kv_type 'q8_0' is not a cache type of engine 'vllm'"):
        T.decode_cache_bytes(llama, 1000, engine="vllm", kv_type="q8_0")
    with pytest.raises(ValueError, match=r"^kv_type 'fp8' is not a cache type of engine 'llama.cpp'"):
        T.decode_cache_bytes(llama, 1000, engine="llama.cpp", kv_type="fp8")


@pytest.mark.parametrize("batch", [1, 2, 7, 64])
def test_a_batch_reads_the_weights_once_and_each_cache(batch):
    llama = load_model("Llama-3.1-8B")
    n, cache = 4097, 32 * 4097 * _LLAMA_CELL
    r = T.decode_roofline(llama, n, bandwidth=_H100, batch=batch)
    assert r.step_bytes == _LLAMA_WEIGHTS + batch * cache
    assert r.bytes_per_token == (_LLAMA_WEIGHTS + batch * cache) / batch
    assert r.tokens_per_s == pytest.approx(batch * _H100 / (_LLAMA_WEIGHTS + batch * cache))
    assert r.cache_share == pytest.approx(batch * cache / (_LLAMA_WEIGHTS + batch * cache))
    # more sequences, more tokens a second, never past bandwidth / cache
    assert T.decode_roofline(llama, n, bandwidth=_H100, batch=batch + 1).tokens_per_s > \
        r.tokens_per_s
    assert r.tokens_per_s < _H100 / cache


def test_weights_given_or_counted():
    assert T.decode_roofline(load_config("gpt-oss-20b"), 100, gpu="L4").weights_bytes == \
        weight_bytes(load_config("gpt-oss-20b")).bytes
    r = T.decode_roofline(load_config("Llama-3.1-8B"), 100, gpu="L4", weights_bytes=0)
    assert r.weights_bytes == 0 and r.cache_share == 1.0
    hybrid = load_config("Llama-3-8B-hybrid-3to1")  # lessonlib cannot count its weights
    with pytest.raises(ValueError, match=r"^weights_bytes is required.*model_type"):
        T.decode_roofline(hybrid, 100, gpu="L4")
    assert T.decode_roofline(hybrid, 100, gpu="L4", weights_bytes=5).weights_bytes == 5


def test_gpu_or_bandwidth_not_both():
    cfg = load_config("Llama-3.1-8B")
    with pytest.raises(ValueError, match=r"^give gpu .* or bandwidth .*not neither"):
        T.decode_roofline(cfg, 100)
    with pytest.raises(ValueError, match=r"not both"):
        T.decode_roofline(cfg, 100, gpu="L4", bandwidth=1e12)
    with pytest.raises(ValueError, match=r"^gpu must be one of"):
        T.decode_roofline(cfg, 100, gpu="H100")


# --------------------------------------------------------------------------- bad inputs
from _bad import Case, bad_input_tests, choices, flags, ints, reals  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LENGTHS = st.one_of(ints(minimum=1).map(lambda n: [4096, n]),
                     st.sampled_from([4096, "4096", None, np.array(5)]))
_COST = dict(params=8.03e9, layers=32, q_dim=4096, kv_bytes_per_token=131072, causal=True)

BAD_INPUTS = [
    Case(T.format_bytes, args=(1536,), bad=dict(n=ints(minimum=0))),
    Case(naive_traffic, args=(64, 8), bad=dict(n=ints(minimum=1), d=ints(minimum=1))),
    Case(tiled_traffic, args=(64, 8, 16, 8), kwargs=dict(causal=True, window=20, sink_tokens=4),
         bad=dict(n=ints(minimum=1), d=ints(minimum=1), block_q=ints(minimum=1),
                  block_k=ints(minimum=1, none_ok=True), causal=flags(),
                  window=ints(minimum=1, none_ok=True), sink_tokens=ints(minimum=0))),
    Case(tiled_traffic, args=(64, 8, 16), id="tiled_traffic[no mask]",
         bad=dict(causal=flags(), window=ints(minimum=1, none_ok=True),
                  sink_tokens=ints(minimum=0))),
    Case(traffic_ratio_table, args=([(4096, 128), (1024, 64)],), kwargs=dict(d=128),
         bad=dict(cases=st.one_of(ints(minimum=1).map(lambda n: [(4096, 128), (n, 64)]),
                                  ints(minimum=1).map(lambda b: [(4096, b)]),
                                  st.sampled_from([[(1, 2, 3)], ["ab"], [4096], "ab", 3, None])),
                  d=ints(minimum=1))),
    Case(flash_hbm_accesses, args=(4096, 128, 65536),
         bad=dict(n=ints(minimum=1), d=ints(minimum=1), sram=ints(minimum=128))),
    Case(score_matrix_table, args=([4096, 8192],), kwargs=dict(heads=32, layers=32,
                                                               bytes_per_score=4),
         bad=dict(lengths=_LENGTHS, heads=ints(minimum=1), layers=ints(minimum=1),
                  bytes_per_score=ints(minimum=1))),
    Case(score_slice_bytes, args=(512, 131072), kwargs=dict(heads=32, bytes_per_score=4),
         bad=dict(n_queries=ints(minimum=1), n_keys=ints(minimum=1), heads=ints(minimum=1),
                  bytes_per_score=ints(minimum=1))),
    Case(long_context_cost, args=([4096, 32768],), kwargs=_COST,
         bad=dict(lengths=_LENGTHS, params=reals(above=0.0), layers=ints(minimum=1),
                  q_dim=ints(minimum=1), kv_bytes_per_token=ints(minimum=1), causal=flags())),
    Case(crossover_length, args=(8.03e9,), kwargs=dict(layers=32, q_dim=4096, causal=True),
         bad=dict(params=reals(above=0.0), layers=ints(minimum=1), q_dim=ints(minimum=1),
                  causal=flags())),
    Case(T.decode_cache_bytes, args=(load_config("gpt-oss-20b"), 4097),
         kwargs=dict(engine="llama.cpp", kv_type="q8_0"),
         bad={"n": ints(minimum=1), "engine": choices(T.DECODE_ENGINES) | st.just("vllm"),
              "kv_type": choices(["f16", "bf16", "q8_0", "q4_0", "f32"]) | st.just("fp8"),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True) | st.just(3)}),
    Case(T.decode_cache_bytes, args=(load_config("DeepSeek-V3"), 1000), id="decode_cache_bytes[mla]",
         bad={"n": ints(minimum=1), "engine": choices(T.DECODE_ENGINES),
              "config.kv_lora_rank": ints(minimum=1, none_ok=True)}),
    Case(T.decode_roofline, args=(load_config("Llama-3.1-8B"), 8192),
         kwargs=dict(gpu="H100-SXM", engine="vllm", kv_type="fp8", batch=4),
         bad={"n": ints(minimum=1), "gpu": choices(T.GPUS), "engine": choices(T.DECODE_ENGINES),
              "kv_type": choices(["f16", "bf16", "fp8"]) | st.just("q8_0"),
              "batch": ints(minimum=1), "weights_bytes": ints(minimum=0, none_ok=True),
              "config.num_hidden_layers": ints(minimum=1)}),
    Case(T.decode_roofline, args=(load_config("Llama-3-8B-hybrid-3to1"), 100),
         kwargs=dict(bandwidth=3.35e12, weights_bytes=10**9), id="decode_roofline[bandwidth]",
         bad={"bandwidth": reals(above=0.0), "weights_bytes": ints(minimum=0)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1,023 B"), (1024, "1.00 KiB"),
                                     (1536, "1.50 KiB"), (2**29, "512.00 MiB"),
                                     (16_060_522_496, "14.96 GiB"), (3 * 2**39, "1.50 TiB")])
def test_format_bytes(n, text):
    assert T.format_bytes(n) == text
