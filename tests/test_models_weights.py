"""lessonlib.models.weights against transformers' own models (built on the meta device: every parameter,
no memory), the published parameter counts and checkpoint sizes, and each storage rule (bf16,
fp32, MXFP4 blocks, FP8 block scales) recomputed here from HF's tensor list or by hand."""
import copy
import math

import pytest
from _bad import DELETE, Case, bad_input_tests, choices, flags, ints
from _support import needs, optional
from hypothesis import strategies as st

from lessonlib.models import weights as W
from lessonlib.models.configs import config_names, load_config

torch = optional("torch")  # the HuggingFace oracle runs on torch: those tests need it
if torch is not None:
    from transformers import AutoConfig, AutoModelForCausalLM, FineGrainedFP8Config
    from transformers import logging as hf_logging
    from transformers.integrations.finegrained_fp8 import replace_with_fp8_linear

    hf_logging.set_verbosity_error()  # HF warns about the configs we feed it on purpose

MODELS = ["Llama-3.1-8B", "Llama-3.2-1B", "Qwen2.5-7B-Instruct", "DeepSeek-V3", "gpt-oss-20b",
          "Phi-3.5-mini-instruct", "Gemma-3-27B", "Mistral-7B", "tiny-random-qwen2vocab"]
# The shipped configs that record only the attention facts a lesson needs, and the keys a
# weight count needs that each one lacks (all of them are named in the error)
PARTIAL = {"Llama-3-8B-hybrid-3to1": ("model_type", "vocab_size", "intermediate_size"),
           "tiny-gemma3-swa": ("vocab_size", "hidden_size", "intermediate_size")}
# Published parameter counts (model cards; DeepSeek-V3: 671B main model, 685B with its MTP
# module; gpt-oss-20b: 20.9B; Gemma 3 27B: the language model without its 0.4B vision tower)
PUBLISHED = {"Llama-3.1-8B": 8_030_261_248, "Mistral-7B": 7_241_732_096,
             "Qwen2.5-7B-Instruct": 7_615_616_512, "Llama-3.2-1B": 1_235_814_400,
             "Phi-3.5-mini-instruct": 3_821_079_552}
ABOUT = {"gpt-oss-20b": 20.9e9, "DeepSeek-V3": 671e9, "Gemma-3-27B": 27.0e9}


def shrunk(name, layers=2, drop=(), **changes):
    """A shipped config with fewer layers (layer_types cut to match), keys changed or dropped."""
    cfg = load_config(name)
    cfg["num_hidden_layers"] = layers
    if "layer_types" in cfg:
        cfg["layer_types"] = cfg["layer_types"][:layers]
    cfg.update(changes)
    for key in drop:
        cfg.pop(key)
    return cfg


# ---------------------------------------------------------------------------------------------
# The HuggingFace reference: the model transformers builds from the config
# ---------------------------------------------------------------------------------------------

def hf_model(config, dtype=None):
    """AutoModelForCausalLM.from_config on the meta device (shapes only, no memory)."""
    c = {k: v for k, v in copy.deepcopy(config).items() if not k.startswith("_")}
    c.pop("quantization_config", None)
    hf = AutoConfig.for_model(c.pop("model_type"), **c)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(hf, **({"dtype": dtype} if dtype else {}))


def hf_params(config):
    return sum(p.numel() for p in hf_model(config).parameters())  # tied weights once


def stored_buffers(model):
    """Persistent buffers (in the state dict) that are no parameter: e_score_correction_bias."""
    params = {n for n, _ in model.named_parameters()}
    keys = set(model.state_dict())
    return [(n, b) for n, b in model.named_buffers() if n in keys and n not in params]


def hf_bytes(config, dtype_bytes):
    """Checkpoint bytes from HF's tensor list: every parameter at dtype_bytes (MXFP4 experts as
    packed 4-bit values plus a uint8 scale per 32), stored buffers in float32 (as DeepSeek-V3's
    checkpoint stores e_score_correction_bias)."""
    model = hf_model(config)
    mxfp4 = (config.get("quantization_config") or {}).get("quant_method") == "mxfp4"
    total = 0
    for name, p in model.named_parameters():
        if mxfp4 and name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            total += p.numel() // 2 + p.numel() // 32
        else:
            total += p.numel() * dtype_bytes
    return total + sum(4 * b.numel() for _, b in stored_buffers(model))


def hf_fp8_bytes(config):
    """transformers' own FP8 model: replace_with_fp8_linear swaps every nn.Linear but lm_head
    (and the experts) for FP8 weights plus float32 weight_scale_inv blocks; sum its tensors."""
    q = config["quantization_config"]
    model = hf_model(config, dtype=torch.bfloat16)
    replace_with_fp8_linear(model, modules_to_not_convert=["lm_head"], pre_quantized=True,
                            quantization_config=FineGrainedFP8Config(
                                weight_block_size=q["weight_block_size"],
                                activation_scheme="dynamic"))
    total = sum(p.numel() * (2 if name.endswith(".bias") else p.element_size())
                for name, p in model.named_parameters())  # FP8Linear makes its bias float32
    return total + sum(4 * b.numel() for _, b in stored_buffers(model))


# ---------------------------------------------------------------------------------------------
# Every shipped config
# ---------------------------------------------------------------------------------------------

@needs("torch")
@pytest.mark.parametrize("name", MODELS)
def test_params_match_transformers(name):
    config = load_config(name)
    assert W.weight_bytes(config).params == hf_params(config)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_params_match_the_published_counts(name):
    assert W.weight_bytes(load_config(name)).params == PUBLISHED[name]


@pytest.mark.parametrize("name", sorted(ABOUT))
def test_params_match_the_published_sizes(name):
    assert W.weight_bytes(load_config(name)).params == pytest.approx(ABOUT[name], rel=2e-3)


def test_every_shipped_config_is_counted_or_names_what_it_lacks():
    assert sorted(MODELS + list(PARTIAL)) == config_names()
    for name, keys in PARTIAL.items():
        with pytest.raises(ValueError) as err:
            W.weight_bytes(load_config(name))
        for key in keys:
            assert f"'{key}'" in str(err.value), (name, key, str(err.value))


def test_a_type_not_counted_names_the_types_that_are():
    with pytest.raises(ValueError) as err:
        W.weight_bytes(shrunk("Mistral-7B", model_type="mixtral"))
    assert "model_type" in str(err.value) and "'mixtral'" in str(err.value)
    for model_type in W.MODEL_TYPES:
        assert model_type in str(err.value)
    assert W.MODEL_TYPES == ("llama", "mistral", "qwen2", "phi3", "gemma3_text", "gpt_oss",
                             "deepseek_v3")


# ---------------------------------------------------------------------------------------------
# By hand: the formula written out for two models (no torch needed)
# ---------------------------------------------------------------------------------------------

def test_llama_3_1_8b_by_hand():
    V, H, I, L, h_q, h_kv, d = 128256, 4096, 14336, 32, 32, 8, 128
    layer = H * h_q * d * 2 + H * h_kv * d * 2 + 3 * H * I + 2 * H  # q, o; k, v; MLP; 2 norms
    w = W.weight_bytes(load_config("Llama-3.1-8B"))
    assert w.params == 2 * V * H + L * layer + H == 8_030_261_248
    assert (w.bytes, w.dtype) == (2 * w.params, "bfloat16")
    assert "bf16 (torch_dtype): 2 bytes per parameter" in w.assumptions


def test_qwen2_has_qkv_biases_by_hand():
    cfg = load_config("Qwen2.5-7B-Instruct")
    no_bias = W.weight_bytes(dict(cfg, model_type="mistral")).params  # same shapes, no biases
    assert W.weight_bytes(cfg).params - no_bias == 28 * (3584 + 2 * 4 * 128)


def test_gpt_oss_20b_checkpoint_by_hand():
    """13.76 GB: 24 layers of 32 experts in MXFP4 (gate_up 5760 x 2880, down 2880 x 2880:
    half a byte a value plus one scale byte per 32), every other parameter in bf16."""
    w = W.weight_bytes(load_config("gpt-oss-20b"))
    L, E, H, I = 24, 32, 2880, 2880
    expert_values = L * E * (2 * I * H + H * I)
    assert w.bytes == expert_values // 2 + expert_values // 32 + 2 * (w.params - expert_values)
    assert w.bytes == 13_761_264_768 and w.bytes / 1e9 == pytest.approx(13.8, abs=0.05)
    assert w.dtype == "bfloat16"
    assert any(a.startswith("no torch_dtype") and "bf16" in a for a in w.assumptions)
    assert any("MXFP4" in a and "8-bit scale per 32" in a for a in w.assumptions)


def test_fp8_blocks_by_hand():
    """One dense DeepSeek-shaped layer, shapes that are no multiple of 128: every Linear weight
    1 byte a value + 4 bytes per ceil-divided 128 x 128 block; embeddings, norms and lm_head
    bf16; the two MoE layers add experts (fp8), the router gate (bf16) and its float32 bias."""
    cfg = shrunk("DeepSeek-V3", layers=1, hidden_size=200, intermediate_size=300,
                 vocab_size=1000, num_attention_heads=2, num_key_value_heads=2, q_lora_rank=130,
                 kv_lora_rank=100, qk_rope_head_dim=20, qk_nope_head_dim=30, v_head_dim=40)
    H, I, V, h, rq, rkv = 200, 300, 1000, 2, 130, 100
    linears = [(rq, H), (h * 50, rq), (rkv + 20, H), (h * 70, rkv), (H, h * 40),  # MLA
               (I, H), (I, H), (H, I)]  # MLP
    fp8 = sum(o * i + 4 * math.ceil(o / 128) * math.ceil(i / 128) for o, i in linears)
    norms = 2 * (rq + rkv + 2 * H)  # bf16: q_a and kv_a layernorms, the layer's two norms
    bf16 = 2 * (2 * V * H + H) + norms  # embed, lm_head, the final norm
    w = W.weight_bytes(cfg)
    assert w.bytes == fp8 + bf16
    assert w.params == sum(o * i for o, i in linears) + bf16 // 2
    assert any("128x128 block" in a for a in w.assumptions)

    moe = dict(cfg, num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=4,
               moe_intermediate_size=100, n_shared_experts=1)
    experts = 4 * 3 + 3  # routed gate, up, down per expert, and the shared expert's three
    per_moe = (experts * (100 * H + 4 * math.ceil(100 / 128) * math.ceil(H / 128))
               + 2 * 4 * H + 4 * 4)  # router gate (bf16), e_score_correction_bias (float32)
    attention = sum(o * i + 4 * math.ceil(o / 128) * math.ceil(i / 128) for o, i in linears[:5])
    assert W.weight_bytes(moe).bytes == w.bytes + 2 * (attention + norms + per_moe)


# ---------------------------------------------------------------------------------------------
# Bytes: each dtype and quantization rule
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, size", [("bfloat16", 2), ("float16", 2), ("float32", 4)])
def test_bytes_per_dtype(dtype, size):
    w = W.weight_bytes(dict(load_config("Mistral-7B"), torch_dtype=dtype))
    assert (w.bytes, w.dtype) == (size * 7_241_732_096, dtype)
    same = W.weight_bytes({k: v for k, v in dict(load_config("Mistral-7B"), dtype=dtype).items()
                           if k != "torch_dtype"})  # transformers 5 writes "dtype"
    assert (same.params, same.bytes, same.dtype) == (w.params, w.bytes, w.dtype)
    assert any("(dtype)" in a for a in same.assumptions)


@needs("torch")
@pytest.mark.parametrize("name", [n for n in MODELS if n != "DeepSeek-V3"])
def test_bytes_match_hf_tensor_list(name):
    config = dict(load_config(name), torch_dtype="bfloat16")
    assert W.weight_bytes(config).bytes == hf_bytes(config, 2)
    fp32 = dict(config, torch_dtype="float32")
    assert W.weight_bytes(fp32).bytes == hf_bytes(fp32, 4)


@needs("torch")
def test_fp8_bytes_match_transformers_fp8_model():
    """DeepSeek-V3 shrunk (5 layers: 3 dense, 2 MoE of 8 experts) against transformers' own
    FP8 model; then the full model, whose HF FP8 build is as fast on the meta device."""
    small = shrunk("DeepSeek-V3", layers=5, n_routed_experts=8)
    assert W.weight_bytes(small).bytes == hf_fp8_bytes(small)
    assert W.weight_bytes(small).params == hf_params(small)
    full = load_config("DeepSeek-V3")
    w = W.weight_bytes(full)
    assert w.bytes == hf_fp8_bytes(full)
    assert w.bytes / 1e9 == pytest.approx(673.15, abs=0.01)


def test_the_tiny_qwen2_vocabulary_model_by_hand():
    """2 layers of a 256-wide model (Q and O 256 x 256, K and V 256 x 64, biases on Q, K, V;
    SwiGLU 3 x 256 x 512; two norms), the final norm, and two 151,936 x 256 matrices: the
    embedding and the untied output. In float32, 4 bytes each."""
    h, vocab = 256, 151936
    layer = 2 * (h * h + h) + 2 * (h * 64 + 64) + 3 * h * 512 + 2 * h - h  # O has no bias
    w = W.weight_bytes(load_config("tiny-random-qwen2vocab"))
    assert w.params == 2 * vocab * h + 2 * layer + h == 78_907_392
    assert w.bytes == 4 * w.params


def test_deepseek_v3_says_what_is_left_out():
    w = W.weight_bytes(load_config("DeepSeek-V3"))
    assert w.params == 671_026_404_352
    mtp = [a for a in w.assumptions if a.startswith("num_nextn_predict_layers=1")]
    assert len(mtp) == 1 and "not in HF's model" in mtp[0] and "13.5e9 params" in mtp[0]
    assert w.params + 13.5e9 == pytest.approx(685e9, rel=2e-3)  # the published 685B
    assert any("e_score_correction_bias" in a and "float32" in a for a in w.assumptions)
    assert any("FP8 (e4m3)" in a and "128x128 block" in a for a in w.assumptions)


@needs("torch")
def test_mtp_figure_is_hf_decoder_layer_plus_its_projections():
    """The MTP layer's count: one MoE DeepseekV3DecoderLayer as transformers builds it, enorm,
    hnorm and the shared head's norm (H each), eh_proj (H x 2H), and the stored copies of
    embed_tokens and the head (V x H each)."""
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3DecoderLayer
    cfg = load_config("DeepSeek-V3")
    c = {k: v for k, v in cfg.items() if not k.startswith("_") and k != "quantization_config"}
    hf = AutoConfig.for_model(c.pop("model_type"), **c)
    with torch.device("meta"):
        layer = DeepseekV3DecoderLayer(hf, layer_idx=cfg["num_hidden_layers"])
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    mtp = sum(p.numel() for p in layer.parameters()) + 3 * H + 2 * H * H + 2 * V * H
    assert f"{mtp / 1e9:.1f}e9 params" in " ".join(W.weight_bytes(cfg).assumptions)


def test_mxfp4_modules_to_not_convert():
    """Listing the experts of one layer keeps them in bf16 (transformers' should_convert_module
    matches 'model.layers.1.mlp.experts' from the start, not layer 11)."""
    cfg = shrunk("gpt-oss-20b", layers=12)
    base = W.weight_bytes(cfg)
    q = dict(cfg["quantization_config"])
    q["modules_to_not_convert"] = q["modules_to_not_convert"] + ["model.layers.1.mlp.experts"]
    kept = W.weight_bytes(dict(cfg, quantization_config=q))
    values = 32 * (2 * 2880 * 2880 + 2880 * 2880)
    assert kept.bytes - base.bytes == 2 * values - (values // 2 + values // 32)
    assert kept.params == base.params


def test_fp8_modules_to_not_convert_and_block_size():
    """DeepSeek-V3's first (dense) layer: o_proj listed in modules_to_not_convert is stored in
    bf16 without scales; 64 x 256 blocks change every Linear's scale count, ceil-divided."""
    cfg = shrunk("DeepSeek-V3", layers=1)
    base = W.weight_bytes(cfg)
    q = dict(cfg["quantization_config"], modules_to_not_convert=["model.layers.0.self_attn.o_proj"])
    o = 7168 * 128 * 128
    assert W.weight_bytes(dict(cfg, quantization_config=q)).bytes - base.bytes == \
        2 * o - (o + 4 * 56 * 128)
    linears = [(1536, 7168), (24576, 1536), (576, 7168), (32768, 512), (7168, 16384),
               (18432, 7168), (18432, 7168), (7168, 18432)]  # q_a, q_b, kv_a, kv_b, o, MLP
    q = dict(cfg["quantization_config"], weight_block_size=[64, 256])
    assert W.weight_bytes(dict(cfg, quantization_config=q)).bytes - base.bytes == \
        4 * (_blocks(linears, 64, 256) - _blocks(linears, 128, 128))


def _blocks(linears, b_out, b_in):
    return sum(math.ceil(o / b_out) * math.ceil(i / b_in) for o, i in linears)


# ---------------------------------------------------------------------------------------------
# Odd variants, each against transformers
# ---------------------------------------------------------------------------------------------

VARIANTS = {
    "llama tied": shrunk("Llama-3.1-8B", tie_word_embeddings=True),
    "llama untied": shrunk("Llama-3.2-1B", tie_word_embeddings=False),
    "llama tie default": shrunk("Llama-3.2-1B", drop=["tie_word_embeddings"]),
    "llama biases": shrunk("Llama-3.1-8B", attention_bias=True, mlp_bias=True),
    "llama head_dim 96": shrunk("Llama-3.2-1B", head_dim=96),
    "llama MHA": shrunk("Llama-3.2-1B", drop=["num_key_value_heads"]),
    "mistral attention_bias ignored": shrunk("Mistral-7B", attention_bias=True),
    "mistral head_dim 64": shrunk("Mistral-7B", head_dim=64),
    "qwen2 tied": shrunk("Qwen2.5-7B-Instruct", tie_word_embeddings=True),
    "qwen2 head_dim 64": shrunk("Qwen2.5-7B-Instruct", head_dim=64),
    "phi3 GQA head_dim 64": shrunk("Phi-3.5-mini-instruct", num_key_value_heads=8, head_dim=64,
                                   drop=["rope_scaling"]),  # its longrope lists fit d_h 96
    "phi3 attention_bias ignored": shrunk("Phi-3.5-mini-instruct", attention_bias=True),
    "gemma3 untied": shrunk("Gemma-3-27B", tie_word_embeddings=False),
    "gemma3 tie default": shrunk("Gemma-3-27B", drop=["tie_word_embeddings"]),
    "gemma3 attention_bias": shrunk("Gemma-3-27B", attention_bias=True, head_dim=256),
    "gpt_oss 4 experts": shrunk("gpt-oss-20b", num_local_experts=4, intermediate_size=1024),
    "gpt_oss no attention_bias": shrunk("gpt-oss-20b", attention_bias=False),
    "gpt_oss tied": shrunk("gpt-oss-20b", tie_word_embeddings=True),
    "deepseek shrunk MoE": shrunk("DeepSeek-V3", layers=4, first_k_dense_replace=1,
                                  n_routed_experts=16, n_shared_experts=2, n_group=4,
                                  topk_group=2, num_experts_per_tok=4),
    "deepseek no q LoRA": shrunk("DeepSeek-V3", layers=3, first_k_dense_replace=2,
                                 n_routed_experts=8, q_lora_rank=None, attention_bias=True),
    "deepseek all dense": shrunk("DeepSeek-V3", layers=2, first_k_dense_replace=5),
}


@needs("torch")
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_match_transformers(name):
    config = VARIANTS[name]
    w = W.weight_bytes(config)
    assert w.params == hf_params(config)
    if not config.get("quantization_config"):
        assert w.bytes == hf_bytes(config, 2)
    elif config["quantization_config"]["quant_method"] == "fp8":
        assert w.bytes == hf_fp8_bytes(config)
    else:
        assert w.bytes == hf_bytes(config, 2)


def test_variants_differ_where_the_structure_does():
    """No torch needed: the counts move by the tensors each switch adds (so the oracle test
    above compares different numbers, not one number eight times)."""
    V, H = 128256, 2048
    untied = W.weight_bytes(VARIANTS["llama untied"]).params
    assert untied - W.weight_bytes(shrunk("Llama-3.2-1B")).params == V * H
    assert W.weight_bytes(VARIANTS["llama tie default"]).params == untied  # llama: untied
    llama = shrunk("Llama-3.1-8B")
    assert W.weight_bytes(VARIANTS["llama biases"]).params - W.weight_bytes(llama).params == \
        2 * (4096 + 1024 + 1024 + 4096 + 2 * 14336 + 4096)
    assert W.weight_bytes(VARIANTS["mistral attention_bias ignored"]).params == \
        W.weight_bytes(shrunk("Mistral-7B")).params
    said = W.weight_bytes(VARIANTS["mistral attention_bias ignored"]).assumptions
    assert any(a.startswith("attention_bias: true is not read") for a in said)
    tie = W.weight_bytes(VARIANTS["gemma3 tie default"]).assumptions
    assert any("tied" in a and "gemma3_text's default tie_word_embeddings=true" in a for a in tie)


def test_nested_text_config_counts_the_language_model():
    flat = load_config("Llama-3.2-1B")
    assert W.weight_bytes({"text_config": flat}) == W.weight_bytes(flat)
    with pytest.raises(ValueError, match=r"vision_config.*text_config"):
        W.weight_bytes({"text_config": flat, "vision_config": {"hidden_size": 1152}})


# ---------------------------------------------------------------------------------------------
# Errors that name what is wrong
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config, says", [
    (shrunk("Llama-3.1-8B", drop=["torch_dtype"]), "'torch_dtype'"),
    (dict(shrunk("Llama-3.1-8B"), dtype="float16"), "torch_dtype 'bfloat16' and dtype 'float16'"),
    (shrunk("Llama-3.1-8B", torch_dtype="int8"), "torch_dtype must be one of"),
    (shrunk("Gemma-3-27B", drop=["head_dim"]), "'head_dim'"),
    (shrunk("Mistral-7B", drop=["num_key_value_heads"]), "'num_key_value_heads'"),
    (shrunk("gpt-oss-20b", drop=["num_local_experts"]), "'num_local_experts'"),
    (shrunk("DeepSeek-V3", drop=["q_lora_rank"]), "'q_lora_rank'"),
    (shrunk("DeepSeek-V3", moe_layer_freq=2), "moe_layer_freq"),
    (shrunk("Llama-3.1-8B", quantization_config={"quant_method": "gptq"}),
     "quantization_config.quant_method must be one of mxfp4, fp8"),
    (shrunk("Llama-3.1-8B", quantization_config={"quant_method": "mxfp4"}),
     "quantizes gpt_oss's experts only"),
    (shrunk("DeepSeek-V3", quantization_config={"quant_method": "fp8"}),
     "'quantization_config.weight_block_size'"),
    (shrunk("gpt-oss-20b", intermediate_size=2888), "intermediate_size, which is 2888"),
    (shrunk("DeepSeek-V3", drop=["torch_dtype"]), "'torch_dtype'"),  # fp8 says nothing of it
])
def test_errors_name_the_key(config, says):
    with pytest.raises(ValueError) as err:
        W.weight_bytes(config)
    assert says in str(err.value)


# ---------------------------------------------------------------------------------------------
# Bad inputs (tests/_bad.py)
# ---------------------------------------------------------------------------------------------

_SHAPE = ints(minimum=1) | st.just(DELETE)
_LLAMA = shrunk("Llama-3.2-1B")
_OSS = shrunk("gpt-oss-20b")
_DSV3 = shrunk("DeepSeek-V3", layers=4)

BAD_INPUTS = [
    Case(W.weight_bytes, args=(_LLAMA,),
         bad={"config": st.one_of(st.none(), st.integers(), st.just("Llama-3.2-1B"),
                                  st.just([_LLAMA])),
              "config.model_type": choices(W.MODEL_TYPES) | st.sampled_from(["gemma3", DELETE]),
              "config.vocab_size": _SHAPE, "config.hidden_size": _SHAPE,
              "config.intermediate_size": _SHAPE, "config.num_hidden_layers": _SHAPE,
              "config.num_attention_heads": _SHAPE | st.just(7),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True) | st.just(3),
              "config.head_dim": ints(minimum=1, none_ok=True),
              "config.tie_word_embeddings": flags(), "config.attention_bias": flags(),
              "config.mlp_bias": flags(),
              "config.torch_dtype": choices(W.DTYPE_BYTES) | st.sampled_from(["bf16", DELETE]),
              "config.quantization_config": st.one_of(st.just("fp8"), st.integers(),
                                                      st.just(["mxfp4"])),
              "config.quantization_config.quant_method": choices(W.QUANT_METHODS)}),
    Case(W.weight_bytes, args=({"text_config": _LLAMA},), id="weight_bytes[text_config]",
         bad={"config.vision_config": st.just({"model_type": "siglip_vision_model"}),
              "config.text_config.vocab_size": _SHAPE},
         names={"config.text_config.vocab_size": "vocab_size"}),
    Case(W.weight_bytes, args=(_OSS,), id="weight_bytes[gpt_oss]",
         bad={"config.num_local_experts": _SHAPE, "config.head_dim": _SHAPE,
              "config.num_key_value_heads": _SHAPE | st.just(5),
              "config.intermediate_size": _SHAPE | st.sampled_from([2881, 100]),
              "config.torch_dtype": choices(W.DTYPE_BYTES, none_ok=True),
              "config.quantization_config.modules_to_not_convert": st.one_of(
                  st.just("lm_head"), st.just([1]), st.integers(), st.just({"lm_head": 1}))}),
    Case(W.weight_bytes, args=(_DSV3,), id="weight_bytes[deepseek_v3]",
         bad={"config.q_lora_rank": ints(minimum=1, none_ok=True) | st.just(DELETE),
              "config.kv_lora_rank": _SHAPE, "config.qk_rope_head_dim": _SHAPE,
              "config.qk_nope_head_dim": _SHAPE, "config.v_head_dim": _SHAPE,
              "config.n_routed_experts": _SHAPE, "config.moe_intermediate_size": _SHAPE,
              "config.first_k_dense_replace": ints(minimum=0) | st.just(DELETE),
              "config.n_shared_experts": ints(minimum=0) | st.just(DELETE),
              "config.moe_layer_freq": ints(minimum=1, none_ok=True) | st.just(2),
              "config.num_nextn_predict_layers": ints(minimum=0, none_ok=True),
              "config.quantization_config.weight_block_size": st.one_of(
                  st.none(), st.just([128]), st.just([0, 128]), st.just([128.0, 128]),
                  st.just("128"), st.just([128, True]), st.just(128)),
              "config.quantization_config.activation_scheme": choices(["dynamic"], none_ok=True),
              "config.quantization_config.fmt": choices(["e4m3", "e5m2"], none_ok=True)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
