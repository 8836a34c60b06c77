"""lessonlib.models.shape: the readers added beside model_shape (attention_keys, the keys a
config gives as it gives them)."""
import pytest
from hypothesis import strategies as st

from lessonlib.models import Model
from lessonlib.models.configs import config_names, load_config
from lessonlib.models.shape import AttentionKeys, attention_keys, model_shape

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

BAD_INPUTS = [
    Case(attention_keys, args=(GQA8,),
         bad={"config": st.sampled_from([None, 3, "x", [GQA8]]),
              "config.num_hidden_layers": ints(minimum=1, none_ok=True),
              "config.num_attention_heads": ints(minimum=1, none_ok=True),
              "config.num_key_value_heads": ints(minimum=1, none_ok=True),
              "config.head_dim": ints(minimum=1, none_ok=True)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
