"""Exercise checks for notebook 09 (long-context cost, needle-in-a-haystack grids).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
come from lessonlib (traffic, needles); the typical mistakes are recomputed the wrong way.
"""
import functools
import math

import numpy as np

from ..configs import load_config
from ..kv_cache import kv_bytes_per_token, model_shape
from ..needles import EdgeHeavyModel, needle_index, run_needle_grid
from ..traffic import LLAMA3_8B_PARAMS, crossover_length, long_context_cost
from . import SIGNIFICANT_DIGITS, _scalar, _short, call, check_number, correct, wrong
from ._preamble import preamble

__all__ = ["crossover_tokens", "prompt_cost_ratio", "needle_found", "QUESTIONS",
           "LLAMA32_1B_PARAMS"]

# The cost exercises use Llama 3.2 1B's shape, not the notebook's worked Llama 3.1 8B: the
# notebook prints the 8B's crossover and cost ratio, so those would be answers given away.
# 1,235,814,400 parameters: its config.json's shape with the embedding shared by the output
# layer (tie_word_embeddings), as tests/test_checks_long_context.py counts them.
LLAMA32_1B_PARAMS = 1_235_814_400

WORKED = dict(config="Llama-3.1-8B", params=LLAMA3_8B_PARAMS)  # the notebook's worked shape

QUESTIONS = {
    "crossover_tokens": dict(config="Llama-3.2-1B", params=LLAMA32_1B_PARAMS),
    "prompt_cost_ratio": dict(config="Llama-3.2-1B", params=LLAMA32_1B_PARAMS, short=4096,
                              long=131072),
    # (length, depth) cells where the fake model's two rules are tested, edges included: at
    # 5,998 words and depth 50 the needle (word 2,999) is exactly 3,000 words from the end.
    "needle_found": dict(lengths=(1000, 2000, 3000, 4000, 5998, 8000, 16000),
                         depths=(0, 0.3, 0.4, 25, 50, 75, 81.25, 100)),
}


def _shape(name):
    cfg = load_config(name)
    shape = model_shape(cfg)
    return cfg, shape.layers, shape.q_dim, shape.kv_dim


@preamble
def crossover_tokens(answer):
    """The context length n at which causal attention's prefill FLOPs equal the weights' for
    the Llama 3.2 1B shape (1,235,814,400 parameters, 16 layers, q_dim 32 x 64 = 2,048)."""
    q = QUESTIONS["crossover_tokens"]
    cfg, L, q_dim, kv_dim = _shape(q["config"])
    P = q["params"]
    expected = crossover_length(P, layers=L, q_dim=q_dim)  # 2 P n = 2 n^2 q_dim L
    _, L8, q8, _ = _shape(WORKED["config"])
    mistakes = [
        (crossover_length(WORKED["params"], layers=L8, q_dim=q8),
         "That is the notebook's worked Llama 3.1 8B. This exercise is the Llama 3.2 1B shape: "
         "its own P, L and q_dim."),
        (crossover_length(P, layers=L, q_dim=q_dim, causal=False),
         "That ignores the causal mask: each query sees only the keys before it, which halves "
         "attention's 4 n^2 q_dim L, so the crossover moves up 2x."),
        (expected * L, f"Attention runs in every one of the {L} layers: its FLOPs are "
                       f"2 n^2 q_dim L, with L."),
        (expected * q_dim / kv_dim, f"q_dim is query heads x head_dim = {q_dim:,}: every query "
                                    f"head computes its own scores (GQA shares K and V, not "
                                    f"the work)."),
        (math.sqrt(expected), "Solve 2 P n = 2 n^2 q_dim L for n: divide both sides by 2 n, "
                              "giving n = P / (q_dim L), not a square root."),
    ]
    return check_number("crossover_tokens", answer, expected, mistakes, unit="tokens",
                        digits=SIGNIFICANT_DIGITS,
                        generic="Set the weights' 2 P n equal to causal attention's 2 n^2 q_dim "
                                "L and solve for n.")


@preamble
def prompt_cost_ratio(answer):
    """How many times more prefill FLOPs a 131,072-token prompt costs than a 4,096-token one
    (weights plus causal attention, the Llama 3.2 1B shape of ``crossover_tokens``)."""
    q = QUESTIONS["prompt_cost_ratio"]
    cfg, L, q_dim, _ = _shape(q["config"])
    args = dict(params=q["params"], layers=L, q_dim=q_dim,
                kv_bytes_per_token=kv_bytes_per_token(cfg))
    short, long = long_context_cost([q["short"], q["long"]], **args)
    s_full, l_full = long_context_cost([q["short"], q["long"]], causal=False, **args)
    expected = long.total_flops / short.total_flops
    k = q["long"] / q["short"]
    cfg8, L8, q8, _ = _shape(WORKED["config"])
    short8, long8 = long_context_cost([q["short"], q["long"]], params=WORKED["params"], layers=L8,
                                      q_dim=q8, kv_bytes_per_token=kv_bytes_per_token(cfg8))
    mistakes = [
        (long8.total_flops / short8.total_flops, "That is the notebook's worked Llama 3.1 8B. "
                                                 "This exercise is the Llama 3.2 1B shape: its "
                                                 "own P, L and q_dim."),
        (k, f"{k:g}x is the weights alone (linear in n). Attention grows with n^2 and is most "
            f"of the long prompt's cost: add both parts at each length."),
        (k * k, f"{k * k:g}x is attention alone (n^2). The weights' share grows only {k:g}x: "
                f"divide the totals."),
        (l_full.total_flops / s_full.total_flops, "That counts attention without the causal "
                                                  "mask; causal attention does half of it."),
        (1 / expected, "Upside down: divide the long prompt's FLOPs by the short one's."),
        (long.attention_flops / short.total_flops, "The long prompt also pays for its weights: "
                                                   "use its total, not attention alone."),
    ]
    return check_number("prompt_cost_ratio", answer, expected, mistakes, unit="",
                        digits=SIGNIFICANT_DIGITS,
                        generic="total(n) = 2 P n + 2 n^2 q_dim L; divide total(131,072) by "
                                "total(4,096).")


def _cells():
    q = QUESTIONS["needle_found"]
    return [(n, d) for n in q["lengths"] for d in q["depths"]]


@functools.lru_cache(maxsize=1)
def _truth():
    q = QUESTIONS["needle_found"]
    grid = run_needle_grid(EdgeHeavyModel(), q["lengths"], q["depths"], progress=False)
    return {(n, d): bool(f) for (n, d), f in zip(_cells(), grid.found.ravel())}


def _variant(first=64, recent=3000, *, count_needle=True, from_end=False, first_inclusive=False,
             recent_strict=False):
    def found(length, depth):
        at = needle_index(length, 100 - depth if from_end else depth)
        to_end = length - at + (1 if count_needle else 0)  # words from the needle to the end
        near_end = to_end < recent if recent_strict else to_end <= recent
        return near_end or (at <= first if first_inclusive else at < first)
    return found


_HINTS = [
    (_variant(count_needle=False), "The needle is a word too: from the needle to the end there "
                                   "are length - index + 1 words. At 4,000 words and 25% that "
                                   "is 3,001, one outside the 3,000-word reach."),
    (_variant(first_inclusive=True), "The first 64 words are indexes 0..63: use index < 64."),
    (_variant(recent_strict=True), "Within the last 3,000 words includes exactly 3,000: at "
                                   "5,998 words and depth 50% the needle is word 2,999, and "
                                   "from it to the end there are 3,000 words. Use <= 3000."),
    (_variant(first=0), "The model also finds a needle among the first 64 words, however long "
                        "the context."),
    (_variant(recent=0), "The model also finds a needle within the last 3,000 words."),
    (_variant(from_end=True), "Depth counts from the start: 0% is the first word, 100% the end "
                              "(index = floor(length x depth / 100))."),
]


def _truth_value(result):
    """A student's True/False: a bool (Python, numpy, or a 0-d array or tensor of one), or the
    integers 0 and 1 (``int(...)`` of a comparison); None for anything else (a float, a
    string, None, 2)."""
    v = _scalar(result)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    return None


@preamble(function="Give a function found(length, depth) that returns True or False.",
          probes=_cells)
def needle_found(found):
    """``found(length, depth) -> bool``: predict whether ``EdgeHeavyModel`` finds the needle.
    True/False (numpy bools too) or 1/0 are read as the prediction."""
    name = "needle_found"
    truth = dict(_truth())
    got = {}
    for cell in _cells():
        result, error = call(found, *cell, label=f"found{cell}")
        if error:
            return wrong(name, error)
        got[cell] = _truth_value(result)
        if got[cell] is None:
            return wrong(name, f"found{cell} returned {_short(result)}; return True or False.")
    if all(bool(got[c]) == truth[c] for c in truth):
        return correct(name, f"Correct on all {len(truth)} cells, the edges included.")
    for variant, hint in _HINTS:
        if all(bool(got[c]) == variant(*c) for c in truth):
            return wrong(name, hint)
    n, d = next(c for c in _cells() if bool(got[c]) != truth[c])
    return wrong(name, f"At length {n:,}, depth {d:g}% (needle at word {needle_index(n, d):,}) "
                       f"the model {'finds' if truth[(n, d)] else 'misses'} it, your function "
                       f"says {bool(got[(n, d)])}.")
