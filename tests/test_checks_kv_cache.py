"""lessonlib.checks.kv_cache: the reference solutions pass, typical mistakes get their hint."""

import numpy as np
import pytest
from _support import optional, solutions

from lessonlib.checks import kv_cache as checks

SOLUTIONS = vars(solutions("05_kv_cache"))
GIB = 2 ** 30
NAMES = ["kv_cache_gib", "mla_cache_gib", "kv_head_map", "llamacpp_cache_mib"]


# Qwen2.5-7B: 28 layers, 28 query heads, 4 KV heads, head_dim 128; 32,768 tokens, F16.
QWEN = dict(layers=28, hq=28, hkv=4, d=128, n=32768)


@pytest.mark.parametrize("answer, hint", [
    (2 * 28 * 4 * 128 * 2 * 32768 / GIB, None),
    (28 * 4 * 128 * 2 * 32768 / GIB, "key AND a value"),          # forgot the factor 2
    (2 * 28 * 28 * 128 * 2 * 32768 / GIB, "query heads"),          # query heads, not KV heads
    (28 * 4 * 128 * 32768 / GIB, "Both factors of 2"),
    (2 * 4 * 128 * 2 * 32768 / GIB, "one layer"),
    (2 * 28 * 4 * 128 * 2 * 32768 / 1e9, "2**30"),
    (3.0, "Not 3"),
    ("1.75", "one finite number"),
])
def test_kv_cache_gib_hints(answer, hint):
    verdict = checks.kv_cache_gib(answer)
    if hint is None:
        assert verdict.ok is True
    else:
        assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("answer, hint", [
    (2 * 576 * 61 * 2 * 163840 / GIB, "no separate V"),               # doubled like K and V
    (512 * 61 * 2 * 163840 / GIB, "RoPE key"),                         # forgot the rope part
    (576 * 61 * 2 * 163840 * 128 / GIB, "shared by all heads"),
    (576 * 2 * 163840 / GIB, "one layer"),
    (61 * 128 * (192 + 128) * 2 * 163840 / GIB, "without MLA"),
    (576 * 61 * 163840 / GIB, "bytes"),
])
def test_mla_cache_gib_hints(answer, hint):
    verdict = checks.mla_cache_gib(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("answer, hint", [
    ([h % 8 for h in range(32)], "round-robin"),
    ([h // 8 for h in range(32)], "group size"),
    (list(range(32)), "MHA"),
    ([0, 1, 2, 3, 4, 5, 6, 7], "one entry per query head"),
    ([h // 4 + 1 for h in range(32)], "numbered 0..7"),
    ([h // 4 for h in range(31)] + [6], "check head 31"),
    ("0000", "list of 32 integers"),
])
def test_kv_head_map_hints(answer, hint):
    verdict = checks.kv_head_map(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_kv_head_map_accepts_arrays():
    import numpy as np
    assert checks.kv_head_map(np.arange(32) // 4).ok is True


# ------------------------------------------------------------------ answers in every form


torch = optional("torch")


def test_kv_head_map_computed_with_slash_is_wrong_with_the_floor_division_hint():
    verdict = checks.kv_head_map([h / 4 for h in range(32)])  # 0, 0.25, 0.5, ...: not truncated
    assert verdict.ok is False and "//" in verdict.message and "fractions" in verdict.message
    verdict = checks.kv_head_map(np.arange(32) / 8)  # another division, still not whole
    assert verdict.ok is False and "not a whole number" in verdict.message
    assert "//" in verdict.message


@pytest.mark.parametrize("answer", [
    np.floor(np.arange(32) / 4),               # whole floats: the right indices
    tuple(h // 4 for h in range(32)),
    map(lambda h: h // 4, range(32)),
    [np.int64(h // 4) for h in range(32)],
])
def test_kv_head_map_accepts_whole_numbers_in_any_container(answer):
    assert checks.kv_head_map(answer).ok is True


@pytest.mark.parametrize("answer, hint", [
    ([str(h // 4) for h in range(32)], "without quotes"),
    ({h // 4 for h in range(32)}, "no order"),
    ([complex(h // 4, 1) for h in range(32)], "complex number"),
    ([True] * 32, "True and False"),
])
def test_kv_head_map_refuses_what_is_not_a_list_of_integers(answer, hint):
    verdict = checks.kv_head_map(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("check", [checks.kv_cache_gib, checks.mla_cache_gib])
def test_cache_sizes_accept_arrays_and_tensors(check):
    ref = SOLUTIONS[check.__name__]
    assert check(np.array(ref)).ok and check(np.float32(ref)).ok
    if torch is not None:
        assert check(torch.tensor(ref)).ok
    assert check(complex(ref, 1)).ok is False


@pytest.mark.parametrize("check, right, coarse", [
    (checks.kv_cache_gib, [1.75, 1.750, 1.7500001], [1.8]),
    (checks.mla_cache_gib, [10.7, 10.72, 10.723], [11]),
    (checks.llamacpp_cache_mib, [149, 148.8, 148.75], [150]),
])
def test_warm_ups_accept_three_significant_digits_and_ask_for_more_when_coarser(check, right,
                                                                                  coarse):
    """The questions ask for 3 significant digits: that rounding passes, a coarser one is
    "close: give more digits", not a wrong answer."""
    for answer in right:
        assert check(answer).ok is True, (answer, check(answer))
    for answer in coarse:
        verdict = check(answer)
        assert verdict.ok is False and "give more digits" in verdict.message, verdict


# Qwen2.5-7B-Instruct in llama.cpp at -c 5000 -ctk q8_0 -ctv q8_0: 5,120 cells, 28 layers,
# 4 KV heads of 128: 2 x 28 x 4 x 128 = 28,672 numbers a token, 34 bytes per 32 of them.
NUMBERS = 2 * 28 * 4 * 128


@pytest.mark.parametrize("answer, hint", [
    (5120 * NUMBERS * 34 / 32 / 2**20, None),                     # 148.75
    (5000 * NUMBERS * 34 / 32 / 2**20, "multiple of 256"),         # no padding
    (5120 * NUMBERS / 2**20, "34 bytes"),                          # q8_0 read as 1 byte
    (5000 * NUMBERS / 2**20, "Two slips"),
    (5120 * NUMBERS * 2 / 2**20, "F16"),
    (5120 * NUMBERS * 34 / 32 / 1e6, "2**20"),
    (5120 * NUMBERS * 34 / 32 / 2**20 / 28, "one layer"),
    (5120 * NUMBERS * 34 / 32 / 2**20 * 7, "query heads"),
    (5120 * NUMBERS * 34 / 32 / 2**21, "key AND a value"),
    (12.0, "Not 12 MiB"),
])
def test_llamacpp_cache_mib_hints(answer, hint):
    verdict = checks.llamacpp_cache_mib(answer)
    if hint is None:
        assert verdict.ok is True, verdict
    else:
        assert verdict.ok is False and hint in verdict.message, verdict.message


# ------------------------------------------------------------------ notebook 05: the build

def _text(config):
    return config if "num_hidden_layers" in config else config["text_config"]


def _slip(config, *, division=False, query_heads=False, half=False, one_layer=False,
          mla="right", eager_default=False, null_as_key=False, text_config=True):
    """A student's bytes_per_token with one slip chosen by keyword."""
    t = _text(config) if text_config else config
    layers = 1 if one_layer else t["num_hidden_layers"]
    if t.get("kv_lora_rank") is not None and mla != "ignored":
        width = {"right": t["kv_lora_rank"] + t["qk_rope_head_dim"],
                 "doubled": 2 * (t["kv_lora_rank"] + t["qk_rope_head_dim"]),
                 "no_rope": t["kv_lora_rank"],
                 "per_head": (t["kv_lora_rank"] + t["qk_rope_head_dim"])
                 * t["num_attention_heads"]}[mla]
        return layers * width * 2
    if eager_default:
        kv = t.get("num_key_value_heads", t["num_attention_heads"])
    elif null_as_key:
        kv = t["num_key_value_heads"] if "num_key_value_heads" in t else t["num_attention_heads"]
    else:
        kv = t.get("num_key_value_heads") or t["num_attention_heads"]
    if query_heads:
        kv = t["num_attention_heads"]
    if null_as_key and "head_dim" in t:
        d_h = t["head_dim"]
    elif division or t.get("head_dim") is None:
        d_h = t["hidden_size"] // t["num_attention_heads"]
    else:
        d_h = t["head_dim"]
    return (1 if half else 2) * layers * kv * d_h * 2


def test_bytes_per_token_reference_is_correct_on_every_case():
    assert checks.bytes_per_token(SOLUTIONS["bytes_per_token"]).ok is True
    assert checks.bytes_per_token(_slip).ok is True
    assert checks.bytes_per_token(lambda c: float(_slip(c))).ok is True  # 131072.0 is whole
    assert checks.bytes_per_token(lambda c: np.int64(_slip(c))).ok is True
    names = {what for what, _, _ in checks._bytes_cases()}
    from lessonlib.models.configs import config_names
    assert {f"{n}'s config.json" for n in config_names()} <= names
    assert len(names) >= 40


@pytest.mark.parametrize("slip, fragments", [
    (dict(division=True), ["Gemma-3-27B's config.json", "head_dim key wins"]),
    (dict(query_heads=True), ["query heads", "num_key_value_heads"]),
    (dict(half=True), ["half the answer"]),
    (dict(one_layer=True), ["one layer"]),
    (dict(mla="doubled"), ["DeepSeek-V3", "no separate V"]),
    (dict(mla="no_rope"), ["RoPE key"]),
    (dict(mla="per_head"), ["shared by all heads"]),
    (dict(mla="ignored"), ["DeepSeek-V3", "kv_lora_rank: it is MLA"]),
    (dict(eager_default=True), ["tiny-gemma3-swa", "KeyError", "computes the default first"]),
    (dict(null_as_key=True), ["null", "TypeError", "counts as absent"]),
    (dict(text_config=False), ["multimodal", "KeyError", "config['text_config']"]),
], ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_bytes_per_token_names_each_typical_slip(slip, fragments):
    verdict = checks.bytes_per_token(lambda config: _slip(config, **slip))
    assert verdict.ok is False, verdict
    for f in fragments:
        assert f.lower() in verdict.message.lower(), (f, verdict.message)


def test_bytes_per_token_standalone_slip_and_junk():
    def ignores_head_dim(config):  # d_h from the division, always
        if "num_hidden_layers" not in config:
            config = config["text_config"]
        if config.get("kv_lora_rank") is not None:
            return config["num_hidden_layers"] * (config["kv_lora_rank"]
                                                  + config["qk_rope_head_dim"]) * 2
        heads = config["num_attention_heads"]
        kv = config.get("num_key_value_heads") or heads
        return 2 * config["num_hidden_layers"] * kv * (config["hidden_size"] // heads) * 2

    verdict = checks.bytes_per_token(ignores_head_dim)
    assert verdict.ok is False and "head_dim key wins" in verdict.message, verdict
    for junk, hint in [(lambda c: "131072", "without quotes"), (lambda c: 0.5, "whole number"),
                       (lambda c: [1, 2], "one number"), (lambda c: 1 / 0, "ZeroDivisionError"),
                       (lambda c: 12345, "got 12,345 bytes")]:
        verdict = checks.bytes_per_token(junk)
        assert verdict.ok is False and hint in verdict.message, verdict
    assert checks.bytes_per_token(lambda c: None).ok is None
    assert checks.bytes_per_token(3).message.startswith("Give a function bytes_per_token")


def test_bytes_per_token_does_not_let_a_student_change_the_configs():
    def scribbles(config):
        out = _slip(config)
        config.clear()
        return out

    assert checks.bytes_per_token(scribbles).ok is True
    assert checks.bytes_per_token(SOLUTIONS["bytes_per_token"]).ok is True
