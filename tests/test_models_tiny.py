"""lessonlib.models.tiny: the tiny model's config.json read once into a TinyConfig, with the
checks and messages TinyLM gives; with_rope_scaling and rope_config as tinylm calls them."""
import copy
import dataclasses

import pytest
from _bad import DELETE, Case, bad_input_tests, flags, ints, reals
from hypothesis import strategies as st

from lessonlib.models import rope as models_rope
from lessonlib.models.tiny import (SHAPE_KEYS, TinyConfig, read_tiny_config, rope_config,
                                   with_rope_scaling)
from lessonlib.tinylm_results import DEFAULT_CONFIG


def _small(**changes):
    return dict(DEFAULT_CONFIG, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                head_dim=8) | changes


def test_the_default_config_reads_as_the_committed_model():
    c = read_tiny_config(DEFAULT_CONFIG)
    assert isinstance(c, TinyConfig)
    assert {k: getattr(c, k) for k in SHAPE_KEYS} == {k: DEFAULT_CONFIG[k] for k in SHAPE_KEYS}
    assert (c.rms_norm_eps, c.tie_word_embeddings, c.rope_theta, c.rope_scaling) == (
        1e-5, True, 10000.0, None)
    assert c.scaling == models_rope.scaling_parameters(DEFAULT_CONFIG)
    assert c.scaling.rotary_dim == 32 and c.scaling.rope_type == "default"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.hidden_size = 64


def test_reading_copies_and_changes_nothing():
    cfg = _small(rope_scaling={"rope_type": "linear", "factor": 2.0})
    before = copy.deepcopy(cfg)
    c = read_tiny_config(cfg)
    assert cfg == before
    assert c.rope_scaling == {"rope_type": "linear", "factor": 2.0}
    cfg["rope_scaling"]["factor"] = 4.0
    assert c.rope_scaling["factor"] == 2.0 and c.scaling.factor == 2.0


def test_defaults_the_model_reads():
    """No tie_word_embeddings: tied (the only layout); no rope_theta: HF's 10,000."""
    cfg = _small()
    del cfg["tie_word_embeddings"], cfg["rope_theta"]
    c = read_tiny_config(cfg)
    assert c.tie_word_embeddings is True and c.rope_theta == 10000.0


@pytest.mark.parametrize("changes, says", [
    (dict(num_hidden_layers=0), r"^num_hidden_layers must be an integer >= 1, got 0"),
    (dict(num_key_value_heads=3), r"^num_attention_heads 4 must be a multiple of "
                                  r"num_key_value_heads 3 \(each KV head serves a whole group"),
    (dict(num_attention_heads=2.0), r"^num_attention_heads must be an integer, got the float"),
    (dict(head_dim=1), r"^head_dim must be an integer >= 2"),
    (dict(head_dim=7), r"head_dim"),
    (dict(rms_norm_eps=0.0), r"^rms_norm_eps must be a number > 0.0"),
    (dict(tie_word_embeddings=False), r"^tie_word_embeddings must be True: this model's output"),
    (dict(tie_word_embeddings="yes"), r"^tie_word_embeddings must be True or False"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 0.5}), r"rope_scaling.factor"),
    (dict(rope_theta=1.0), r"rope_theta"),
])
def test_a_config_that_builds_another_model_is_named(changes, says):
    with pytest.raises(ValueError, match=says):
        read_tiny_config(_small(**changes))


@pytest.mark.parametrize("key", [*SHAPE_KEYS, "rms_norm_eps"])
def test_a_missing_key_is_named(key):
    cfg = _small()
    del cfg[key]
    with pytest.raises(ValueError, match=rf"^config.{key} is missing \(the model reads|"
                                         rf"^config.{key} is missing \(RMSNorm's epsilon"):
        read_tiny_config(cfg)


def test_the_keys_are_checked_in_order():
    """The first bad key is the one named: the shape keys in SHAPE_KEYS' order, then the
    epsilon, the heads, the tying, the rope."""
    with pytest.raises(ValueError, match=r"^vocab_size"):
        read_tiny_config(_small(vocab_size=0, hidden_size=0))
    with pytest.raises(ValueError, match=r"^rms_norm_eps"):
        read_tiny_config(_small(rms_norm_eps=-1.0, num_key_value_heads=3))
    with pytest.raises(ValueError, match=r"^num_attention_heads 4"):
        read_tiny_config(_small(num_key_value_heads=3, tie_word_embeddings=False))


@pytest.mark.parametrize("config", [None, [], "config", 3])
def test_a_config_that_is_not_a_dict_is_named(config):
    with pytest.raises(ValueError, match=r"^config must be a config.json-style dict"):
        read_tiny_config(config)


def test_with_rope_scaling_records_yarns_trained_length():
    out = with_rope_scaling(DEFAULT_CONFIG, {"rope_type": "yarn", "factor": 8.0})
    assert out["rope_scaling"] == {"rope_type": "yarn", "factor": 8.0,
                                   "original_max_position_embeddings": 256}
    assert "rope_scaling" not in DEFAULT_CONFIG  # the config is copied, not changed
    given = {"type": "yarn", "factor": 8.0, "original_max_position_embeddings": 128}
    assert with_rope_scaling(DEFAULT_CONFIG, given)["rope_scaling"] == given
    linear = with_rope_scaling(DEFAULT_CONFIG, {"rope_type": "linear", "factor": 2.0})
    assert linear["rope_scaling"] == {"rope_type": "linear", "factor": 2.0}
    assert "rope_scaling" not in with_rope_scaling(linear, None)
    assert read_tiny_config(out).scaling.original_max == 256


def test_with_rope_scaling_checks_what_it_builds():
    with pytest.raises(ValueError, match=r"^rope_scaling must be a dict"):
        with_rope_scaling(DEFAULT_CONFIG, "yarn")
    with pytest.raises(ValueError, match=r"^config must be a config.json-style dict"):
        with_rope_scaling(None, {"rope_type": "linear", "factor": 2.0})
    with pytest.raises(ValueError, match=r"rope_scaling.factor"):
        with_rope_scaling(DEFAULT_CONFIG, {"rope_type": "linear", "factor": -2.0})
    cfg = dict(DEFAULT_CONFIG)
    del cfg["max_position_embeddings"]
    with pytest.raises(ValueError, match=r"^config.max_position_embeddings is missing: YaRN"):
        with_rope_scaling(cfg, {"rope_type": "yarn", "factor": 8.0})


def test_rope_config_takes_a_rope_of_the_models_head_dim():
    rope = with_rope_scaling(DEFAULT_CONFIG, {"rope_type": "yarn", "factor": 4.0})
    assert rope_config(rope, 32) is rope
    no_head_dim = {k: v for k, v in rope.items() if k != "head_dim"}  # 128 / 4 heads = 32
    assert rope_config(no_head_dim, 32) is no_head_dim
    for other in (dict(DEFAULT_CONFIG, head_dim=16),
                  with_rope_scaling(dict(DEFAULT_CONFIG, head_dim=64),
                                    {"rope_type": "linear", "factor": 2.0})):
        with pytest.raises(ValueError, match=r"^rope.head_dim: the rope config's head dim .* is "
                                             r"not the model's head_dim 32"):
            rope_config(other, 32)
    with pytest.raises(ValueError, match=r"^rope must be a config dict"):
        rope_config("yarn", 32)


_CFG = _small()
_DELETE = st.just(DELETE)
_NOT_A_DICT = st.sampled_from([None, [], "config", 3])

BAD_INPUTS = [
    Case(read_tiny_config, args=(_CFG,),
         bad={"config": _NOT_A_DICT,
              **{f"config.{k}": _DELETE | ints(minimum=1) for k in (
                  "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                  "max_position_embeddings")},
              "config.num_attention_heads": _DELETE | ints(minimum=1) | st.just(3),
              "config.num_key_value_heads": _DELETE | ints(minimum=1) | st.just(3),
              "config.head_dim": _DELETE | ints(minimum=2) | st.just(7),
              "config.rms_norm_eps": _DELETE | reals(above=0.0),
              "config.tie_word_embeddings": flags() | st.just(False),
              "config.rope_theta": reals(above=1.0, none_ok=True),  # None: 10,000
              "config.rope_scaling": st.sampled_from(["linear", 2.0, [("factor", 2.0)]])}),
    Case(read_tiny_config, id="read_tiny_config(PI config)",
         args=(_small(rope_scaling={"rope_type": "linear", "factor": 2.0}),),
         bad={"config.rope_scaling.factor": reals(minimum=1.0)},
         names={"config.rope_scaling.factor": "rope_scaling.factor"}),
    Case(with_rope_scaling, args=(_CFG, {"rope_type": "yarn", "factor": 4.0}),
         bad={"config": _NOT_A_DICT, "config.max_position_embeddings": _DELETE,
              "rope_scaling": st.sampled_from(["yarn", 4.0, [("rope_type", "yarn")]]),
              "rope_scaling.factor": reals(minimum=1.0, none_ok=True),
              "rope_scaling.rope_type": st.sampled_from(["YARN", "yarn2", 3, ["yarn"]])},
         names={"rope_scaling.factor": "rope_scaling.factor",
                "rope_scaling.rope_type": "rope_scaling.rope_type"}),
    Case(rope_config, args=(with_rope_scaling(_CFG, {"rope_type": "yarn", "factor": 4.0}), 8),
         bad={"rope": st.sampled_from(["yarn", 3, [("rope_type", "yarn")]])
                      | st.just(dict(_CFG, head_dim=4)),
              "rope.head_dim": ints(minimum=2, none_ok=True) | st.just(4),  # None: 32 / 4 = 8
              "head_dim": ints(minimum=2)}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
