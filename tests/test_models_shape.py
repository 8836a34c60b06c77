"""lessonlib.models.shape: the single readers beside model_shape (latent, layers, heads, head
dims, model_type, dimensions, experts, the window switch) and attention_keys (the keys a config
gives, as it gives them). model_shape and the layer windows are tested in test_kv_cache.py."""
import pytest
from hypothesis import strategies as st

from lessonlib.models import Model, load_model
from lessonlib.models.configs import config_names, load_config
from lessonlib.models import shape as S
from lessonlib.models.shape import AttentionKeys, attention_keys, model_shape

_DS = load_config("DeepSeek-V3")
_DIMS = {"hidden_size": 64, "vocab_size": 100}
_SWA = {"sliding_window": 4096, "use_sliding_window": True}
GQA8 = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 16}


def test_attention_keys_are_the_keys_as_given():
    keys = attention_keys(load_config("Llama-3.1-8B"))
    assert keys == AttentionKeys(nested=False, layers=32, heads=32, kv_heads=8, head_dim=None,
                                 hidden_size=4096, kv_lora_rank=None, qk_rope_head_dim=None)
    assert keys.divided_head_dim == 128
    ds = attention_keys(load_config("DeepSeek-V3"))
    assert (ds.kv_lora_rank, ds.qk_rope_head_dim, ds.head_dim) == (512, 64, None)
    tiny = attention_keys(load_config("tiny-gemma3-swa"))  # no num_attention_heads, no hidden_size
    assert (tiny.heads, tiny.hidden_size, tiny.kv_heads, tiny.head_dim) == (None, None, 2, 32)
    assert tiny.divided_head_dim is None


def test_attention_keys_null_is_absent_and_nothing_is_derived():
    keys = attention_keys(dict(GQA8, num_key_value_heads=None, head_dim=None))
    assert (keys.kv_heads, keys.head_dim, keys.hidden_size) == (None, None, None)
    assert model_shape(dict(GQA8, num_key_value_heads=None)).kv_heads == 8  # derived there


@pytest.mark.parametrize("hidden, heads, d_h", [(4096, 32, 128), (100, 3, None), (None, 4, None),
                                                (64, None, None)])
def test_divided_head_dim_only_where_the_heads_divide(hidden, heads, d_h):
    cfg = {"num_hidden_layers": 1, "num_attention_heads": heads, "hidden_size": hidden}
    assert attention_keys(cfg).divided_head_dim == d_h


def test_attention_keys_read_the_text_config_of_a_multimodal_config():
    keys = attention_keys({"model_type": "llava", "text_config": dict(GQA8),
                           "vision_config": {"num_hidden_layers": 27, "head_dim": 72}})
    assert keys.nested and (keys.layers, keys.heads, keys.kv_heads, keys.head_dim) == (4, 8, 2, 16)
    assert not attention_keys(dict(GQA8, text_config={"num_hidden_layers": 9})).nested


@pytest.mark.parametrize("name", config_names())
def test_attention_keys_agree_with_the_shape_where_given(name):
    keys, cfg = attention_keys(load_config(name)), load_config(name)
    assert keys == attention_keys(Model(cfg, name))  # a Model reads alike
    if keys.heads is not None and keys.kv_lora_rank is None:
        shape = model_shape(cfg)
        assert (keys.layers, keys.heads) == (shape.layers, shape.heads)
        assert (keys.head_dim or keys.divided_head_dim) == shape.head_dim
        assert (keys.kv_heads or keys.heads) == shape.kv_heads


@pytest.mark.parametrize("value", [0, -1, 2.5, "8", True])
def test_attention_keys_check_what_is_given(value):
    with pytest.raises(ValueError, match="num_attention_heads"):
        attention_keys(dict(GQA8, num_attention_heads=value))


from _bad import Case, bad_input_tests, ints  # noqa: E402

def test_the_single_readers_on_real_configs():
    llama, ds = load_config("Llama-3.1-8B"), load_config("DeepSeek-V3")
    assert S.latent(llama) is None
    assert S.latent(ds) == S.Latent(512, 64, 1536) and S.latent(ds).width == 576
    assert (S.layers(llama), S.query_heads(llama), S.kv_heads(llama)) == (32, 32, 8)
    assert S.head_dims(llama) == (128, 128) and S.head_dims(ds) == (192, 128)
    assert S.model_type(llama) == "llama" and S.model_type({"num_hidden_layers": 2}) == ""
    assert S.int_dimension(llama, "vocab_size") == 128256
    assert S.experts_key(llama) is None
    assert S.experts_key(load_config("gpt-oss-20b")) == "num_local_experts"
    assert S.experts_key(ds) == "n_routed_experts"
    qwen = load_config("Qwen2.5-7B-Instruct")
    assert S.sliding_window(qwen) == (qwen["sliding_window"], True)  # use_sliding_window: false
    assert S.sliding_window(load_config("Mistral-7B")) == (4096, False)
    assert S.sliding_window(llama) == (None, False)


def test_a_models_facts_are_the_readers_answers():
    for name in config_names():
        if name.startswith("tiny-"):
            continue
        cfg, model = load_config(name), load_model(name)
        assert model.latent == S.latent(cfg) and model.mla == (S.latent(cfg) is not None)
        assert model.model_type == S.model_type(cfg)
        assert model.experts_key == S.experts_key(cfg)
        if "vocab_size" in cfg:  # the hypothetical 3:1 hybrid has none
            assert model.vocab_size == S.int_dimension(cfg, "vocab_size")
        assert S.latent(model) is model.latent  # a Model answers with what it read


def test_int_dimension_reads_only_the_dimensions_it_names():
    with pytest.raises(ValueError, match="key must be one of vocab_size, hidden_size, "
                                         "intermediate_size, got 'head_dim'"):
        S.int_dimension(GQA8, "head_dim")
    with pytest.raises(ValueError, match="config is missing 'vocab_size'"):
        S.int_dimension(GQA8, "vocab_size")


BAD_INPUTS = [
    Case(attention_keys, args=(GQA8,),
         bad={"config": st.sampled_from([None, 3, "x", [GQA8]]),
              "config.num_hidden_layers": ints(minimum=1, none_ok=True),
              "config.num_attention_heads": ints(minimum=1, none_ok=True),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True),
              "config.head_dim": ints(minimum=1, none_ok=True)}),
    Case(S.latent, args=(_DS,), bad={"config.kv_lora_rank": ints(minimum=1, none_ok=True),
                                     "config.qk_rope_head_dim": ints(minimum=1),
                                     "config.q_lora_rank": ints(minimum=1, none_ok=True)}),
    Case(S.layers, args=(GQA8,), bad={"config.num_hidden_layers": ints(minimum=1)}),
    Case(S.query_heads, args=(GQA8,), bad={"config.num_attention_heads": ints(minimum=1)}),
    Case(S.kv_heads, args=(GQA8,), bad={"config.num_key_value_heads": ints(minimum=1, none_ok=True)
                                        | st.just(3) | st.just(16)}),
    Case(S.head_dims, args=(GQA8,), bad={"config.head_dim": ints(minimum=1, none_ok=True)}),
    Case(S.model_type, args=(GQA8,), bad={"config": st.sampled_from([None, 3, "x", [GQA8]])}),
    Case(S.int_dimension, args=(_DIMS, "hidden_size"),
         bad={"config.hidden_size": ints(minimum=1), "key": st.sampled_from(
             ["head_dim", "HIDDEN_SIZE", "", None, 3])}),
    Case(S.experts_key, args=(GQA8,), bad={"config": st.sampled_from([None, 3, "x", [GQA8]])}),
    Case(S.sliding_window, args=(_SWA,), bad={"config.sliding_window": ints(minimum=1, none_ok=True),
                                              "config.use_sliding_window": st.sampled_from(
                                                  ["false", 0, 1, "no", None])}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
