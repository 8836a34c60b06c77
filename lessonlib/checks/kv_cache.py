"""Exercise checks for notebook 05 (KV-cache bytes: MHA, GQA, MQA, MLA; the head mapping).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. The expected
values are computed by lessonlib; the typical mistakes are recomputed here the wrong way so
that a hint can say which one was made.
"""
import functools

import numpy as np

from ..models import load_model, text_config
from ..models.configs import config_names, load_config
from ..models.shape import attention_keys
from ..kv_cache import GIB, MIB, gqa_head_map, kv_bytes_per_token, kv_cache_bytes, model_shape
from . import (SIGNIFICANT_DIGITS, Unreadable, _clip, _run, check_number, correct, vector,
               whole, wholes, wrong)
from ._preamble import preamble

__all__ = ["kv_cache_gib", "mla_cache_gib", "kv_head_map", "llamacpp_cache_mib",
           "bytes_per_token", "QUESTIONS"]

# The fixed inputs of each exercise (the notebook states them in the question).
QUESTIONS = {
    "kv_cache_gib": dict(config="Qwen2.5-7B-Instruct", n=32768, dtype_bytes=2),
    "mla_cache_gib": dict(config="DeepSeek-V3", n=163840, dtype_bytes=2),
    "kv_head_map": dict(hq=32, hkv=8),
    "llamacpp_cache_mib": dict(config="Qwen2.5-7B-Instruct", n_ctx=5000, kv_type="q8_0"),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


@preamble
def kv_cache_gib(answer):
    """GiB of Qwen2.5-7B-Instruct's KV cache for one 32,768-token sequence, F16 (GQA), to 3
    significant digits."""
    q = QUESTIONS["kv_cache_gib"]
    cfg = load_config(q["config"])
    n, b = q["n"], q["dtype_bytes"]
    expected = kv_bytes_per_token(cfg, b) * n / GIB
    shape = model_shape(cfg)
    layers, heads, kv_heads = shape.layers, shape.heads, shape.kv_heads
    mistakes = [
        (expected / 2, "Half the answer: count a key AND a value per KV head (the factor 2), "
                       "and 2 bytes per F16 number; one of the two factors of 2 is missing."),
        (expected * heads / kv_heads, f"You used the {heads} query heads. GQA caches only the "
                                      f"{kv_heads} KV heads ({heads // kv_heads} query heads "
                                      f"share each one)."),
        (expected / 4, "Both factors of 2 are missing: K and V, and 2 bytes per F16 number."),
        (expected / layers, f"That is one layer; the cache holds all {layers}."),
        (expected * GIB / 1e9, "Right bytes, wrong unit: 1 GiB is 2**30 bytes, not 10**9."),
    ]
    return check_number("kv_cache_gib", answer, expected, mistakes, unit="GiB",
                        digits=SIGNIFICANT_DIGITS,
                        generic="2 (K and V) x layers x KV heads x head_dim x 2 bytes per token, "
                                "times the tokens, divided by 2**30.")


@preamble
def mla_cache_gib(answer):
    """GiB of DeepSeek-V3's MLA cache (latent + RoPE key) at its full 163,840 tokens, BF16, to
    3 significant digits."""
    q = QUESTIONS["mla_cache_gib"]
    model = load_model(q["config"])
    n, b = q["n"], q["dtype_bytes"]
    layers = model.shape.layers
    rank, rope = model.latent.kv_lora_rank, model.latent.qk_rope_head_dim
    expected = kv_bytes_per_token(model, b) * n / GIB
    as_mha = dict(model)
    del as_mha["kv_lora_rank"]
    mistakes = [
        (2 * expected, "MLA has no separate V: the one latent c (plus the RoPE key) stands in "
                       "for both keys and values, so do not double it."),
        (layers * rank * b * n / GIB, f"Add the decoupled RoPE key: each layer caches "
                                      f"kv_lora_rank + qk_rope_head_dim = {rank} + {rope} "
                                      f"numbers, not the latent alone."),
        (2 * layers * rank * b * n / GIB, "Two slips: MLA has no separate V (do not double), "
                                          "and the RoPE key part (64) belongs to each entry."),
        (expected * model.shape.heads, "The latent is shared by all heads: one entry "
                                       "per token per layer, not one per head."),
        (expected / layers, f"That is one layer; DeepSeek-V3 has {layers}."),
        (kv_bytes_per_token(as_mha, b) * n / GIB, "That is the same model without MLA (every "
                                                  "head's K and V); the question asks for the "
                                                  "latent cache."),
        (expected / b, "That counts numbers, not bytes: BF16 takes 2 bytes per number."),
        (expected * GIB / 1e9, "Right bytes, wrong unit: 1 GiB is 2**30 bytes, not 10**9."),
    ]
    return check_number("mla_cache_gib", answer, expected, mistakes, unit="GiB",
                        digits=SIGNIFICANT_DIGITS,
                        generic="(kv_lora_rank + qk_rope_head_dim) x layers x 2 bytes per token, "
                                "times the tokens, divided by 2**30.")


@preamble
def kv_head_map(answer):
    """The KV head each of Llama 3.1 8B's 32 query heads reads (8 KV heads), as a list."""
    name = "kv_head_map"
    q = QUESTIONS[name]
    hq, hkv = q["hq"], q["hkv"]
    expected = gqa_head_map(hq, hkv)
    what = (f"a list of {hq} integers: element h is the KV head that query head h reads")
    values = vector(answer, what=what)
    h = np.arange(hq)
    if values.shape == (hq,) and np.allclose(values, h / (hq / hkv), rtol=1e-9):
        return wrong(name, f"/ gives fractions (0.25, 0.5, ...): a KV head is a whole index. "
                           f"Use // so that h // {hq // hkv} puts query heads 0-{hq // hkv - 1} "
                           f"on KV head 0.")
    got = np.array(wholes(values, what=what, slip=f"; if it came from /, use // "
                                                 f"(h // {hq // hkv})"), dtype=object)
    if got.shape != (hq,):
        hint = " (one per KV head?)" if got.size == hkv else ""
        return wrong(name, f"Give one entry per query head: {hq} of them, got {got.size}{hint}.")
    if np.array_equal(got, expected):
        return correct(name, f"Correct: groups of {hq // hkv} neighbouring query heads share a "
                             f"KV head, h // {hq // hkv}.")
    h = np.arange(hq)
    if np.array_equal(got, h % hkv):
        return wrong(name, f"That is h % {hkv}, round-robin. The groups are contiguous: query "
                           f"heads 0-{hq // hkv - 1} all read KV head 0 (h // group size).")
    if np.array_equal(got, h // hkv):
        return wrong(name, f"You divided by the number of KV heads ({hkv}). Divide by the group "
                           f"size hq / hkv = {hq // hkv}: that many query heads share each KV "
                           f"head.")
    if np.array_equal(got, h):
        return wrong(name, "That is MHA (each query head its own KV head); Llama 3.1 8B has 8 KV "
                           "heads for 32 query heads.")
    if got.min() < 0 or got.max() >= hkv:
        return wrong(name, f"KV heads are numbered 0..{hkv - 1}.")
    return wrong(name, f"Query head h reads KV head h // (hq / hkv) = h // {hq // hkv}; check "
                       f"head {int(np.flatnonzero(got != expected)[0])}.")


@preamble
def llamacpp_cache_mib(answer):
    """MiB llama.cpp allocates for Qwen2.5-7B-Instruct's cache at ``-c 5000 -ctk q8_0 -ctv
    q8_0 -fa on`` (V is quantized only with flash attention on), to 3 significant digits:
    pad(5000, 256) = 5,120 cells, 34 bytes per 32 numbers."""
    name = "llamacpp_cache_mib"
    q = QUESTIONS[name]
    cfg = load_config(q["config"])
    n = q["n_ctx"]
    expected = kv_cache_bytes(cfg, n, engine="llama.cpp", kv_type=q["kv_type"]).total_mib
    cells = -(-n // 256) * 256
    shape = model_shape(cfg)
    numbers = 2 * shape.layers * shape.kv_heads * shape.head_dim  # per token, all layers
    mib = lambda tokens, per_number: tokens * numbers * per_number / MIB  # noqa: E731
    mistakes = [
        (mib(n, 34 / 32), f"llama.cpp rounds -c up to a multiple of 256: {n:,} tokens get "
                          f"{cells:,} cells, and every cell is allocated."),
        (mib(cells, 1), "q8_0 is not 1 byte a number: every block of 32 numbers takes 34 bytes "
                        "(32 one-byte values and a 2-byte scale)."),
        (mib(n, 1), f"Two slips: q8_0 takes 34 bytes per 32 numbers, not 1 byte a number, and "
                    f"-c {n:,} is rounded up to {cells:,} cells."),
        (mib(cells, 2), "That is an F16 cache (2 bytes a number); -ctk/-ctv q8_0 store 34 "
                        "bytes per 32 numbers."),
        (mib(n, 2), f"That is F16 at exactly {n:,} tokens: the question's cache is q8_0 (34 "
                    f"bytes per 32 numbers) and llama.cpp allocates {cells:,} cells."),
        (expected / 2, "Half: each cell holds a key AND a value in every layer."),
        (expected * shape.heads / shape.kv_heads, f"Use the {shape.kv_heads} KV heads, not the "
                                                  f"{shape.heads} query heads."),
        (expected / shape.layers, f"That is one layer; the cache has all {shape.layers}."),
        (expected * MIB / 1e6, "Right bytes, wrong unit: 1 MiB is 2**20 bytes, not 10**6."),
    ]
    return check_number(name, answer, expected, mistakes, unit="MiB", digits=SIGNIFICANT_DIGITS,
                        generic="cells (-c rounded up to a multiple of 256) x 2 (K and V) x "
                                "layers x KV heads x head_dim x 34/32 bytes, divided by 2**20.")


# ------------------------------------------------------------------ notebook 05, the build
# The student writes bytes_per_token(config) for any config.json dict; it is tried on every
# config the course ships and on variants of them, each named by what it tests, against
# lessonlib.kv_cache.kv_bytes_per_token (2 bytes a number: F16 / BF16).

_VISION = {"hidden_size": 1152, "num_hidden_layers": 27, "num_attention_heads": 16,
           "head_dim": 72}  # a vision encoder's keys: beside text_config, not part of the cache


@functools.lru_cache(maxsize=1)
def _bytes_cases():
    """((what it tests, config), ...): every shipped config, then variants of them."""
    cases = [(f"{name}'s config.json", load_config(name)) for name in config_names()]
    for name in config_names():
        cfg = load_config(name)
        t, keys = text_config(cfg), attention_keys(cfg)
        if keys.kv_lora_rank is not None:
            continue  # MLA: its own variants below
        if keys.head_dim is not None and keys.divided_head_dim is not None:
            cases.append((f"{name} without its head_dim key (then d_h = hidden_size / "
                          f"num_attention_heads)", {k: v for k, v in t.items() if k != "head_dim"}))
        if keys.divided_head_dim is not None:
            divided = model_shape({k: v for k, v in t.items() if k != "head_dim"}).head_dim
            d_h = 256 if divided != 256 else 192  # a head_dim the division does not give
            cases.append((f"{name} with head_dim = {d_h} (the key wins over hidden_size / "
                          f"num_attention_heads)", dict(t, head_dim=d_h)))
            cases.append((f"{name} with \"head_dim\": null (null is no key)",
                          {**{k: v for k, v in t.items() if k != "head_dim"}, "head_dim": None}))
        if keys.heads:
            cases.append((f"{name} without num_key_value_heads (absent means MHA: one KV head "
                          f"per query head)",
                          {k: v for k, v in t.items() if k != "num_key_value_heads"}))
    qwen = load_config("Qwen2.5-7B-Instruct")
    cases.append(("Qwen2.5-7B with \"num_key_value_heads\": null (null is no key: MHA)",
                  dict(qwen, num_key_value_heads=None)))
    for name in ("Llama-3.1-8B", "gpt-oss-20b", "Qwen2.5-7B-Instruct"):
        cases.append((f"a multimodal model whose language model is {name} (its keys under "
                      f"text_config, a vision encoder's under vision_config)",
                      {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
                       "text_config": load_config(name), "vision_config": dict(_VISION)}))
    ds = load_config("DeepSeek-V3")
    cases.append(("an MLA model shaped like DeepSeek-V2-Lite (27 layers, kv_lora_rank 512, "
                  "qk_rope_head_dim 64, 16 heads)",
                  dict(ds, num_hidden_layers=27, num_attention_heads=16, num_key_value_heads=16,
                       hidden_size=2048)))
    cases.append(("an MLA model with kv_lora_rank 256 and qk_rope_head_dim 32, 40 layers",
                  dict(ds, num_hidden_layers=40, kv_lora_rank=256, qk_rope_head_dim=32)))
    cases.append(("DeepSeek-V3 inside a multimodal config (text_config)",
                  {"model_type": "mm", "text_config": load_config("DeepSeek-V3"),
                   "vision_config": dict(_VISION)}))
    return tuple((what, cfg, kv_bytes_per_token(cfg)) for what, cfg in cases)


def _bytes_probes():
    return [(cfg,) for _, cfg, _ in _bytes_cases()[:3]]


def _slips(config):
    """{slip: the bytes a function with that one slip gives for ``config``} (slips that do not
    apply, or that fail on this config, are left out)."""
    keys = attention_keys(config)
    out = {}
    layers = keys.layers
    if keys.kv_lora_rank is not None:
        rank, rope, heads = keys.kv_lora_rank, keys.qk_rope_head_dim, keys.heads
        out["mla_doubled"] = 2 * layers * (rank + rope) * 2
        out["mla_no_rope"] = layers * rank * 2
        out["mla_per_head"] = layers * (rank + rope) * heads * 2
        out["one_layer"] = (rank + rope) * 2
        out["numbers"] = layers * (rank + rope)
        return out
    heads = keys.heads or keys.kv_heads
    kv = keys.kv_heads or heads
    d_h = keys.head_dim or keys.divided_head_dim
    if d_h is None:
        return out
    right = 2 * layers * kv * d_h * 2
    out["half"] = right // 2
    out["quarter"] = right // 4
    out["one_layer"] = right // layers
    out["query_heads"] = 2 * layers * heads * d_h * 2
    if keys.divided_head_dim is not None:
        out["division"] = 2 * layers * kv * keys.divided_head_dim * 2
    return out


_SLIP_HINTS = {
    "half": "Half the answer: count a key AND a value per KV head (the factor 2), and 2 bytes "
            "per F16 number; one of the two factors of 2 is missing.",
    "quarter": "Both factors of 2 are missing: K and V, and 2 bytes per F16 number.",
    "one_layer": "That is one layer's bytes; the cache holds every layer "
                 "(num_hidden_layers).",
    "query_heads": "You used the query heads (num_attention_heads). Only the KV heads are "
                   "cached: num_key_value_heads.",
    "division": "The head_dim key wins: where the config gives it, d_h is head_dim, whatever "
                "hidden_size / num_attention_heads comes to.",
    "mla_doubled": "MLA has no separate V: the one latent (plus the RoPE key) stands in for both "
                   "keys and values, so do not double it.",
    "mla_no_rope": "Add the decoupled RoPE key: an MLA layer caches kv_lora_rank + "
                   "qk_rope_head_dim numbers per token, not the latent alone.",
    "mla_per_head": "The MLA latent is shared by all heads: one entry per token per layer, not "
                    "one per head.",
    "numbers": "That counts numbers, not bytes: an F16 / BF16 number takes 2 bytes.",
}


def _error_hint(what, config, error):
    """A hint for a function that raised on one case: what the case tests, and the usual
    cause of that error there."""
    keys = attention_keys(config)
    text = f"On {what}, bytes_per_token raised {type(error).__name__}: {_clip(error, 120)}."
    key = error.args[0] if isinstance(error, KeyError) and error.args else None
    if keys.nested and key is not None and key not in config:
        return text + (" A multimodal config keeps its language model's keys in "
                       "config['text_config']: read them there when the top level has no "
                       "num_hidden_layers.")
    if key == "num_key_value_heads":
        return text + (" An absent num_key_value_heads means MHA: one KV head per query head "
                       "(num_attention_heads), as HuggingFace reads it.")
    if key == "num_attention_heads" and keys.kv_heads is not None:
        return text + (" This config gives head_dim and num_key_value_heads and no "
                       "num_attention_heads: read num_attention_heads only when one of them is "
                       "missing (config.get(key, default) computes the default first).")
    if key == "head_dim":
        return text + " Without a head_dim key, d_h = hidden_size / num_attention_heads."
    if isinstance(error, TypeError) and "None" in str(error):
        return text + (" In config.json a key may be null (None in Python): a null head_dim "
                       "or num_key_value_heads counts as absent.")
    return text


@preamble(function="Give a function bytes_per_token(config) that returns a number of bytes.",
          probes=_bytes_probes)
def bytes_per_token(fn):
    """``bytes_per_token(config) -> int``: the KV-cache bytes one token costs over all layers
    at 2 bytes a number, for any config.json dict (05, ex. 2): the head_dim key over
    hidden_size / num_attention_heads, num_key_value_heads absent or null meaning MHA, MLA
    (kv_lora_rank + qk_rope_head_dim, one latent per layer), a multimodal text_config. Tried on
    every shipped config and variants of them, against ``kv_bytes_per_token``."""
    name = "bytes_per_token"
    cases = _bytes_cases()
    for what, config, expected in cases:
        result, error = _run(fn, (config,))  # on a deep copy, quietly
        if error is not None:
            return wrong(name, _error_hint(what, config, error))
        try:
            got = whole(result, what="the bytes of one token, a whole number")
        except Unreadable as why:
            return wrong(name, f"On {what}: {why}")
        if got == expected:
            continue
        for slip, value in _slips(config).items():
            if got == value:
                return wrong(name, f"On {what}: {_SLIP_HINTS[slip]}")
        if attention_keys(config).kv_lora_rank is not None:
            return wrong(name, f"On {what}, got {got:,} bytes. The config has kv_lora_rank: it "
                               f"is MLA, which caches per layer one latent of kv_lora_rank "
                               f"numbers plus the shared RoPE key (qk_rope_head_dim), no "
                               f"separate V and nothing per head.")
        return wrong(name, f"On {what}, got {got:,} bytes. 2 (K and V) x num_hidden_layers x "
                           f"KV heads x d_h x 2 bytes, with each key read as this case says.")
    return correct(name, f"Correct on {len(cases)} configs: every one the course ships and "
                         f"variants of them (head_dim given, absent or null; no "
                         f"num_key_value_heads; MLA; a text_config).")

