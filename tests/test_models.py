"""lessonlib.models: a config read once into a Model, against the readers it replaces."""
import copy
import pickle

import pytest

from lessonlib import kv_cache as kc
from lessonlib import rope
from lessonlib.models import weights
from lessonlib.models.configs import config_names, load_config
from lessonlib.models import Model, int_key, load_model, text_config

READABLE = [c for c in config_names() if c != "tiny-gemma3-swa"]  # that one has no heads


@pytest.mark.parametrize("name", READABLE)
def test_a_model_holds_what_the_readers_read_from_its_config(name):
    cfg, model = load_config(name), load_model(name)
    assert isinstance(model, dict) and dict(model) == cfg and model.name == name
    assert model.shape == kc.model_shape(cfg)
    assert model.windows == tuple(kc.layer_windows(cfg))
    assert model.llamacpp_windows == tuple(kc.llamacpp_layer_windows(cfg))
    assert model.scaling == rope.scaling_parameters(text_config(cfg))
    assert model.mla == ("kv_lora_rank" in text_config(cfg))
    try:
        w = weights.weight_bytes(cfg)
    except ValueError as err:
        assert model.weights is None and model.params is None and model.params_note == str(err)
    else:
        assert (model.params, model.dtype, model.weights.bytes) == (w.params, w.dtype, w.bytes)
    # compute given the Model answers what it answers for the dict
    for kv_type in ("f16", "q8_0"):
        assert kc.kv_cell_bytes(model, kv_type) == kc.kv_cell_bytes(cfg, kv_type)
    assert kc.vllm_kv_cache_groups(model) == kc.vllm_kv_cache_groups(cfg)
    assert kc.kv_cache_bytes(model, 40_000) == kc.kv_cache_bytes(cfg, 40_000)


def test_a_model_is_read_only_and_a_copy_of_its_source():
    cfg = load_config("Llama-3.1-8B")
    model = load_model(cfg)
    cfg["num_key_value_heads"] = 32
    cfg["rope_scaling"]["factor"] = 1.0
    assert model["num_key_value_heads"] == 8 and model["rope_scaling"]["factor"] == 8.0
    assert model.name == "llama"  # a dict's model_type, unless named
    for write in (lambda: model.__setitem__("x", 1), lambda: model.update(x=1),
                  lambda: model.pop("vocab_size"), lambda: model.clear(),
                  lambda: setattr(model, "name", "x")):
        with pytest.raises(TypeError, match="read-only"):
            write()
    assert load_model(model) is model and load_model(model, name="L").name == "L"
    assert pickle.loads(pickle.dumps(model)).shape == model.shape
    assert copy.deepcopy(model) is model
    # the memo keeps a shared list from being changed through what compute returns
    groups = kc.vllm_kv_cache_groups(model)[1]
    groups.clear()
    assert kc.vllm_kv_cache_groups(model)[1]


def test_a_model_from_a_gguf_file(tmp_path):
    from lessonlib.models.gguf import write_gguf
    path = tmp_path / "llama.gguf"
    write_gguf(str(path), load_config("Llama-3.1-8B"))
    model = load_model(path)
    assert model.name == "llama" and model.shape == kc.model_shape(load_config("Llama-3.1-8B"))
    assert load_model(str(path)).shape == model.shape


@pytest.mark.parametrize("source, says", [
    (3, "source must be a config name, a config.json dict, a .gguf path or a Model"),
    ("Llama-9", "unknown config name 'Llama-9'"),
    ({"num_hidden_layers": 2}, "num_attention_heads"),
    (dict(load_config("Llama-3.1-8B"), num_key_value_heads=3), "num_key_value_heads must divide"),
    (dict(load_config("Llama-3.1-8B"), rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                      "original_max_position_embeddings": 8192,
                                                      "attention_factor": 0}),
     "attention_factor"),
])
def test_a_config_that_cannot_be_read_fails_once_naming_its_key(source, says):
    with pytest.raises(ValueError, match=says):
        load_model(source)


def test_the_readers():
    nested = {"text_config": {"num_hidden_layers": 2}, "vision_config": {}}
    assert text_config(nested) == {"num_hidden_layers": 2}
    assert int_key({"n": 3}, "n") == 3
    with pytest.raises(ValueError, match="config is missing 'n'"):
        int_key({"n": None}, "n")
    with pytest.raises(ValueError, match="config must be a dict"):
        text_config([1])
    with pytest.raises(ValueError, match="name must be a string"):
        load_model("Llama-3.1-8B", name=3)
