"""Exercise checks for notebooks 01-03 (score-matrix memory, online softmax, tiled attention).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. The expected
values are computed by lessonlib; the typical mistakes are recomputed here the wrong way so
that a hint can say which one was made.
"""
import functools
import math

import numpy as np

from ..models.configs import load_config
from ..kv_cache import kv_bytes_per_token, llamacpp_compute_buffer
from .. import softmax
from ..softmax import online_attention_row, online_softmax_trace
from ..traffic import (GIB, MIB, flash_hbm_accesses, long_context_cost, naive_traffic,
                       score_matrix_table, tiled_traffic)
from ..models import as_model, load_model
from ..attention import key_blocks, naive_attention
from . import (FLOAT32_RTOL, SIGNIFICANT_DIGITS, Unreadable, Verdict, _short, as_number, call,
               check_number, close_to, correct, distinct, items, shown, vector, wholes, wrong)
from ._preamble import preamble

__all__ = [
    "score_matrix_gib", "unfused_scores_mib", "attention_share", "compute_buffer",
    "online_softmax_update", "attention_update", "sink_share",
    "tiled_reads", "causal_skipped_blocks", "small_block_ratio", "tiled_causal",
    "flash_io_floats", "QUESTIONS",
]

_LLAMA = load_model("Llama-3.1-8B")  # notebook 01's model, read once

# The fixed inputs of each exercise (the notebooks state them in the question).
QUESTIONS = {
    "score_matrix_gib": dict(n=16384, heads=40, bytes_per_score=4, layers=40),
    "unfused_scores_mib": dict(config="tiny-random-qwen2vocab", n_ctx=65536, n_ubatch=256),
    # N_param: Llama 3.1 8B's 8,030,261,248, counted from its config.json (notebook 01 prints
    # it); the question rounds it to 8.03e9, which gives the same 3 significant digits. L and
    # q_dim (32 layers, 32 heads x 128) from the same Model.
    "attention_share": dict(n=65536, params=_LLAMA.params, layers=_LLAMA.shape.layers,
                            q_dim=_LLAMA.shape.q_dim, config=_LLAMA.name),
    "sink_share": dict(scores=(1.0, 3.0, 2.0, 5.0, 0.5, 4.0), sink_logit=7.0),
    "tiled_reads": dict(n=100, d=8, block=16),
    "causal_skipped_blocks": dict(n=300, block=64),
    "small_block_ratio": dict(n=4096, d=128, block=32),
    "flash_io_floats": dict(n=10000, d=64, sram=32768),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


# ------------------------------------------------------------------ notebook 01

@preamble
def score_matrix_gib(answer):
    """GiB of one layer's score matrix S at n = 16,384 with 40 query heads, FP32 (01, ex. 1)."""
    q = QUESTIONS["score_matrix_gib"]
    n, h, b, layers = q["n"], q["heads"], q["bytes_per_score"], q["layers"]
    row = score_matrix_table([n], heads=h, layers=1, bytes_per_score=b)[0]
    expected = row.layer_bytes / GIB
    mistakes = [
        (expected / h, f"That is one head's matrix: each of the {h} query heads has its own S."),
        (expected / b, "That counts scores, not bytes: each FP32 score takes 4 bytes."),
        (row.layer_bytes / 1e9, "Right bytes, wrong unit: 1 GiB is 2**30 bytes, not 10**9."),
        (expected / 2, "The question's scores are FP32 (4 bytes), not FP16 (2 bytes)."),
        (n * h * b / GIB, "S holds n x n scores per head, not n: one row per query, one column "
                          "per key."),
        (row.traffic_bytes / GIB, "That is the traffic (write S, read S, write P, read P); the "
                                  "question asks for the size of S once."),
        (expected * layers, f"That is all {layers} layers; the question asks for one layer."),
    ]
    return check_number("score_matrix_gib", answer, expected, mistakes,
                         digits=SIGNIFICANT_DIGITS, unit="GiB",
                         generic="Count n x n scores per head, times heads, times 4 bytes, "
                                 "divided by 2**30.")


@preamble
def unfused_scores_mib(answer):
    """MiB of the F32 score matrix llama.cpp holds at -c 65536 -ub 256 -fa off (01, going
    deeper, ex. 3).

    The tiny model has 8 query heads and 2 KV heads.
    """
    q = QUESTIONS["unfused_scores_mib"]
    model = load_model(q["config"])
    buf = llamacpp_compute_buffer(model, q["n_ctx"], q["n_ubatch"], flash_attn=False)
    expected = buf.scores_bytes / MIB
    heads, kv_heads = model.shape.heads, model.shape.kv_heads
    mistakes = [
        (expected * kv_heads / heads, f"You used the {kv_heads} KV heads. GQA shares keys and "
                                      f"values, but each of the {heads} query heads still has "
                                      f"its own row of scores."),
        (expected / heads, "That is one head; the matrix holds a slice for every query head."),
        (expected / 2, "llama.cpp's unfused path keeps the scores in F32: 4 bytes each."),
        (expected / 4, "That counts scores, not bytes: F32 is 4 bytes per score."),
        (expected * q["n_ctx"] / q["n_ubatch"], "A micro-batch holds -ub queries, not n_ctx: "
                                               "the slice is ub x n_ctx per head."),
        ((buf.scores_bytes + buf.mask_bytes) / MIB,
         "That adds the KQ mask (ub x n_ctx x 4 bytes); the question asks for the scores alone."),
        (buf.logits_bytes / MIB, "That is the logits buffer (ub x vocab x 4), which -fa on "
                                 "leaves as the largest tensor; the question asks for the scores."),
        (expected * 1.048576, "Right bytes, wrong unit: 1 MiB is 2**20 bytes, not 10**6."),
    ]
    return check_number("unfused_scores_mib", answer, expected, mistakes,
                         digits=SIGNIFICANT_DIGITS, unit="MiB",
                         generic="Queries x keys x query heads x 4 bytes, divided by 2**20.")


@preamble
def attention_share(answer):
    """Attention's share of prefill FLOPs at n = 65,536, the Llama 3.1 8B shape (01, ex. 2)."""
    q = QUESTIONS["attention_share"]
    kv = kv_bytes_per_token(load_config(q["config"]))
    args = dict(params=q["params"], layers=q["layers"], q_dim=q["q_dim"], kv_bytes_per_token=kv)
    row = long_context_cost([q["n"]], **args)[0]
    full = long_context_cost([q["n"]], causal=False, **args)[0]
    expected = row.attention_share
    one_layer = row.attention_flops / q["layers"]
    mistakes = [
        (full.attention_share, "You counted the full n x n matrix: with the causal mask a "
                               "query sees only earlier keys, which halves Q K^T and P V."),
        (100 * expected, "Right value, given as a percentage: answer a fraction between 0 "
                         "and 1."),
        (row.attention_flops / row.weight_flops, "That is attention / weights; the share is "
                                                 "attention / (weights + attention)."),
        (one_layer / (one_layer + row.weight_flops), f"That is one layer's attention: multiply "
                                                     f"by the {q['layers']} layers."),
        (1 - expected, "That is the weights' share; the question asks for attention's."),
    ]
    return check_number("attention_share", answer, expected, mistakes,
                         digits=SIGNIFICANT_DIGITS, unit="",
                         generic="weights = 2 x params x n; causal attention = 2 x n^2 x "
                                 "q_dim x layers; share = attention / (weights + attention).")


# ------------------------------------------------------------------ notebook 01, the build
# The student writes lessonlib's estimate of llama.cpp's compute buffer: compute_buffer(config,
# n_ctx, ub, flash_attn) -> bytes, the larger of the two peaks (the logits; unfused, the scores
# with the mask beside them). Tried on many configs and settings against
# kv_cache.llamacpp_compute_buffer.

def _config(heads, kv_heads, vocab, head_dim=64, layers=2):
    return {"num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
            "hidden_size": heads * head_dim, "num_hidden_layers": layers}


# (config, n_ctx, ub, flash_attn): the edge cases, then seeded random ones (_buffer_cases).
_BUFFER_EDGES = [
    ("tiny-random-qwen2vocab", 65536, 512, False),  # the notebook's last row: scores win
    ("tiny-random-qwen2vocab", 65536, 128, True),  # fused: the logits alone
    ("Llama-3.1-8B", 8192, 512, False),  # scores + mask above the logits
    ("Llama-3.1-8B", 2048, 512, False),  # a short context: the logits are the larger peak
    ("Llama-3.1-8B", 131072, 1, False),  # one query (a decode step)
    (_config(8, 8, 140_000), 16384, 64, False),  # scores < logits < scores + mask
    (_config(16, 1, 32_000), 4096, 256, False),  # one KV head (MQA)
    (_config(1, 1, 50_000), 30_000, 7, False),  # one head, a ub that is no power of 2
]
_BUFFER_RANDOM = 24


@functools.lru_cache(maxsize=1)
def _buffer_cases():
    """((config, n_ctx, ub, flash_attn), ...): the same inputs on every run (seeded)."""
    rng = np.random.default_rng(101)
    cases = [(load_config(c) if isinstance(c, str) else c, n, ub, fa)
             for c, n, ub, fa in _BUFFER_EDGES]
    for _ in range(_BUFFER_RANDOM):
        heads = int(rng.choice([1, 2, 4, 8, 12, 16, 28, 32, 40, 64, 128]))
        kv = int(rng.choice([d for d in range(1, heads + 1) if heads % d == 0 and d <= 16]))
        cases.append((_config(heads, kv, int(rng.integers(1_000, 260_000))),
                      256 * int(rng.integers(1, 513)), int(rng.integers(1, 2049)),
                      bool(rng.random() < 0.25)))
    return tuple(cases)


def _buffer_probes():
    return list(_buffer_cases()[:3])


def _buffer_variant(cfg, n_ctx, ub, fa, slip=None):
    """lessonlib's estimate, or the same with one typical slip."""
    h, kv, vocab = _heads_vocab(cfg)
    logits = ub * vocab * 4
    heads = kv if slip == "kv_heads" else h
    queries = n_ctx if slip == "n_squared" else ub
    scores = queries * n_ctx * heads * (2 if slip == "fp16" else 4)
    mask = {"no_mask": 0, "mask_per_head": ub * n_ctx * 4 * h}.get(slip, ub * n_ctx * 4)
    if fa and slip != "fa_ignored":
        scores = mask = 0
    attention = scores + mask
    if slip == "sum":
        return logits + attention
    if slip == "no_logits":
        return attention if attention else logits
    return max(logits, attention)


_BUFFER_SLIPS = [
    ("sum", "That adds the logits to the scores and the mask. They are never alive together: "
            "the allocator frees the last layer's scores and mask before the logits are "
            "computed, so the buffer holds the larger peak, not the sum."),
    ("no_mask", "Right except where the mask tips the balance: beside the scores, the unfused "
                "softmax reads an F32 mask of ub x n_ctx values. Count it with the scores."),
    ("kv_heads", "You used the KV heads for the scores. GQA shares keys and values between "
                 "query heads, not scores: every query head has its own ub x n_ctx slice."),
    ("mask_per_head", "The mask is one ub x n_ctx table that every head reads, not one per "
                      "head."),
    ("fa_ignored", "With flash attention on (flash_attn=True) the scores and the mask of the "
                   "unfused path never exist: the logits are all that is left."),
    ("no_logits", "Unfused, you returned the scores and mask alone. At a short context the "
                  "logits (ub x vocab x 4 bytes) are the larger peak: take the larger of the two."),
    ("fp16", "llama.cpp's unfused path keeps the scores in F32: 4 bytes each, not 2."),
    ("n_squared", "A micro-batch holds ub queries against n_ctx keys: ub x n_ctx scores per "
                  "head, not n_ctx x n_ctx."),
]


def _heads_vocab(cfg):
    """(query heads, KV heads, vocab) of a case's config."""
    model = as_model(cfg)
    return model.shape.heads, model.shape.kv_heads, model.vocab_size


def _buffer_text(cfg, n_ctx, ub, fa):
    h, kv, vocab = _heads_vocab(cfg)
    return (f"{h} query heads, {kv} KV heads, vocab {vocab:,}, n_ctx = {n_ctx:,}, ub = {ub}, "
            f"flash_attn = {fa}")


@preamble(function="Give a function compute_buffer(config, n_ctx, ub, flash_attn) that returns "
                   "a number of bytes.", probes=_buffer_probes)
def compute_buffer(buffer):
    """``compute_buffer(config, n_ctx, ub, flash_attn) -> bytes``: lessonlib's estimate of
    llama.cpp's compute buffer, the larger of the logits (ub x vocab x 4) and, unfused, the F32
    scores of every query head plus the F32 mask (01, going deeper, ex. 4). Tried on the edge
    cases of ``_BUFFER_EDGES`` and ``_BUFFER_RANDOM`` seeded random configs and settings against
    ``kv_cache.llamacpp_compute_buffer``; exact to 1e-9 (a float of the right bytes passes)."""
    name = "compute_buffer"
    cases, got = _buffer_cases(), []
    for cfg, n_ctx, ub, fa in cases:
        result, error = call(buffer, cfg, n_ctx, ub, fa,
                             label=f"compute_buffer(config, {n_ctx}, {ub}, {fa})")
        if error:
            return wrong(name, error)
        value = as_number(result)
        if value is None:
            return wrong(name, f"For {_buffer_text(cfg, n_ctx, ub, fa)} it returned "
                               f"{_short(result)}; return one number, the bytes.")
        got.append(value)
    want = [llamacpp_compute_buffer(cfg, n_ctx, ub, flash_attn=fa).estimate_bytes
            for cfg, n_ctx, ub, fa in cases]

    def same(values):
        return all(math.isclose(g, w, rel_tol=1e-9) for g, w in zip(got, values))

    if same(want):
        return correct(name, f"Correct on {len(cases)} settings: the buffer is the larger peak, "
                             f"the logits or (unfused) every query head's F32 scores with the "
                             f"mask beside them.")
    if same([w / MIB for w in want]):
        return wrong(name, "Right sizes, in MiB: return bytes.")
    for slip, hint in _BUFFER_SLIPS:
        if same([_buffer_variant(*case, slip) for case in cases]):
            return wrong(name, hint)
    bad = next(i for i, (g, w) in enumerate(zip(got, want)) if not math.isclose(g, w, rel_tol=1e-9))
    cfg, n_ctx, ub, fa = cases[bad]
    buf = llamacpp_compute_buffer(cfg, n_ctx, ub, flash_attn=fa)
    g, w = distinct(got[bad], want[bad])
    return wrong(name, f"For {_buffer_text(cfg, n_ctx, ub, fa)} it gave {g} bytes; the estimate "
                       f"is {w}: logits {buf.logits_bytes:,}, scores {buf.scores_bytes:,}, mask "
                       f"{buf.mask_bytes:,} bytes, and the buffer is the larger of the logits "
                       f"and scores + mask.")


# ------------------------------------------------------------------ notebook 02

_OVERFLOW = ("It overflowed: exp of a large score is too big. Subtract the running max inside "
             "every exp.")


def _reals(result, k):
    """A student function's result as k floats (NaN and inf kept: the check judges them), or
    None when it is not k numbers."""
    try:
        return tuple(vector(result, size=k, finite=False))
    except Unreadable:
        return None


# (state m, l, new score x) probes: a key that raises the max (most mistakes show here), a
# key below the max, the first key (m = -inf, l = 0), huge scores where forgetting the max
# overflows, a masked key (-inf) after real ones, and a masked first key, where the formula
# alone computes exp(-inf - (-inf)) = NaN.
_SOFTMAX_PROBES = [(3.0, 1.1353352832366128, 5.0), (3.0, 1.5032147244080551, 2.0),
                   (-math.inf, 0.0, 1.0), (1000.0, 1.0, 1001.0),
                   (3.0, 1.1353352832366128, -math.inf), (-math.inf, 0.0, -math.inf)]

# The six scores again, behind two masked keys and with one in the middle: every prefix of the
# first two is all-masked.
_MASKED_SCORES = (-math.inf, -math.inf) + QUESTIONS["sink_share"]["scores"][:3] + (-math.inf,) \
    + QUESTIONS["sink_share"]["scores"][3:]
# Both sequences as the messages show them: (1, 3, 2, 5, 0.5, 4), (-inf, -inf, 1, ...).
_SCORES = "(" + ", ".join(f"{x:g}" for x in QUESTIONS["sink_share"]["scores"]) + ")"
_MASKED_TEXT = "(" + ", ".join(f"{x:g}" for x in _MASKED_SCORES) + ")"

_MASKED_FIRST = ("For a masked first key (m = -inf, l = 0, x = -inf) it gave l = {l}: m_new = "
                 "max(m, x) is still -inf, and exp(m - m_new) = exp(-inf - (-inf)) is NaN in "
                 "floating point, which then spreads to every later step. While every key so "
                 "far is masked there is nothing to sum: return the state unchanged.")


def _softmax_variants(m, l, x):
    """The right update and the usual wrong ones, for one probe (NaN where undefined)."""
    m_new = max(m, x)
    if m_new == -math.inf:  # every key so far masked: the state stays; no mistake to name
        return {"right": (m, l)}
    with np.errstate(all="ignore"):
        e = lambda z: float(np.exp(np.float64(z)))  # noqa: E731  (inf instead of OverflowError)
        return {
            "right": (m_new, l * e(m - m_new) + e(x - m_new)),
            "no_rescale": (m_new, l + e(x - m_new)),
            "upside_down": (m_new, l * e(m_new - m) + e(x - m_new)),
            "rescale_new": (m_new, l + e(x - m_new) * e(m - m_new)),
            "m_is_x": (x, l * e(m - x) + 1.0),
            "no_max": (m_new, l + e(x)),
        }


_SOFTMAX_HINTS = {
    "no_rescale": "When x raises the max, the old l was summed relative to the old m: multiply "
                  "it by exp(m - m_new) before adding the new term (you forgot to rescale l).",
    "upside_down": "The rescale factor is upside down: use exp(m - m_new), which is <= 1, "
                   "not exp(m_new - m).",
    "rescale_new": "The factor exp(m - m_new) belongs on the old sum l, not on the new term.",
    "m_is_x": "m must be the running maximum, max(m, x), not the latest score.",
    "no_max": "Subtract the running max: add exp(x - m_new), not exp(x), which overflows for "
              "large scores.",
}


@preamble(function="Give a function update(m, l, x) that returns (m_new, l_new).",
          probes=_SOFTMAX_PROBES)
def online_softmax_update(update):
    """``update(m, l, x) -> (m_new, l_new)``: one step of the one-pass softmax (02, ex. 1).
    A right update computed in float32 passes (``FLOAT32_RTOL``)."""
    name = "online_softmax_update"
    for m, l, x in _SOFTMAX_PROBES:
        result, error = call(update, m, l, x, overflow=_OVERFLOW)
        if error:
            return wrong(name, error)
        got = _reals(result, 2)
        if got is None:
            return wrong(name, f"update({m}, {l:.6g}, {x}) returned {_short(result)}; return "
                               f"two numbers (m_new, l_new).")
        variants = _softmax_variants(m, l, x)
        right = variants["right"]
        if close_to(got, right, rtol=FLOAT32_RTOL):
            continue
        if close_to(got[::-1], right, rtol=FLOAT32_RTOL):
            return wrong(name, "The values are right but swapped: return (m_new, l_new).")
        for key, hint in _SOFTMAX_HINTS.items():
            if key in variants and close_to(got, variants[key], rtol=FLOAT32_RTOL):
                return wrong(name, hint)
        if m == x == -math.inf:
            return wrong(name, _MASKED_FIRST.format(l=got[1]) if not np.isfinite(got[1])
                         else f"For a masked first key (m = -inf, l = 0, x = -inf) it gave "
                              f"({got[0]}, {got[1]}); a masked key adds exp(-inf) = 0, so the "
                              f"state stays (-inf, 0).")
        if not np.isfinite(got[1]):
            start = "the first key (m = -inf, l = 0)" if m == -math.inf else f"x = {x}"
            return wrong(name, f"For {start} it gave l = {got[1]}: l must stay a finite sum of "
                               f"exp(x_j - m) terms, each at most 1.")
        (gm, em), (gs, es) = distinct(got[0], right[0]), distinct(got[1], right[1])
        return wrong(name, f"update({m}, {l:.6g}, {x}) returned ({gm}, {gs}); expected "
                           f"m_new = max(m, x) = {em} and l_new = l * exp(m - m_new) + "
                           f"exp(x - m_new) = {es}.")
    # The probes pass: notebook 02's six scores must come out of the same function, in order,
    # and again behind two masked keys (with a third in the middle).
    for scores, what in ((QUESTIONS["sink_share"]["scores"], f"the six scores {_SCORES}"),
                         (_MASKED_SCORES, f"the scores {_MASKED_TEXT}")):
        m, l = -math.inf, 0.0
        for step in online_softmax_trace(scores):
            result, error = call(update, m, l, step.x, overflow=_OVERFLOW)
            got = None if error else _reals(result, 2)
            if got is None:
                return wrong(name, error or f"Step {step.i} over {what} returned "
                                   f"{_short(result)}.")
            m, l = got
            if not close_to((m, l), (step.m, step.l), rtol=FLOAT32_RTOL):
                (gm, em), (gs, es) = distinct(m, step.m), distinct(l, step.l)
                return wrong(name, f"Step {step.i} over {what} gives m = {gm}, l = {gs}; "
                                   f"expected m = {em}, l = {es}.")
    return correct(name, f"Correct: when the max rises the old sum shrinks by exp(m - m_new), "
                         f"and the six scores' final l = {l:.6f} comes out in one pass.")


# (m, l, acc, x, v) probes along notebook 02's six keys and their 2-D values: the first key, a
# key below the max, a key that raises it, a masked key after real ones, a masked first key.
_ACC_PROBES = [
    (-math.inf, 0.0, (0.0, 0.0), 1.0, (1.0, 0.0)),
    (3.0, 1.1353352832366128, (0.1353352832366127, 1.0), 2.0, (1.0, 1.0)),
    (3.0, 1.5032147244080551, (0.503214724408055, 1.3678794411714423), 5.0, (2.0, 0.0)),
    (3.0, 1.1353352832366128, (0.1353352832366127, 1.0), -math.inf, (1.0, 1.0)),
    (-math.inf, 0.0, (0.0, 0.0), -math.inf, (1.0, 0.0)),
]


def _acc_variants(m, l, acc, x, v):
    acc, v = np.asarray(acc, dtype=float), np.asarray(v, dtype=float)
    m_new = max(m, x)
    if m_new == -math.inf:  # every key so far masked: the state stays; no mistake to name
        return {"right": (m, l, acc)}
    a, w = math.exp(m - m_new), math.exp(x - m_new)
    l_new = l * a + w
    w_old = math.exp(x - m) if m > -math.inf else w
    return {
        "right": (m_new, l_new, acc * a + w * v),
        "no_rescale_acc": (m_new, l_new, acc + w * v),
        "no_rescale_s": (m_new, l + w, acc * a + w * v),
        "normalised": (m_new, l_new, (acc * a + w * v) / l_new),
        "old_max_weight": (m_new, l_new, acc * a + w_old * v),
    }


_ACC_HINTS = {
    "no_rescale_acc": "You rescaled l but not acc: when the max rises, acc was accumulated "
                      "relative to the old m too, so multiply it by the same exp(m - m_new).",
    "no_rescale_s": "acc is rescaled, but l is not: both sums were built relative to the old "
                    "m and both need the factor exp(m - m_new).",
    "normalised": "You divided by l inside the loop. Keep acc unnormalised and divide by l "
                  "once, after the last key.",
    "old_max_weight": "The new key's weight must be exp(x - m_new), relative to the new max.",
}


def _acc_state(result):
    """(m, l, acc) from a student's result, or a hint saying what is wrong with it."""
    try:
        parts = items(result, what="(m_new, l_new, acc_new)")
    except Unreadable:
        parts = None
    if parts is None or len(parts) != 3:
        return None, (f"It returned {_short(result)}; return three things: "
                      f"(m_new, l_new, acc_new).")
    ms = _reals(parts[:2], 2)
    if ms is None:
        return None, (f"It returned {_short(result)}; m_new and l_new must be numbers: "
                      f"return (m_new, l_new, acc_new).")
    try:
        acc = vector(parts[2], finite=False)
    except Unreadable:
        acc = None
    if acc is None or acc.shape != (2,):
        return None, "acc_new must be a vector with the value's dimension (2 here)."
    return (ms[0], ms[1], acc), None


def _acc_args():
    """The probes as the student's function gets them: acc and v as arrays."""
    return [(m, l, np.array(acc), x, np.array(v)) for m, l, acc, x, v in _ACC_PROBES]


@preamble(function="Give a function update(m, l, acc, x, v) returning (m_new, l_new, acc_new).",
          probes=_acc_args)
def attention_update(update):
    """``update(m, l, acc, x, v) -> (m_new, l_new, acc_new)``: the value accumulator (02, going
    deeper, ex. 3).
    Student code gets copies of acc and v: writing into them changes nothing here."""
    name = "attention_update"
    for m, l, acc, x, v in _ACC_PROBES:
        result, error = call(update, m, l, np.array(acc), x, np.array(v))
        if error:
            return wrong(name, error)
        got, problem = _acc_state(result)
        if problem:
            return wrong(name, problem)
        variants = _acc_variants(m, l, acc, x, v)
        flat = np.concatenate([[got[0], got[1]], got[2]])

        def same(t):
            return close_to(flat, np.concatenate([[t[0], t[1]], t[2]]), rtol=FLOAT32_RTOL)

        if same(variants["right"]):
            continue
        for key, hint in _ACC_HINTS.items():
            if key in variants and same(variants[key]):
                return wrong(name, hint)
        if m == x == -math.inf:
            return wrong(name, _MASKED_FIRST.format(l=got[1]) if not np.isfinite(got[1])
                         else f"For a masked first key (m = -inf, l = 0, acc = {acc}, x = -inf) "
                              f"it gave ({got[0]}, {got[1]}, {got[2].tolist()}); a masked key "
                              f"adds nothing, so the state stays (-inf, 0, acc).")
        return wrong(name, f"From m = {m:g}, l = {l:.6f}, acc = {acc} and the key (x = {x}, "
                           f"v = {v}) expected m = {variants['right'][0]:g}, l = "
                           f"{variants['right'][1]:.6f}, acc = "
                           f"{np.round(variants['right'][2], 6).tolist()}.")
    scores = QUESTIONS["sink_share"]["scores"]
    values = np.array([[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [1, -1]], dtype=float)
    want = online_attention_row(scores, values)
    # The same keys behind two masked keys, with a third in the middle: same output.
    masked = [i for i, x in enumerate(_MASKED_SCORES) if x == -math.inf]
    hidden = np.insert(values, [m - k for k, m in enumerate(masked)], 9.0, axis=0)
    for keys, vals, what in ((scores, values, "the six keys and their 2-D values"),
                             (_MASKED_SCORES, hidden, f"the scores {_MASKED_TEXT} (the six "
                                                      f"keys with three masked ones)")):
        m, l, acc = -math.inf, 0.0, np.zeros(2)
        for x, v in zip(keys, vals):
            result, error = call(update, m, l, acc, x, v)
            if error:
                return wrong(name, error)
            state, problem = _acc_state(result)
            if problem:
                return wrong(name, problem)
            m, l, acc = state
        with np.errstate(all="ignore"):
            out = acc / l
        if not close_to(out, want, rtol=FLOAT32_RTOL):
            pairs = [distinct(o, w) for o, w in zip(out, want)]
            return wrong(name, f"Over {what} acc / l = [{', '.join(g for g, _ in pairs)}]"
                               f"; expected [{', '.join(e for _, e in pairs)}].")
    shown_out = ", ".join(f"{o:.6f}" for o in out)
    return correct(name, f"Correct: the six keys' output ({shown_out}), divided by l once, "
                         f"after the last key.")


@preamble
def sink_share(answer):
    """Fraction of the weight a learned sink takes from notebook 02's six scores (02, ex. 2).

    The sink's logit z = 7 is above every score (max 5): it becomes the new maximum.
    """
    q = QUESTIONS["sink_share"]
    x, sink = q["scores"], q["sink_logit"]
    keys = online_softmax_trace(x)[-1]  # m, l over the keys alone
    expected = softmax.sink_share(x, sink)  # exp(z - m) / l, m and l with the sink
    term_old = math.exp(sink - keys.m)  # the sink's term measured against the keys' max
    mistakes = [
        (1.0 / (keys.l + 1.0), f"The sink raises the max from {keys.m:g} to {sink:g}: rescale "
                               f"l by exp({keys.m:g} - {sink:g}) before adding the sink's "
                               f"term exp(z - {sink:g}) = 1 (you forgot to rescale l)."),
        (term_old / keys.l, "The sink joins the denominator: divide its term by l including "
                            "the sink's own term, not by the keys' sum alone."),
        (1.0, "exp(z - m) = 1 is the sink's term; its share is that term over the new l."),
        (1 - expected, "That is the keys' share; the question asks for the sink's."),
        (100 * expected, "Right value, given as a percentage: answer a fraction between 0 and "
                         "1."),
        (math.exp(sink) / keys.l, f"That mixes reference points: l = {keys.l:.6f} is measured "
                                  f"against m = {keys.m:g}, so the sink's term must be too "
                                  f"(exp(z - m)), or rescale everything to the new max."),
    ]
    return check_number("sink_share", answer, expected, mistakes,
                         digits=SIGNIFICANT_DIGITS, unit="",
                         generic="With the sink logit z as one more score: m_new = max(m, z), "
                                 "l_new = l * exp(m - m_new) + exp(z - m_new); the share is "
                                 "exp(z - m_new) / l_new.")


# ------------------------------------------------------------------ notebook 03

@preamble
def tiled_reads(answer):
    """Floats tiled attention reads for n = 100, d = 8, square blocks of 16, no mask (03, ex. 1)."""
    q = QUESTIONS["tiled_reads"]
    n, d, b = q["n"], q["d"], q["block"]
    t = tiled_traffic(n, d, b)
    expected = t.reads
    kv_per_block = 2 * n * d
    mistakes = [
        (n * d + (n // b) * kv_per_block, f"n / B = {n / b:g} is not a whole number of blocks: "
                                          f"the last, partial query block must be loaded too, "
                                          f"so use ceil(n / B) = {-(-n // b)}, not floor."),
        (n * d + n / b * kv_per_block, f"The number of query blocks is ceil(n / B) = "
                                       f"{-(-n // b)}, not the fraction n / B = {n / b:g}: "
                                       f"each block streams all of K and V."),
        (expected - n * d, "Add the queries: each query block is loaded once, n x d floats in "
                           "total."),
        (n * d + -(-n // b) * n * d, "Each key row brings a K row and a V row: 2 x d floats, "
                                     "not d."),
        (t.total, "That includes the writes of O; the question asks for reads only."),
        (naive_traffic(n, d).reads, "That is the naive count (it reads S and P back); the "
                                    "question asks for the tiled one."),
        (n * d + -(-n // b) * -(-n // b) * 2 * b * d,
         f"The last key block holds only n - {n // b}B = {n % b} rows: count the real rows, "
         f"not full blocks."),
    ]
    return check_number("tiled_reads", answer, expected, mistakes, unit="floats", integer=True,
                         generic="reads = n d (queries, once) + ceil(n / B) x 2 n d (all K and "
                                 "V rows per query block).")


def _expected_skipped(n, b):
    t = -(-n // b)
    visited = {(i0 // b, j0 // b) for i0 in range(0, n, b)
               for j0 in key_blocks(i0, min(i0 + b, n), n, b, causal=True)}
    return {(i, j) for i in range(t) for j in range(t)} - visited, t


_PAIRS = "a set of (query block, key block) pairs, e.g. {(0, 3), ...}"


def _block_pairs(answer):
    """The student's pairs as a set of (i, j) ints; every index must be a whole number."""
    got = set()
    for pair in items(answer, what=_PAIRS):
        ij = wholes(pair, what=_PAIRS + " of whole block indices")
        if len(ij) != 2:
            raise Unreadable(f"Give {_PAIRS}: each pair holds two block indices (i, j), got "
                             f"{_short(pair)}.")
        got.add(tuple(ij))
    return got


@preamble
def causal_skipped_blocks(answer):
    """The (query block, key block) pairs a causal tiled kernel skips, n = 300, B = 64.

    300 is not a multiple of 64: there are ceil(300 / 64) = 5 blocks, the last one partial
    (03, ex. 2).
    """
    name = "causal_skipped_blocks"
    q = QUESTIONS[name]
    expected, t = _expected_skipped(q["n"], q["block"])
    count = as_number(answer)
    if count is not None:
        if count == len(expected):
            return wrong(name, f"Right count ({len(expected)}); now list the pairs (i, j).")
        return wrong(name, f"Give the set of skipped (query block, key block) pairs, not a "
                           f"count (and {shown(count)} is not the count either).")
    got = _block_pairs(answer)
    if got == expected:
        return correct(name, f"Correct: {len(expected)} of {t * t} tiles lie entirely after "
                             f"the diagonal and are never loaded.")
    if not got:
        return wrong(name, "Nothing skipped is what the no-mask kernel does. With the causal "
                           "mask, a tile whose keys all come after its queries is hidden "
                           "entirely: skip it.")
    diagonal = {(i, i) for i in range(t)}
    if got == expected | diagonal:
        return wrong(name, "The diagonal tiles must be computed: each query sees itself and "
                           "the keys before it in that tile (the mask hides only part of it).")
    floor_t = q["n"] // q["block"]
    if floor_t < t and got == {(i, j) for i, j in expected if j < floor_t}:
        return wrong(name, f"n / B = {q['n'] / q['block']:g}: there are ceil(n / B) = {t} "
                           f"blocks, the last one partial. Its key block is hidden from every "
                           f"earlier query block too.")
    if got == {(j, i) for i, j in expected}:
        return wrong(name, "Those are the tiles before the diagonal (key block < query block), "
                           "which are fully visible. A query never sees later keys: skip "
                           "j > i.")
    outside = {(i, j) for i, j in got if not (0 <= i < t and 0 <= j < t)}
    if outside:
        return wrong(name, f"Blocks are numbered 0..{t - 1} (ceil(n / B) = {t}); "
                           f"{sorted(outside)} do not exist.")
    missing, extra = sorted(expected - got), sorted(got - expected)
    parts = []
    if extra:
        parts.append(f"{extra} hold keys at or before some query in the block: they must run")
    if missing:
        parts.append(f"{len(missing)} hidden tile(s) are missing")
    return wrong(name, "; ".join(parts) + ". A tile (i, j) is skipped when its first key "
                                          "j B comes after its last query i B + B - 1.")


@preamble
def small_block_ratio(answer):
    """naive floats / tiled floats at n = 4096, d = 128, B = 32 (exact counts; 03, going deeper,
    ex. 4)."""
    q = QUESTIONS["small_block_ratio"]
    n, d, b = q["n"], q["d"], q["block"]
    naive, tiled = naive_traffic(n, d).total, tiled_traffic(n, d, b).total
    expected = naive / tiled
    mistakes = [
        (2 * b / d, f"2B/d = {2 * b / d:g} is the estimate that ignores the n d terms; the "
                    f"question asks for the exact counts (naive 4n^2 + 4nd, tiled 2nd + "
                    f"ceil(n/B) 2nd)."),
        (tiled / naive, "Upside down: the ratio is naive / tiled."),
        (naive / (tiled - 2 * n * d), "Tiled also reads Q once and writes O once (2 n d "
                                      "floats)."),
        (4 * n * n / tiled, "Naive also moves Q, K, V and O (4 n d floats), not only S and P."),
    ]
    return check_number("small_block_ratio", answer, expected, mistakes, unit="",
                         digits=SIGNIFICANT_DIGITS, generic="Divide naive_traffic(n, d).total by "
                                            "tiled_traffic(n, d, B).total, or the formulas.")


@preamble
def flash_io_floats(answer):
    """Floats FlashAttention's Algorithm 1 moves between HBM and SRAM for one head, n = 10,000,
    d = 64, an SRAM of M = 32,768 floats (03, going deeper, ex. 5). Exact: a count."""
    q = QUESTIONS["flash_io_floats"]
    n, d, sram = q["n"], q["d"], q["sram"]
    io = flash_hbm_accesses(n, d, sram)
    first, kv, row = n * d + 2 * n, 2 * n * d, 3 * d + 4  # O, l, m written; K, V read; per pass
    bc = io.block_c
    mistakes = [
        (first + kv + (n // bc) * row * n,
         f"n / B_c = {n / bc:g} is not a whole number of key blocks: the last, partial block is "
         f"one more pass over the queries, so T_c = ceil(n / B_c) = {io.passes}, not floor."),
        (first + kv + -(-n // io.block_r) * row * n,
         f"The passes over the queries run once per block of B_c = {bc} keys (the outer loop), "
         f"not once per block of B_r = {io.block_r} queries."),
        (first + kv + -(-n // (sram // d)) * row * n,
         f"B_c = ceil(M / 4d) = {bc}: four blocks of d floats per row (Q_i, K_j, V_j, O_i) share "
         f"the SRAM, not one (M / d = {sram // d})."),
        (first + kv + io.passes * 3 * d * n,
         "Each pass also loads l_i and m_i and writes them back: 3d + 4 floats per query row, "
         "not 3d."),
        (first + kv + io.passes * (2 * d + 2) * n,
         "Each pass writes O_i, l_i, m_i back as well as loading Q_i, O_i, l_i, m_i: 3d + 4 "
         "floats per query row."),
        (kv + io.passes * row * n, "Add the first write of O = 0, l = 0, m = -inf to HBM before "
                                   "the loops: n d + 2 n floats."),
        (first + io.passes * row * n, "Add the loads of K and V: each block K_j, V_j is read "
                                      "once, 2 n d floats in all."),
        (io.passes * row * n, "Add the first write of O, l, m (n d + 2 n) and the single load of "
                              "every K and V row (2 n d)."),
        (io.standard, "That is standard attention's count, 4 n d + 4 n^2; the question asks for "
                      "Algorithm 1's."),
        (n * n * d * d / sram, "n^2 d^2 / M is the theorem's order of growth, without its "
                               "constant; count Algorithm 1's reads and writes exactly."),
        (12 * n * n * d * d / sram, "12 n^2 d^2 / M is the estimate; count Algorithm 1's reads "
                                    "and writes exactly (ceil included)."),
    ]
    return check_number("flash_io_floats", answer, io.flash, mistakes, unit="floats",
                         integer=True,
                         generic="B_c = ceil(M / 4d); T_c = ceil(n / B_c) passes; floats = "
                                 "(n d + 2 n) + 2 n d + T_c (3 d + 4) n.")


# ------------------------------------------------------------------ notebook 03, the build
# The student writes the tiled causal loop: tiled_causal(q, k, v, B) -> (out, tiles). It is
# tried on many generated inputs, the edge cases first; out is judged against naive attention
# (lessonlib.attention.naive_attention), tiles against the plan key_blocks gives the kernel.

# (nq, nk, d, dv, B): the edge cases, then seeded random shapes (_tiled_cases).
_TILED_EDGES = [
    (64, 64, 8, 8, 16),  # the notebook's tile walk
    (10, 10, 4, 4, 3),  # 10 is not a multiple of 3: a partial last block
    (7, 7, 4, 4, 1),  # B = 1: every tile is one score
    (5, 5, 4, 4, 8),  # n < B: one tile, partly masked
    (1, 1, 4, 4, 4),  # n = 1
    (12, 12, 4, 3, 4),  # values narrower than the head (dv != d)
    (1, 9, 4, 4, 4),  # one new query after 8 earlier tokens (nq < nk)
    (6, 11, 3, 5, 4),  # nq < nk, query blocks not aligned with the key blocks
]
_TILED_RANDOM = 24  # random shapes after the edge cases: nk 1..40, nq 1..nk, B 1..12


@functools.lru_cache(maxsize=1)
def _tiled_cases():
    """((q, k, v, B), ...): the same inputs on every run (seeded)."""
    rng = np.random.default_rng(2203)
    shapes = list(_TILED_EDGES)
    for _ in range(_TILED_RANDOM):
        nk = int(rng.integers(1, 41))
        shapes.append((int(rng.integers(1, nk + 1)), nk, int(rng.integers(1, 7)),
                       int(rng.integers(1, 7)), int(rng.integers(1, 13))))
    cases = []
    for nq, nk, d, dv, b in shapes:
        q, k = rng.standard_normal((nq, d)), rng.standard_normal((nk, d))
        cases.append((q, k, rng.standard_normal((nk, dv)), b))
    return tuple(cases)


def _tiled_probes():
    return [case for case in _tiled_cases()[:3]]


def _tiled_expected(q, k, v, b):
    """(naive causal attention, the number of tiles the kernel's plan computes)."""
    nq, nk = len(q), len(k)
    offset = nk - nq  # query i sits at position offset + i
    tiles = sum(len(key_blocks(offset + i0, offset + min(i0 + b, nq), nk, b, causal=True))
                for i0 in range(0, nq, b))
    return naive_attention(q, k, v, causal=True), tiles


def _tiled_variant(q, k, v, b, *, visit="right", mask="right", rescale_acc=True,
                   rescale_s=True, top_left=False, scaled=True):
    """The tiled loop with one typical slip (NaN rows where nothing was visible): visit "all"
    key blocks or only those "below" the diagonal (wholly visible); mask "none", "strict"
    (j < p) or "loose" (j <= p + 1); acc or l not rescaled; queries at positions 0..nq-1
    (``top_left``) instead of the last nq; scores not divided by sqrt(d)."""
    nq, nk = len(q), len(k)
    offset = 0 if top_left else nk - nq
    out = np.empty((nq, v.shape[1]))
    with np.errstate(all="ignore"):
        for i0 in range(0, nq, b):
            i1 = min(i0 + b, nq)
            p = offset + np.arange(i0, i1)  # the block's query positions
            qi = q[i0:i1] / (np.sqrt(q.shape[1]) if scaled else 1.0)
            m, l = np.full(i1 - i0, -np.inf), np.zeros(i1 - i0)
            acc = np.zeros((i1 - i0, v.shape[1]))
            last = {"right": min(nk, p[-1] + 1), "all": nk, "below": p[0] + 1}[visit]
            for j0 in range(0, last, b):
                j1 = min(j0 + b, nk)
                if visit == "below" and j1 - 1 > p[0]:
                    break
                j = np.arange(j0, j1)[None, :]
                hide = {"right": j > p[:, None], "none": np.zeros((1, 1), bool),
                        "strict": j >= p[:, None], "loose": j > p[:, None] + 1}[mask]
                x = np.where(hide, -np.inf, qi @ k[j0:j1].T)  # (rows, keys in the block)
                m_new = np.maximum(m, x.max(axis=1))
                m_ref = np.where(m_new == -np.inf, 0.0, m_new)
                alpha, w = np.exp(m - m_ref), np.exp(x - m_ref[:, None])
                l = (l * alpha if rescale_s else l) + w.sum(axis=1)
                acc = (acc * alpha[:, None] if rescale_acc else acc) + w @ v[j0:j1]
                m = m_new
            out[i0:i1] = acc / l[:, None]
    return out


# (variant keywords, hint), tried in order against the student's outputs on every case.
_TILED_SLIPS = [
    (dict(visit="below"),
     "You skipped the diagonal tiles too. A tile that holds a query's own position is only "
     "partly hidden: it must run, with the mask applied inside it (skip a tile only when its "
     "first key comes after its last query). Without it the first block sees no key at all "
     "and divides 0 by 0."),
    (dict(mask="none"),
     "The right tiles run, but the diagonal ones need the mask inside them: there some keys "
     "come after some queries. Set the scores of keys j > p to -inf before the max and the "
     "exp."),
    (dict(mask="strict"),
     "Mask off by one: a query sees its own key (j <= p), so hide only j > p. With j >= p "
     "hidden, the first query sees nothing and its row is 0/0 = NaN."),
    (dict(mask="loose"),
     "Mask off by one: key p + 1 is the next token, in the query's future. Hide every j > p."),
    (dict(rescale_acc=False),
     "You rescaled l but not acc: when a row's max rises, acc was summed relative to the old "
     "max too, so multiply it by the same exp(m - m_new) (notebook 02, exercise 2)."),
    (dict(rescale_s=False),
     "acc is rescaled, but l is not: both sums were built relative to the old max and both "
     "need the factor exp(m - m_new)."),
    (dict(rescale_acc=False, rescale_s=False),
     "Neither l nor acc is rescaled when a row's max rises: multiply both by exp(m - m_new) "
     "before adding the new tile."),
    (dict(top_left=True),
     "The queries are the last nq positions: query i sits at position nk - nq + i, not i. "
     "With nq < nk (a model continuing a text it has already read) every query sees all the "
     "earlier keys."),
    (dict(scaled=False),
     "Scale the scores by 1/sqrt(d), as naive attention does: softmax(q k^T / sqrt(d)) v."),
]


def _same_rows(got, want):
    """``got`` matches ``want`` (NaN where it has NaN) within the float32 tolerance."""
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=FLOAT32_RTOL,
                                                        atol=1e-6, equal_nan=True))


def _tiled_result(name, result, q, v, b):
    """(out, tiles) from a student's result, or a Verdict saying what is wrong with it."""
    where = f"tiled_causal(q, k, v, {b}) with nq = {len(q)}"
    try:
        parts = items(result, what="(out, tiles)")
    except Unreadable:
        parts = None
    if parts is None or len(parts) != 2:
        arr = parts is not None and len(parts) == len(q)
        return wrong(name, f"{where} returned {_short(result)}; return two things: (out, "
                           f"tiles)" + (", not out alone." if arr else "."))
    try:
        out = vector(parts[0], what=f"out, an array of shape {(len(q), v.shape[1])}",
                     finite=False, flatten=False)
    except Unreadable as why:
        return wrong(name, f"{where}: {why}")
    if out.shape != (len(q), v.shape[1]):
        return wrong(name, f"{where}: out must have shape (nq, dv) = {(len(q), v.shape[1])}, "
                           f"got {out.shape}.")
    tiles = wholes([parts[1]], what="tiles, the number of tiles your loop computed")[0]
    return out, tiles


def _blocks_divide(q, k, b):
    return len(q) % b == 0 and len(k) % b == 0


@preamble(function="Give a function tiled_causal(q, k, v, B) returning (out, tiles).",
          probes=_tiled_probes)
def tiled_causal(tiled):
    """``tiled_causal(q, k, v, B) -> (out, tiles)``: causal attention of q (nq, d) over k (nk,
    d), v (nk, dv), query i at position nk - nq + i, computed tile by tile with the online
    softmax, skipping the tiles wholly above the diagonal; tiles counts the (query block, key
    block) tiles computed (03, ex. 3). Tried on the edge cases of ``_TILED_EDGES`` and
    ``_TILED_RANDOM`` seeded random shapes; out within ``FLOAT32_RTOL`` of naive attention."""
    name = "tiled_causal"
    cases, outs, counts = _tiled_cases(), [], []
    for q, k, v, b in cases:
        result, error = call(tiled, q, k, v, b, label=f"tiled_causal(q, k, v, {b}) with nq = "
                                                      f"{len(q)}, nk = {len(k)}")
        if error:
            return wrong(name, error)
        got = _tiled_result(name, result, q, v, b)
        if isinstance(got, Verdict):
            return got
        outs.append(got[0])
        counts.append(got[1])
    wants = [_tiled_expected(*case) for case in cases]
    ok = [_same_rows(o, w) for o, (w, _) in zip(outs, wants)]
    if not all(ok):
        for kwargs, hint in _TILED_SLIPS:
            if all(_same_rows(o, _tiled_variant(*case, **kwargs)) for o, case in zip(outs, cases)):
                return wrong(name, hint)
        if any(np.isnan(o).any() for o in outs):
            return wrong(name, "Some rows came out NaN. A row whose keys in a tile are all "
                               "masked has m_new = -inf if it has seen nothing yet, and "
                               "exp(-inf - (-inf)) is NaN (notebook 02's masked first key): "
                               "visit key block 0 first, or guard that row.")
        bad = ok.index(False)
        q, k, v, b = cases[bad]
        if all(good for good, case in zip(ok, cases) if _blocks_divide(*case[:2], case[3])):
            return wrong(name, f"Right whenever B divides nq and nk, wrong for nq = {len(q)}, nk "
                               f"= {len(k)}, B = {b}: the last block is partial. Count "
                               f"ceil(n / B) blocks and end each at min(start + B, n).")
        if all(good for good, case in zip(ok, cases) if len(case[0]) == len(case[1])):
            return wrong(name, f"Right whenever nq = nk, wrong for nq = {len(q)}, nk = "
                               f"{len(k)}: query i sits at position nk - nq + i, and a tile is "
                               f"skipped only when its first key comes after its last query's "
                               f"position.")
        row = int(np.flatnonzero(~np.all(np.isclose(outs[bad], wants[bad][0], rtol=FLOAT32_RTOL,
                                                    atol=1e-6), axis=1))[0])
        got_text, want_text = distinct(outs[bad][row, 0], wants[bad][0][row, 0])
        return wrong(name, f"For nq = {len(q)}, nk = {len(k)}, d = {q.shape[1]}, B = {b}, out's "
                           f"row {row} (position {len(k) - len(q) + row}) starts {got_text}; "
                           f"naive attention gives {want_text}. Per query block: m = -inf, l "
                           f"= 0, acc = 0; for each key block up to the diagonal: scores / "
                           f"sqrt(d), keys j > p set to -inf, then notebook 02's update.")
    want_tiles = [t for _, t in wants]
    if counts == want_tiles:
        return correct(name, f"Correct on {len(cases)} inputs (partial blocks, B = 1, n < B, "
                             f"nq < nk): the output is naive attention's, and the loop computed "
                             f"only the tiles the causal mask leaves visible.")
    every = [-(-len(q) // b) * -(-len(k) // b) for q, k, _, b in cases]
    if counts == every:
        return wrong(name, "The output is right, but your loop computed every tile. A tile "
                           "whose first key comes after its last query is hidden completely: "
                           "do not compute it (that is where the causal kernel saves half its "
                           "work).")
    if counts == [e - t for e, t in zip(every, want_tiles)]:
        return wrong(name, "That counts the tiles skipped; return the number computed.")
    bad = next(i for i, (c, t) in enumerate(zip(counts, want_tiles)) if c != t)
    q, k, _, b = cases[bad]
    more = "more" if counts[bad] > want_tiles[bad] else "fewer"
    return wrong(name, f"The output is right, but for nq = {len(q)}, nk = {len(k)}, B = {b} "
                       f"the count, {counts[bad]:,}, is {more} than the tiles the causal mask "
                       f"leaves visible. Count one per (query block, key block) pair your loop "
                       f"computes, and compute a tile only when its first key is at or before "
                       f"its last query's position.")
