"""lessonlib.inspect_model: every number of the report is the library's own, by each engine's rule."""
import json
import math

import pytest
from hypothesis import strategies as st

from lessonlib import inspect_model as im
from lessonlib import kv_cache as kc
from lessonlib import rope
from lessonlib import traffic as T
from lessonlib.models.configs import config_names, load_config

from _bad import Case, DELETE, bad_input_tests, choices, ints

FULL = [n for n in config_names() if not n.startswith("tiny-")]  # the tiny ones record only what their logs show
GIB = 2**30


def _pad(x, to):
    return -(-x // to) * to


@pytest.mark.parametrize("name", FULL)
def test_every_cache_row_is_kv_cache_bytes(name):
    cfg = load_config(name)
    rep = im.report(cfg, [1000, 4096, 70001], kv_types=["f16", "q8_0", "fp8"], n_seq=2)
    json.dumps(rep)  # JSON-able throughout
    seen = set()
    for row in rep["caches"]:
        n_ctx = row["context"] * row["n_seq"] if row["engine"] == "llama.cpp" else row["context"]
        extra = {"max_in_flight_tokens": 4096} if row["engine"] == "vllm" else {}
        size = kc.kv_cache_bytes(cfg, n_ctx, engine=row["engine"], n_seq=2, kv_type=row["kv_type"],
                                 swa_full=row["swa_full"], **extra)
        assert row["bytes"] == size.total_bytes
        seen.add((row["engine"], row["kv_type"]))
    # q8_0 is llama.cpp's only, fp8 vLLM's only; f16 in all three
    assert ("vllm", "q8_0") not in seen and ("llama.cpp", "fp8") not in seen
    assert {("llama.cpp", "f16"), ("vllm", "f16"), ("ideal", "f16"), ("llama.cpp", "q8_0"),
            ("vllm", "fp8")} <= seen


def test_exact_counts_by_hand():
    """gpt-oss-20b: 12 global + 12 sliding layers (W 128), 8 KV heads x 64 dims, f16."""
    rep = im.report(load_config("gpt-oss-20b"), [32768], kv_types=["f16"])
    cell = 2 * 8 * 64 * 2
    by = {r["label"]: r for r in rep["caches"]}
    assert by["exact"]["bytes"] == 12 * 32768 * cell + 12 * 128 * cell
    assert by["llama.cpp"]["sliding_cells"] == _pad(128 + 512, 256) == 768
    assert by["llama.cpp"]["bytes"] == 12 * 32768 * cell + 12 * 768 * cell
    assert by["llama.cpp --swa-full"]["bytes"] == 24 * 32768 * cell
    # vllm serve without --gpu-memory: 2 batches of 2,048 in flight beside the window's 127
    assert by["vLLM"]["sliding_cells"] == (math.ceil((127 + 4096) / 16) + 1) * 16 == 4240
    assert rep["vllm_in_flight_tokens"] == 4096
    assert rep["layers"]["sliding"] == list(range(0, 24, 2)) and rep["layers"]["sinks"] is True
    assert rep["layers"]["pattern"] == "1 of every 2 layers"
    assert rep["kv_bytes_per_token"]["f16"] == {"per_layer": cell, "all_layers": 24 * cell}


def test_llama_cpp_runs_mistral_without_its_window_and_pads_the_context():
    rep = im.report(load_config("Mistral-7B"), [32768, 1000], kv_types=["f16"])
    by = {(r["context"], r["label"]): r for r in rep["caches"]}
    assert (32768, "llama.cpp --swa-full") not in by  # no sliding layers to give them to
    assert by[(32768, "llama.cpp")]["sliding_cells"] is None
    assert by[(32768, "llama.cpp")]["global_cells"] == 32768
    assert by[(32768, "vLLM")]["sliding_cells"] == (math.ceil((4095 + 4096) / 16) + 1) * 16
    none_in_flight = im.report(load_config("Mistral-7B"), [32768], in_flight_tokens=0)
    assert {r["label"]: r for r in none_in_flight["caches"]}["vLLM"]["sliding_cells"] == 257 * 16
    assert by[(1000, "llama.cpp")]["global_cells"] == 1024  # -c 1000 becomes 1,024 cells
    assert any("llama.cpp runs every layer of a mistral model global" in n for n in rep["notes"])


def test_q8_0_is_34_bytes_per_32_values():
    # Llama-3.1-8B at 4,096: llama.cpp reports K (q8_0) 136.00 MiB and V (q8_0) 136.00 MiB
    rep = im.report(load_config("Llama-3.1-8B"), [4096], kv_types=["q8_0"], engines=["llama.cpp"])
    assert rep["caches"][0]["bytes"] == 2 * 32 * 4096 * (8 * 128 // 32 * 34) == 272 * 2**20


def test_shape_and_rope_words():
    rep = im.report(load_config("DeepSeek-V3"), [4096])
    assert rep["shape"]["attention"] == "MLA" and rep["shape"]["mla"]["kv_lora_rank"] == 512
    assert rep["kv_bytes_per_token"]["f16"]["per_layer"] == (512 + 64) * 2
    words = " ".join(rep["rope"][0]["words"])
    assert "YaRN, factor 40" in words and "L0 = 4,096" in words
    m = 0.1 * math.log(40) + 1
    assert f"{m * m:.4f}" in words  # DeepSeek's softmax scale
    llama = im.report(load_config("Llama-3.1-8B"), [4096])["rope"][0]
    labels = [str(x) for x in rope.llama3_regimes(load_config("Llama-3.1-8B"))]
    assert (f"{labels.count('high')} pairs with wavelength under L0 / 4 = 2,048"
            in " ".join(llama["words"]))
    gemma = im.report(load_config("Gemma-3-27B"), [4096])["rope"]
    assert [(g["layer_type"], g["rope_type"], g["base"]) for g in gemma] == [
        ("full_attention", "linear", 1_000_000.0), ("sliding_attention", "default", 10_000.0)]


def test_limits_and_warnings():
    qwen = load_config("Qwen2.5-7B-Instruct")
    rep = im.report(qwen, [262144])
    # vLLM 0.32 does not multiply YaRN's length: 32,768 (the rule before about 0.30 said 131,072)
    assert rep["limits"] == {"hf_max_position_embeddings": 32768, "vllm_max_model_len": 32768,
                             "vllm_derived_max_model_len": 32768, "llamacpp_n_ctx_train": 32768}
    text = " ".join(rep["warnings"])
    assert "switched off by use_sliding_window: false" in text
    assert "context 262,144 is past every limit" in text
    del qwen["rope_scaling"]
    bare = im.report(qwen, [4096])
    assert any("document adding rope_scaling" in w for w in bare["warnings"])
    assert bare["limits"]["vllm_max_model_len"] == 32768
    yarn = dict(load_config("gpt-oss-20b"))
    yarn["rope_scaling"] = {k: v for k, v in yarn["rope_scaling"].items()
                            if k != "original_max_position_embeddings"}
    assert any("no original_max_position_embeddings" in w for w in im.report(yarn, [4096])["warnings"])
    assert im.report(load_config("Llama-3.1-8B"), [4096])["warnings"] == []
    phi = im.report(load_config("Phi-3.5-mini-instruct"), [8192])
    assert (phi["limits"]["vllm_max_model_len"], phi["limits"]["vllm_derived_max_model_len"]) == (
        4096, 131072)
    assert any("pass --max-model-len" in w for w in phi["warnings"])
    assert "(--max-model-len up to 131,072)" in " ".join(im.format_report(phi).split())


def _need(cfg, engine, n, k, kv_type="f16", in_flight=4096):
    if engine == "vllm":
        return kc.kv_cache_bytes(cfg, n, engine="vllm", n_seq=k, kv_type=kv_type,
                                 max_in_flight_tokens=in_flight).total_bytes
    if engine == "ideal":
        return kc.kv_cache_bytes(cfg, n, engine="ideal", n_seq=k, kv_type=kv_type).total_bytes
    if cfg.get("num_local_experts"):  # experts: the two largest temporaries
        compute = kc.llamacpp_compute_buffer(cfg, n * k, 512, flash_attn=True).estimate_bytes
    else:  # dense: the largest phase (tests/test_kv_cache.py checks it by hand)
        compute = kc.llamacpp_compute_phases(cfg, n * k, 512, flash_attn=True).lower_bound_bytes
    return kc.kv_cache_bytes(cfg, n * k, n_seq=k, kv_type=kv_type).total_bytes + compute


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "gpt-oss-20b", "Gemma-3-27B"])
def test_budget_is_the_largest_that_fits(name):
    cfg, gpu, weights = load_config(name), 24 * GIB, 15 * GIB
    rep = im.report(cfg, [4096, 32768], gpu_memory=gpu, weights_bytes=weights,
                    weights_source="test")
    for row in rep["budget"]["engines"]:
        e = row["engine"]
        usable = (int(gpu * 0.92) if e == "vllm" else gpu) - weights  # vLLM 0.32's default
        assert row["usable_bytes"] == usable

        def fits(n, k):
            if e != "vllm":
                return _need(cfg, e, n, k) <= usable
            cap = kc.vllm_capacity(cfg, n, usable, max_in_flight_tokens=4096)  # the padded pool
            return k * cap.blocks_per_request < cap.num_blocks  # one block stays null
        t = row["max_tokens"]
        assert fits(t, 1) and not fits(t + 1, 1)
        for c, k in row["sequences"].items():
            c = int(c)
            assert k >= 1 and fits(c, k) and not fits(c, k + 1)
    if name == "Gemma-3-27B":  # 8 padding layers: the pool holds less than the bytes suggest
        vllm = {r["engine"]: r for r in rep["budget"]["engines"]}["vllm"]
        usable = vllm["usable_bytes"]
        assert _need(cfg, "vllm", vllm["max_tokens"] + 1, 1) <= usable
        assert any("8 padding layers" in a for a in rep["budget"]["assumptions"])


def test_the_llama_cpp_budget_counts_the_f16_mask_that_grows_with_the_context():
    """Dense models: the budget sets aside the phases' bound, which at long contexts is the
    attention phase (the F16 mask, n_ctx x 512 x 2 bytes, grows with -c), not the logits."""
    cfg = load_config("Llama-3.1-8B")
    rep = im.report(cfg, [4096], gpu_memory=80 * GIB, weights_bytes=15 * GIB,
                    weights_source="test", engines=["llama.cpp"])
    t = rep["budget"]["engines"][0]["max_tokens"]
    phases = kc.llamacpp_compute_phases(cfg, t, 512, flash_attn=True)
    assert phases.lower_bound_bytes == phases.attention_bytes > phases.output_bytes
    assert phases.attention_bytes >= -(-t // 256) * 256 * 512 * 2  # the mask alone
    assert any("llamacpp_compute_phases" in a for a in rep["budget"]["assumptions"])
    moe = im.report(load_config("gpt-oss-20b"), [4096], gpu_memory=80 * GIB,
                    weights_bytes=15 * GIB, weights_source="test", engines=["llama.cpp"])
    assert any("experts' feed-forward block is not modelled" in a
               for a in moe["budget"]["assumptions"])


def test_budget_when_every_layer_slides():
    """Mistral-7B in vLLM: every layer keeps 513 blocks at most (257 for the window, 256 for
    the 4,096 tokens in flight), so any length fits."""
    rep = im.report(load_config("Mistral-7B"), [32768, 1 << 20], engines=["vllm", "llama.cpp"],
                    gpu_memory=24 * GIB, weights_bytes=15 * GIB, weights_source="test")
    by = {r["engine"]: r for r in rep["budget"]["engines"]}
    assert by["vllm"]["max_tokens"] is None and by["llama.cpp"]["max_tokens"] > 0  # no SWA there
    usable = by["vllm"]["usable_bytes"]
    one = kc.kv_cache_bytes(load_config("Mistral-7B"), 1 << 20, engine="vllm",
                            max_in_flight_tokens=4096).total_bytes
    assert by["vllm"]["sequences"][str(1 << 20)] == usable // one
    assert "any length" in im.format_report(rep)


def test_budget_when_the_weights_do_not_fit():
    rep = im.report(load_config("Llama-3.1-8B"), [4096], gpu_memory=8 * GIB,
                    weights_bytes=16 * GIB, weights_source="test")
    assert rep["budget"]["fits"] is False
    assert all(r["max_tokens"] == 0 and r["sequences"] == {"4096": 0}
               for r in rep["budget"]["engines"])
    assert "do not fit" in im.format_report(rep)


def test_format_report_shows_every_row_and_rule():
    rep = im.report(load_config("Gemma-3-27B"), [4096, 131072], kv_types=["f16", "q8_0"])
    text = im.format_report(rep)
    flat = " ".join(text.split())
    for row in rep["caches"]:
        assert row["label"] in text
    assert "pad(min(c, W x seqs + ub), 256)" in flat and "cdiv(min(W - 1 + F, n), 16) + 1" in flat
    assert "F = 4,096 tokens in flight" in flat
    assert "window 1,024 on 52 of 62 layers (5 of every 6 layers)" in flat
    assert "global: 5, 11, 17" in flat
    assert max(len(line) for line in text.splitlines()[:25]) < 200


@pytest.mark.parametrize("text, value", [("24GiB", 24 * GIB), ("80GB", 80 * 10**9), ("24G", 24 * GIB),
                                         ("1.5 TiB", int(1.5 * 2**40)), ("512MiB", 2**29)])
def test_parse_size(text, value):
    assert im.parse_size(text) == value


@pytest.mark.parametrize("text", ["24", "24 parsecs", "-3GiB", "", "GiB", "0.1B"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError, match="gpu_memory"):
        im.parse_size(text)


@pytest.mark.parametrize("text, value", [("32768", 32768), ("32K", 32768), ("128k", 131072),
                                         ("1M", 2**20), (4096, 4096)])
def test_parse_context(text, value):
    assert im.parse_context(text) == value


@pytest.mark.parametrize("text", ["32.5K", "lots", "-1", "0", True, 2.0, "1e5"])
def test_parse_context_refuses(text):
    with pytest.raises(ValueError, match="context"):
        im.parse_context(text)


def test_a_type_no_engine_asked_has_is_named():
    with pytest.raises(ValueError, match="kv_types: 'fp8'.*vllm"):
        im.report(load_config("Llama-3.1-8B"), [4096], engines=["llama.cpp"], kv_types=["fp8"])


# --------------------------------------------------------------------------- decode roofline

@pytest.mark.parametrize("name, gpu", [("Llama-3.1-8B", "H100-SXM"), ("gpt-oss-20b", "RTX-4090"),
                                       ("DeepSeek-V3", "H200"), ("Mistral-7B", "L4")])
def test_every_decode_row_is_the_library_roofline(name, gpu):
    cfg = load_config(name)
    rep = im.report(cfg, [1000, 32768], kv_types=["f16", "q8_0", "fp8"], n_seq=3, gpu=gpu,
                    weights_bytes=10**10, weights_source="test")
    json.dumps(rep)
    d = rep["decode"]
    assert (d["gpu"], d["bandwidth"], d["weights_bytes"]) == (gpu, T.GPUS[gpu].bandwidth, 10**10)
    seen = set()
    for row in d["rows"]:
        r = T.decode_roofline(cfg, row["context"], gpu=gpu, engine=row["engine"],
                              kv_type=row["kv_type"], batch=3, weights_bytes=10**10)
        assert (row["cache_bytes"], row["step_bytes"], row["tokens_per_s"], row["cache_share"],
                row["bytes_per_token"]) == (r.cache_bytes, r.step_bytes, r.tokens_per_s,
                                            r.cache_share, r.bytes_per_token)
        seen.add((row["context"], row["engine"], row["kv_type"]))
    # one row per context and engine for each type the engine has, as the cache table
    assert seen == {(r["context"], r["engine"], r["kv_type"]) for r in rep["caches"]}


def test_the_decode_lines_of_llama_on_an_h100():
    cfg = load_config("Llama-3.1-8B")
    rep = im.report(cfg, [8192, 32768, 131072], gpu="H100-SXM", weights_bytes=16_060_522_496,
                    weights_source="counted")
    text = im.format_report(rep)
    lines = text[text.index("Decode roofline"):].splitlines()
    assert lines[0] == "Decode roofline  H100 SXM, 3.35 TB/s; weights 16.06 GB, read once per step"
    # the three engines read the same bytes of a model without sliding layers at these lengths:
    # one row; 32 layers x 4,096 B x n, over 3.35e12 B/s
    assert lines[2].split() == ["8,192", "f16", "llama.cpp,", "vLLM,", "exact", "1.07", "GB",
                                "17.13", "GB", "6.3%", "195.5"]
    assert lines[3].split()[-6:] == ["4.29", "GB", "20.36", "GB", "21.1%", "164.6"]
    assert lines[4].split()[-6:] == ["17.18", "GB", "33.24", "GB", "51.7%", "100.8"]
    flat = " ".join(text.split())
    assert "tokens/s = bandwidth / bytes a step reads" in flat
    assert "(16.06 GB, counted; all of them counted" in flat
    assert "pad(n, 256) in every layer whatever -c is" in flat
    assert "vLLM, as the exact count, reads n tokens per layer" in flat
    assert "mixture of experts" not in flat
    assert max(len(line) for line in lines) <= im.WIDTH


def test_the_decode_table_splits_engines_that_read_differently():
    rep = im.report(load_config("gpt-oss-20b"), [131072], gpu="H200", weights_bytes=13 * GIB,
                    n_seq=4, gpu_memory=141 * 10**9)
    text = im.format_report(rep)
    block = text[text.index("Decode roofline"):]
    assert "cache per seq" in block and "131,072 x 4  f16   llama.cpp " in block
    assert "131,072 x 4  f16   vLLM, exact " in block
    flat = " ".join(block.split())
    assert "as the budget counts them" in flat and "sequences x bandwidth" in flat
    assert "a mixture of experts (num_local_experts)" in flat
    assert "each sequence its own cells" in flat


def test_no_gpu_no_decode_and_the_weights_are_required():
    cfg = load_config("Llama-3.1-8B")
    rep = im.report(cfg, [4096])
    assert rep["decode"] is None and "Decode roofline" not in im.format_report(rep)
    with pytest.raises(ValueError, match=r"^weights_bytes is required with gpu"):
        im.report(cfg, [4096], gpu="L4")
    with pytest.raises(ValueError, match=r"^gpu must be one of"):
        im.report(cfg, [4096], gpu="H100", weights_bytes=1)
    assert im.GPU_CHOICES == tuple(T.GPUS)


_CFG = load_config("gpt-oss-20b")
BAD_INPUTS = [
    Case(im.report, args=(_CFG, [4096]),
         kwargs=dict(engines=["llama.cpp", "vllm"], kv_types=["f16"], n_seq=1,
                     gpu_memory=24 * GIB, weights_bytes=13 * GIB, gpu="RTX-4090"),
         bad=dict(config=st.sampled_from([None, "gpt-oss-20b", [1], 3]),
                  contexts=st.sampled_from([4096, "4096", [], [0], [True], [2.5], None]),
                  engines=st.sampled_from([["sglang"], "vllm", [], ["VLLM"]]),
                  kv_types=st.sampled_from([["q8"], "f16", [], ["F16"]]),
                  n_seq=ints(minimum=1), gpu_memory=ints(minimum=1, none_ok=True),
                  weights_bytes=ints(minimum=0), gpu=choices(im.GPU_CHOICES, none_ok=True),
                  **{"config.num_hidden_layers": ints(minimum=1) | st.just(DELETE)}),
         names={"contexts": "contexts", "engines": "engines", "kv_types": "kv_types"}),
    Case(im.parse_size, args=("24GiB",),
         bad=dict(text=st.sampled_from(["24", "x", "", "-1GiB", None, True, 3.5, "1e3GB"])),
         names={"text": "gpu_memory"}),
    Case(im.parse_context, args=("32K",),
         bad=dict(text=st.sampled_from(["32.5K", "x", "", "-4", None, True, 3.5, 0, "0"])),
         names={"text": "context"}),
    Case(im.format_report, args=(im.report(_CFG, [4096]),),
         bad=dict(rep=st.sampled_from([None, {}, [1], "report"])), names={"rep": "rep"}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
