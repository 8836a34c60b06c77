"""Exercise checks for notebook 09 (long-context cost, needle-in-a-haystack grids).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
come from lessonlib (traffic, needles); the typical mistakes are recomputed the wrong way.
"""
import functools
import math

import numpy as np

from ..models.configs import load_config
from ..kv_cache import kv_bytes_per_token, model_shape
from ..needles import (DEFAULT_NEEDLE, DEFAULT_QUESTION, QUESTION_SEPARATOR, EdgeHeavyModel,
                       lesson_filler, needle_index, run_needle_grid)
from ..traffic import crossover_length, long_context_cost
from ..models.weights import weight_bytes
from . import SIGNIFICANT_DIGITS, _run, _scalar, _short, call, check_number, correct, wrong
from ._preamble import preamble

__all__ = ["crossover_tokens", "prompt_cost_ratio", "needle_grid", "needle_found", "QUESTIONS",
           "LLAMA32_1B_PARAMS"]

# The cost exercises use Llama 3.2 1B's shape, not the notebook's worked Llama 3.1 8B: the
# notebook prints the 8B's crossover and cost ratio, so those would be answers given away.
# Both parameter counts come from the shipped config.json files (weights.weight_bytes): the 1B's
# 1,235,814,400 share the embedding with the output layer (tie_word_embeddings); the 8B's
# 8,030,261,248 are the count notebook 09 prints.
LLAMA32_1B_PARAMS = weight_bytes(load_config("Llama-3.2-1B")).params
"""1,235,814,400: Llama 3.2 1B's parameters, counted by ``weights.weight_bytes`` from the
shipped Llama-3.2-1B config (the cost exercises' shape)."""

WORKED = dict(config="Llama-3.1-8B",  # the notebook's worked shape
              params=weight_bytes(load_config("Llama-3.1-8B")).params)

QUESTIONS = {
    "crossover_tokens": dict(config="Llama-3.2-1B", params=LLAMA32_1B_PARAMS),
    "prompt_cost_ratio": dict(config="Llama-3.2-1B", params=LLAMA32_1B_PARAMS, short=4096,
                              long=131072),
    # (length, depth) cells where the fake model's two rules are tested, edges included: at
    # 5,998 words and depth 50 the needle (word 2,999) is exactly 3,000 words from the end.
    "needle_found": dict(lengths=(1000, 2000, 3000, 4000, 5998, 8000, 16000),
                         depths=(0, 0.3, 0.4, 25, 50, 75, 81.25, 100)),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


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
    N_param = q["params"]
    expected = crossover_length(N_param, layers=L, q_dim=q_dim)  # 2 N_param n = 2 n^2 q_dim L
    _, L8, q8, _ = _shape(WORKED["config"])
    mistakes = [
        (crossover_length(WORKED["params"], layers=L8, q_dim=q8),
         "That is the notebook's worked Llama 3.1 8B. This exercise is the Llama 3.2 1B shape: "
         "its own N_param, L and q_dim."),
        (crossover_length(N_param, layers=L, q_dim=q_dim, causal=False),
         "That ignores the causal mask: each query sees only the keys before it, which halves "
         "attention's 4 n^2 q_dim L, so the crossover moves up 2x."),
        (expected * L, f"Attention runs in every one of the {L} layers: its FLOPs are "
                       f"2 n^2 q_dim L, with L."),
        (expected * q_dim / kv_dim, f"q_dim is query heads x head_dim = {q_dim:,}: every query "
                                    f"head computes its own scores (GQA shares K and V, not "
                                    f"the work)."),
        (math.sqrt(expected), "Solve 2 N_param n = 2 n^2 q_dim L for n: divide both sides by "
                              "2 n, giving n = N_param / (q_dim L), not a square root."),
    ]
    return check_number("crossover_tokens", answer, expected, mistakes, unit="tokens",
                        digits=SIGNIFICANT_DIGITS,
                        generic="Set the weights' 2 N_param n equal to causal attention's "
                                "2 n^2 q_dim L and solve for n.")


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
                                                 "own N_param, L and q_dim."),
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
                        generic="total(n) = 2 N_param n + 2 n^2 q_dim L; divide total(131,072) "
                                "by total(4,096).")


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


# ------------------------------------------------------------------ exercise 2: a grid runner
# run_grid(model, lengths, depths) -> the found matrix, built as run_needle_grid builds it: the
# default filler (needles.lesson_filler), the default needle inserted at word
# floor(length * depth / 100), the context, a blank line, the default question; found when the
# reply contains the needle; an echo (a reply holding the whole context) a ValueError.

class _Sentence:
    """A stand-in that wraps its inner model's reply in a sentence, as real models do."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, text):
        return f"The code is {self.inner(text)}."


class _EveryKth:
    """Finds the needle only when its word index is r modulo k: a model that finds it at some
    depths and not at their neighbours, so every index must be exact. It answers only a
    prompt that ends with the question."""

    def __init__(self, k, r, needle=DEFAULT_NEEDLE):
        self.k, self.r, self.needle = k, r, needle

    def __call__(self, text):
        if not text.endswith(QUESTION_SEPARATOR + DEFAULT_QUESTION):
            return "You asked me nothing."
        words = text.rsplit(QUESTION_SEPARATOR, 1)[0].split()
        if self.needle in words and words.index(self.needle) % self.k == self.r:
            return f"It is {self.needle}"
        return "No code here."


class _Echo:
    """A client that returns the prompt's context with its reply: it "finds" every needle."""

    def __call__(self, text):
        return "You wrote: " + text.rsplit(QUESTION_SEPARATOR, 1)[0] + "\nThe code is unknown."


def _grid_cases():
    """(description, model, lengths, depths): the edges (depth 0 and 100, length 2, a length
    whose length x depth / 100 is not whole, a reach that ends exactly on a needle) and seeded
    ones. Depths are whole or quarter percents: n x depth / 100 in floats floors exactly."""
    rng = np.random.default_rng(9)
    cases = [("EdgeHeavyModel()", EdgeHeavyModel(), [1000, 4000, 5998], [0, 25, 50, 100]),
             ("EdgeHeavyModel(first=5, recent=7)", EdgeHeavyModel(first=5, recent=7),
              [2, 9, 13, 30], [0, 12.5, 37.5, 50, 62.5, 100])]
    for seed in range(6):
        lengths = sorted({int(n) for n in rng.integers(2, 6000, size=rng.integers(2, 5))})
        depths = sorted({float(d) for d in rng.integers(0, 401, size=rng.integers(3, 6)) / 4}
                        | {0.0, 100.0})
        n, d = lengths[-1], depths[rng.integers(len(depths))]
        recent = n + 1 - needle_index(n, d)  # the reach ends exactly on this cell's needle
        first = int(rng.integers(0, 300))
        model = EdgeHeavyModel(first=first, recent=recent)
        if seed % 2:
            cases.append((f"a model that says 'The code is ...' (first={first}, "
                          f"recent={recent})", _Sentence(model), lengths, depths))
        else:
            cases.append((f"EdgeHeavyModel(first={first}, recent={recent})", model, lengths,
                          depths))
        k = int(rng.integers(2, 5))
        cases.append((f"a model that finds the needle only at word indexes {seed % k} mod {k}",
                      _EveryKth(k, seed % k), lengths, depths))
    cases.append(("a model that echoes its prompt", _Echo(), [50, 200], [0, 50, 100]))
    return cases


@functools.lru_cache(maxsize=1)
def _grid_truth():
    """Per case: the found matrix run_needle_grid gives, or None where it raises (the echo)."""
    out = []
    for _, model, lengths, depths in _grid_cases():
        try:
            out.append(run_needle_grid(model, lengths, depths, progress=False).found)
        except ValueError:
            out.append(None)
    return out


def _slip_grid(model, lengths, depths, *, index=None, insert=True, contains=True, sep=None,
               question=True, echo_check=True):
    """A runner with one typical slip (index rule, overwrite, ==, prompt format, no echo
    check): the found matrix, or None where it raises."""
    index = index or (lambda n, d: math.floor(n * d / 100))
    sep = QUESTION_SEPARATOR if sep is None else sep
    found = np.zeros((len(lengths), len(depths)), dtype=bool)
    for i, n in enumerate(lengths):
        for j, d in enumerate(depths):
            words = lesson_filler(n)
            at = min(index(n, d), n if insert else n - 1)
            if insert:
                words.insert(at, DEFAULT_NEEDLE)
            else:
                words[at] = DEFAULT_NEEDLE
            context = " ".join(words)
            answer = model(context + sep + DEFAULT_QUESTION if question else context)
            if echo_check and context in answer:
                return None
            found[i, j] = DEFAULT_NEEDLE in answer if contains else answer == DEFAULT_NEEDLE
    return found


_GRID_SLIPS = [
    (dict(index=lambda n, d: round(n * d / 100)),
     "The needle goes in at word floor(length x depth / 100): round() moves it one word on "
     "when length x depth / 100 ends in .5 or more."),
    (dict(index=lambda n, d: math.ceil(n * d / 100)),
     "The needle goes in at word floor(length x depth / 100), not the ceiling."),
    (dict(insert=False),
     "Insert the needle (list.insert), do not overwrite a filler word: the context is length "
     "filler words plus the needle, length + 1 words, and an edge-heavy model counts them."),
    (dict(contains=False),
     "Score by string match: found when the reply contains the needle. Real models answer in "
     "a sentence ('The code is CODE-4721.'), so == misses them."),
    (dict(sep="\n"),
     "The prompt is the context, a blank line (two newlines), then the question: with one "
     "newline or a space the model reads the question's words as part of the context."),
    (dict(question=False),
     "Ask the question: the prompt is the context, a blank line (two newlines), then "
     "needles.DEFAULT_QUESTION. A model that is asked nothing answers nothing."),
    (dict(echo_check=False),
     "A model that echoes its prompt 'finds' every needle: when a reply contains the whole "
     "context, raise a ValueError instead of scoring it (run_needle_grid does)."),
]


def _found_matrix(result, shape):
    """The student's grid as a bool array of ``shape``, or a hint why it cannot be read."""
    try:
        a = np.asarray(result)
    except Exception:  # noqa: BLE001 -- whatever a student returns
        return None, f"returned {_short(result)}; return the found matrix (a list of rows)."
    if a.dtype == object or a.ndim != 2:
        return None, (f"returned {_short(result)}; return the found matrix: one row per "
                      f"length, one True/False per depth.")
    if a.shape != shape:
        if a.shape == shape[::-1]:
            return None, (f"the grid is {a.shape[0]} x {a.shape[1]}: one row per length "
                          f"({shape[0]}) and one column per depth ({shape[1]}), not the "
                          f"other way round.")
        return None, f"the grid is {a.shape[0]} x {a.shape[1]}; this one needs {shape[0]} x " \
                     f"{shape[1]} (lengths x depths)."
    if a.dtype != bool and not (np.issubdtype(a.dtype, np.integer) and np.isin(a, (0, 1)).all()):
        return None, f"the grid holds {a.dtype} values; each cell is True or False."
    return a.astype(bool), None


def _grid_probes():
    return [(EdgeHeavyModel(), [1000, 4000], [0, 50])]


@preamble(function="Give a function run_grid(model, lengths, depths) that returns the found "
                   "matrix.", probes=_grid_probes)
def needle_grid(run_grid):
    """``run_grid(model, lengths, depths)``: ask ``model`` for the needle at every length x
    depth and return the found matrix (rows: lengths, columns: depths), as
    ``needles.run_needle_grid(...).found``; a model that echoes its prompt is a ValueError.
    Tried on 15 stand-in models and grids (random edge-heavy reaches, a reach that ends exactly
    on a needle, models that answer in a sentence or only at some word indexes, depths 0 and
    100, lengths 2 and up, quarter-percent depths, an echo); the hint names round or ceil for
    floor, a needle overwritten instead of inserted, == for containment, the prompt's format,
    the missing echo check, or a transposed grid (09, ex. 3)."""
    name = "needle_grid"
    cases, truth = _grid_cases(), _grid_truth()
    got = []
    for (what, model, lengths, depths), want in zip(cases, truth):
        result, err = _run(run_grid, (model, lengths, depths))
        if want is None:  # the echo: a ValueError is right, a grid is the slip
            if err is not None and not isinstance(err, ValueError):
                return wrong(name, f"For {what}, run_grid raised {type(err).__name__}: "
                                   f"{_short(str(err), 120)}; raise a ValueError there.")
            got.append(None if err is not None else "grid")
            continue
        if err is not None:
            return wrong(name, f"run_grid(model, {lengths}, {depths}) for {what} raised "
                               f"{type(err).__name__}: {_short(str(err), 120)}")
        grid, problem = _found_matrix(result, want.shape)
        if problem:
            return wrong(name, f"For {what}, lengths {lengths}, depths {depths}: {problem}")
        got.append(grid)

    def same(a, b):
        return (a is None and b is None) or (
            a is not None and b is not None and not isinstance(a, str)
            and not isinstance(b, str) and np.array_equal(a, b))

    if all(same(g, t) for g, t in zip(got, truth)):
        return correct(name, f"Correct on all {len(cases)} models and grids, the echo "
                             f"refused: your runner agrees with needles.run_needle_grid.")
    for slip, hint in _GRID_SLIPS:
        if all(same(g, _slip_grid(m, n, d, **slip)) or (isinstance(g, str) and t is None and
                                                         slip.get("echo_check") is False)
               for g, t, (_, m, n, d) in zip(got, truth, cases)):
            return wrong(name, hint)
    for g, t, (what, _, lengths, depths) in zip(got, truth, cases):
        if t is None and isinstance(g, str):
            return wrong(name, _GRID_SLIPS[-1][1])
        if not same(g, t):
            i, j = np.argwhere(g != t)[0]
            n, d = lengths[i], depths[j]
            return wrong(name, f"For {what}: at length {n:,}, depth {d:g}% (the needle at word "
                               f"{needle_index(n, d):,}) the model "
                               f"{'finds' if t[i, j] else 'misses'} it, your grid says "
                               f"{bool(g[i, j])}.")
    return wrong(name, "not yet: compare your grid with needles.run_needle_grid's.")
