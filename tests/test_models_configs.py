"""lessonlib.models.configs: the real models' config.json files, loaded by exact name."""
import json
import pathlib

import pytest
from _bad import Case, bad_input_tests, texts
from hypothesis import strategies as st

from lessonlib.models.configs import config_dict, config_from_text, config_names, load_config


def test_every_name_loads_a_fresh_dict():
    names = config_names()
    assert names == sorted(names) and "Llama-3.1-8B" in names
    for name in names:
        cfg = load_config(name)
        assert isinstance(cfg, dict) and json.loads(json.dumps(cfg)) == cfg
    a = load_config("Llama-3.1-8B")
    a["rope_theta"] = 1.0  # safe to modify: the next load is untouched
    assert load_config("Llama-3.1-8B")["rope_theta"] == 500000.0


@pytest.mark.parametrize("name", [None, 3, b"Llama-3.1-8B", ["Llama-3.1-8B"],
                                  {"name": "Llama-3.1-8B"}, 3.5])
def test_a_name_that_is_not_a_string_is_named(name):
    """load_config([...]) or load_config(None) said "unknown config name" as if misspelt."""
    with pytest.raises(ValueError, match=r"^name must be a string, got "):
        load_config(name)


@pytest.mark.parametrize("name, near", [("llama-3.1-8b", "Llama-3.1-8B"),
                                        ("Llama-3.1-8b", "Llama-3.1-8B"),
                                        ("gpt-oss-20B", "gpt-oss-20b"), ("Llama-3-8B", None),
                                        ("", None), (" Llama-3.1-8B", "Llama-3.1-8B")])
def test_an_unknown_name_lists_the_names_and_a_near_miss(name, near):
    with pytest.raises(ValueError) as err:
        load_config(name)
    message = str(err.value)
    assert message.startswith("name must be one of the configs here (DeepSeek-V3, ")
    assert f"unknown config name {name!r}" in message
    if near:
        assert message.endswith(f"did you mean {near!r}?")


def test_config_dict_loads_a_name_or_copies_a_dict():
    """The one reader of "a config name or a config.json dict" (every widget factory's)."""
    assert config_dict("Gemma-3-27B") == json.loads(
        (pathlib.Path(__file__).parents[1] / "lessonlib/models/configs/Gemma-3-27B.json").read_text())
    given = {"num_hidden_layers": 2, "head_dim": 8}
    copy = config_dict(given)
    assert copy == given and copy is not given
    copy["head_dim"] = 16  # safe to modify: the caller's dict is untouched
    assert given["head_dim"] == 8


@pytest.mark.parametrize("config, name, says", [
    ("llama-3.1-8b", "models", "models: name must be one of the configs here ("),
    (3, "mla_config", "mla_config must be a config name or a config.json dict, got 3"),
    (["Llama-3.1-8B"], "config", "config must be a config name or a config.json dict, got ["),
])
def test_config_dict_errors_name_the_argument(config, name, says):
    with pytest.raises(ValueError) as err:
        config_dict(config, name)
    assert str(err.value).startswith(says)


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "gpt-oss-20b", "DeepSeek-V3"])
def test_config_from_text_reads_the_shipped_files(name):
    text = (pathlib.Path(__file__).parent.parent / "lessonlib" / "models" / "configs" / f"{name}.json").read_text()
    assert config_from_text(text) == load_config(name)


@pytest.mark.parametrize("text, says", [
    ('{"num_hidden_layers": 32,\n "x": }', "my.json: not valid JSON (line 2, column 7: Expecting value)"),
    ("[1, 2]", "my.json: a config.json holds one JSON object, this holds a list"),
    ("  \n", "my.json is empty"),
])
def test_config_from_text_names_what_breaks(text, says):
    with pytest.raises(ValueError) as err:
        config_from_text(text, "my.json")
    assert str(err.value).startswith(says)


BAD_INPUTS = [
    Case(config_from_text, args=('{"a": 1}', "config.json"),
         bad=dict(text=st.sampled_from([None, 3, b"{}", ["{}"]]), name=texts())),
    Case(load_config, args=("Llama-3.1-8B",),
         bad=dict(name=texts() | st.sampled_from(["llama-3.1-8b", "Llama-3.1-8B.json", "nope",
                                                  "../configs/Llama-3.1-8B"]))),
    Case(config_dict, args=("Llama-3.1-8B", "models"),
         bad=dict(config=st.sampled_from([None, 3, 2.5, b"Llama-3.1-8B", ["Llama-3.1-8B"],
                                          "llama-3.1-8b", "nope"]),
                  name=texts()),
         names={"config": "models"}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
