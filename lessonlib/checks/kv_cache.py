"""Exercise checks for notebook 05 (KV-cache bytes: MHA, GQA, MQA, MLA; the head mapping).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. The expected
values are computed by lessonlib; the typical mistakes are recomputed here the wrong way so
that a hint can say which one was made.
"""
import numpy as np

from ..configs import load_config
from ..kv_cache import GIB, gqa_head_map, kv_bytes_per_token, model_shape
from . import check_number, correct, vector, wholes, wrong
from ._preamble import preamble

__all__ = ["kv_cache_gib", "mla_cache_gib", "kv_head_map", "QUESTIONS"]

# The fixed inputs of each exercise (the notebook states them in the question).
QUESTIONS = {
    "kv_cache_gib": dict(config="Qwen2.5-7B-Instruct", n=32768, dtype_bytes=2),
    "mla_cache_gib": dict(config="DeepSeek-V3", n=163840, dtype_bytes=2),
    "kv_head_map": dict(hq=32, hkv=8),
}


@preamble
def kv_cache_gib(answer):
    """GiB of Qwen2.5-7B-Instruct's KV cache for one 32,768-token sequence, F16 (GQA)."""
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
                        generic="2 (K and V) x layers x KV heads x head_dim x 2 bytes per token, "
                                "times the tokens, divided by 2**30.")


@preamble
def mla_cache_gib(answer):
    """GiB of DeepSeek-V3's MLA cache (latent + RoPE key) at its full 163,840 tokens, BF16."""
    q = QUESTIONS["mla_cache_gib"]
    cfg = load_config(q["config"])
    n, b = q["n"], q["dtype_bytes"]
    layers, rank, rope = cfg["num_hidden_layers"], cfg["kv_lora_rank"], cfg["qk_rope_head_dim"]
    expected = kv_bytes_per_token(cfg, b) * n / GIB
    as_mha = dict(cfg)
    del as_mha["kv_lora_rank"]
    mistakes = [
        (2 * expected, "MLA has no separate V: the one latent c (plus the RoPE key) stands in "
                       "for both keys and values, so do not double it."),
        (layers * rank * b * n / GIB, f"Add the decoupled RoPE key: each layer caches "
                                      f"kv_lora_rank + qk_rope_head_dim = {rank} + {rope} "
                                      f"numbers, not the latent alone."),
        (2 * layers * rank * b * n / GIB, "Two slips: MLA has no separate V (do not double), "
                                          "and the RoPE key part (64) belongs to each entry."),
        (expected * model_shape(cfg).heads, "The latent is shared by all heads: one entry "
                                            "per token per layer, not one per head."),
        (expected / layers, f"That is one layer; DeepSeek-V3 has {layers}."),
        (kv_bytes_per_token(as_mha, b) * n / GIB, "That is the same model without MLA (every "
                                                  "head's K and V); the question asks for the "
                                                  "latent cache."),
        (expected / b, "That counts numbers, not bytes: BF16 takes 2 bytes per number."),
        (expected * GIB / 1e9, "Right bytes, wrong unit: 1 GiB is 2**30 bytes, not 10**9."),
    ]
    return check_number("mla_cache_gib", answer, expected, mistakes, unit="GiB",
                        generic="(kv_lora_rank + qk_rope_head_dim) x layers x 2 bytes per token, "
                                "times the tokens, divided by 2**30.")


@preamble
def kv_head_map(answer):
    """The KV head each of Llama 3 8B's 32 query heads reads (8 KV heads), as a list."""
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
        return wrong(name, "That is MHA (each query head its own KV head); Llama 3 8B has 8 KV "
                           "heads for 32 query heads.")
    if got.min() < 0 or got.max() >= hkv:
        return wrong(name, f"KV heads are numbered 0..{hkv - 1}.")
    return wrong(name, f"Query head h reads KV head h // (hq / hkv) = h // {hq // hkv}; check "
                       f"head {int(np.flatnonzero(got != expected)[0])}.")
