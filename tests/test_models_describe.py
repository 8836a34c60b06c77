"""lessonlib.models.describe: what inspect reports about a config beyond shape and RoPE."""
import numpy as np
import pytest
from hypothesis import strategies as st

from lessonlib.models import describe
from lessonlib.models.configs import config_names, load_config

from _bad import Case, bad_input_tests, ints

NOT_A_DICT = st.one_of(st.none(), st.integers(), st.text(max_size=4), st.just([1, 2]))


def test_learned_sinks_are_gpt_oss_s_or_what_a_gguf_says():
    assert describe.learned_sinks(load_config("gpt-oss-20b"))
    assert not describe.learned_sinks(load_config("Llama-3.1-8B"))
    assert describe.learned_sinks({"model_type": "llama", "_gguf_sinks": True})
    assert not describe.learned_sinks({"model_type": "gpt_oss", "_gguf_sinks": False})


def test_trained_lengths():
    llama = load_config("Llama-3.1-8B")
    assert describe.max_position_embeddings(llama) == 131072
    assert describe.max_position_embeddings({"model_type": "x"}) is None
    assert describe.llamacpp_n_ctx_train(llama) == 131072
    assert describe.llamacpp_n_ctx_train({**llama, "_gguf_context_length": 8192}) == 8192


def test_mla_dimensions_are_deepseek_s_keys():
    ds = load_config("DeepSeek-V3")
    dims = describe.mla_dimensions(ds)
    assert dims == {k: ds[k] for k in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                                       "qk_rope_head_dim", "v_head_dim")}
    assert dims["kv_lora_rank"] == 512
    assert describe.mla_dimensions(load_config("Llama-3.1-8B")) is None


def test_rope_layer_types():
    assert describe.rope_layer_types(load_config("Llama-3.1-8B")) == [None]
    assert describe.rope_layer_types(load_config("Gemma-3-27B")) == ["full_attention",
                                                                     "sliding_attention"]
    nested = {"rope_parameters": {"full_attention": {"rope_type": "default"},
                                  "sliding_attention": None}}
    assert describe.rope_layer_types(nested) == ["full_attention"]


def test_gguf_rope_freqs_splits_the_tensor_off():
    llama = load_config("Llama-3.1-8B")
    assert describe.gguf_rope_freqs(llama) == (None, llama)
    factors, plain = describe.gguf_rope_freqs({**llama, "_gguf_rope_freqs": [1.0, 8.0]})
    assert factors.dtype == np.float64 and factors.tolist() == [1.0, 8.0]
    assert plain == llama


def test_config_warnings():
    qwen = load_config("Qwen2.5-7B-Instruct")
    bare = {k: v for k, v in qwen.items() if k != "rope_scaling"}
    words = describe.config_warnings(bare)
    assert any(w.startswith("no rope_scaling: this family's model cards (qwen2)") for w in words)
    assert any("is switched off by use_sliding_window: false" in w for w in words)
    no_l0 = {**load_config("Llama-3.1-8B"), "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    assert describe.config_warnings(no_l0) == [
        "rope_scaling has no original_max_position_embeddings: HF and vLLM take the trained "
        "length from max_position_embeddings, which a long-context config has often already "
        "raised"]
    assert describe.config_warnings(load_config("Llama-3.1-8B")) == []


@pytest.mark.parametrize("name", config_names())
def test_every_shipped_config_is_described(name):
    cfg = load_config(name)
    for f in (describe.learned_sinks, describe.max_position_embeddings,
              describe.llamacpp_n_ctx_train, describe.mla_dimensions, describe.rope_layer_types,
              describe.gguf_rope_freqs, describe.config_warnings):
        f(cfg)


_CFG = load_config("Qwen2.5-7B-Instruct")
BAD_INPUTS = [
    Case(describe.learned_sinks, args=(_CFG,), bad={"config": NOT_A_DICT}),
    Case(describe.gguf_rope_freqs, args=(_CFG,), bad={"config": NOT_A_DICT}),
    Case(describe.max_position_embeddings, args=(_CFG,),
         bad={"config.max_position_embeddings": ints(minimum=1, none_ok=True)}),
    Case(describe.llamacpp_n_ctx_train, args=(_CFG,),
         bad={"config.max_position_embeddings": ints(minimum=1, none_ok=True)}),
    Case(describe.mla_dimensions, args=(_CFG,), bad={"config": NOT_A_DICT}),
    Case(describe.rope_layer_types, args=(_CFG,), bad={"config": NOT_A_DICT}),
    Case(describe.config_warnings, args=(_CFG,),
         bad={"config.use_sliding_window": st.sampled_from(["false", 0, 1, "no"]),
              "config.sliding_window": ints(minimum=1, none_ok=True)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
