"""Checks for notebook 10 (a real model's long context): each returns a Verdict.

    pi_config(answer)                 the rope_scaling dict that serves 1024 tokens with PI
    uniform_bos_weight(answer)        the weight uniform causal attention gives <bos>
    streaming_positions(answer)       what a 4-sink StreamingLLM cache holds, and the newest
                                      key's RoPE position
    sweep_reach(reach)                reach(extension, threshold): how far each method of the
                                      extension sweep keeps retrieval at or above a threshold
    floor_perplexity(answer)          the perplexity of the filler's entropy floor
    export_row(answer)                where the GGUF export moves row 20 of a head's W_q

The exercises' fixed inputs are the constants below; exercise 3 streams ``STREAM_SEEN`` = 1,001
tokens (0..1000) through a cache of ``N_SINK`` = 4 sinks and ``N_RECENT`` = 252 recent ones.
"""
import functools
from collections.abc import Mapping

import numpy as np

from lessonlib.checks import (SIGNIFICANT_DIGITS, Unreadable, _run, _short, as_number,
                              check_number, correct,
                              digits_tolerance, items, number, quiet, rounded_hint, whole, wholes,
                              wrong)
from lessonlib.checks._preamble import preamble
from lessonlib.kvtask import skip_bigram_table
from lessonlib.models.rope import rope_theta
from lessonlib.rope import rope_frequencies, rotary_dim
from lessonlib.streaming import StreamingCache
from lessonlib.tinylm_results import VARIANT_LABELS, label, load_results, retrieval_reach

__all__ = ["pi_config", "uniform_bos_weight", "streaming_positions", "sweep_reach",
           "floor_perplexity", "export_row", "EXPORT_ROW",
           "PI_LENGTH", "TRAINED_LENGTH", "QUERY_FROM", "STREAM_SEEN", "N_SINK", "N_RECENT"]

TRAINED_LENGTH = 256  # the tiny model's trained context, L0
"""256, the tiny model's trained context L0."""
TRAINED_HEAD_DIM = 32  # its head_dim
PI_LENGTH = 1024  # exercise 1: the length to serve
"""1,024, the length exercise 1 serves."""
QUERY_FROM = 32  # exercise 2: queries at positions QUERY_FROM .. TRAINED_LENGTH - 1
"""32: exercise 2's queries sit at positions QUERY_FROM .. TRAINED_LENGTH - 1."""
STREAM_SEEN, N_SINK, N_RECENT = 1001, 4, 252  # exercise 3: tokens 0..1000 streamed
EXPORT_ROW = 20  # going deeper (llama.cpp): the row of a head's W_q whose new place is asked
"""20, the row of a head's W_q whose place in the GGUF export the llama.cpp exercise asks."""


# rope types that slow pairs unevenly (lessonlib.rope reads them): a dict naming one is not PI
_NOT_UNIFORM = ("ntk", "dynamic", "yarn", "llama3", "longrope")


def _tiny_config(rope_scaling=None):
    cfg = {"rope_theta": 10000.0, "head_dim": 32, "max_position_embeddings": TRAINED_LENGTH}
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    return cfg


def _read(config):
    """(inv_freq, attention factor, rotary dim, rope_theta) lessonlib.rope gives the tiny model
    with this config, or the message of why it cannot."""
    try:
        with quiet():
            inv_freq, af = rope_frequencies(config, seq_len=PI_LENGTH)
            r, base = rotary_dim(config), rope_theta(config)
    except ValueError as err:
        return None, f"lessonlib.rope rejects it: {err}"
    except Exception as err:  # noqa: BLE001 -- whatever a dict holds: a hint, not a traceback
        return None, f"lessonlib.rope cannot read it ({type(err).__name__}: {err})"
    return (inv_freq, af, r, base), None


@preamble(mapping="give a dict such as {{'rope_type': ..., 'factor': ...}}, got {type}")
def pi_config(answer):
    """``answer``: a rope_scaling dict such that the model reads positions 0..1023 as PI does,
    landing on the trained range [0, 256) with as little squeeze as that needs. Keys that are
    legal in a rope dict (``partial_rotary_factor``, ``rope_theta``) are judged, not refused:
    PI changes neither how many dims rotate nor the base."""
    name = "pi_config"
    if "rope_scaling" in answer or "rope_parameters" in answer:
        return wrong(name, "give the rope_scaling dict itself, not a config that holds it")
    kind = answer.get("rope_type", answer.get("type"))
    if kind in _NOT_UNIFORM:  # judged by its name first: what it lacks does not matter
        return wrong(name, f"rope_type {kind!r} slows some pairs more than others; PI slows "
                           f"every pair by the same factor, i.e. reads position m as m / s "
                           f"(rope_type 'linear').")
    if kind == "default":
        return wrong(name, "rope_type 'default' is plain RoPE, no scaling at all; PI is "
                           "rope_type 'linear' with a factor.")
    read, problem = _read(_tiny_config(dict(answer)))
    if problem:
        return wrong(name, problem)
    inv_freq, af, r, base = read
    model = _tiny_config()
    r0, base0 = rotary_dim(model), rope_theta(model)
    if r != r0:
        return wrong(name, f"that rotates {r} of the head's {r0} dims (partial_rotary_factor); "
                           f"the model was trained rotating all {r0}, and PI changes only how "
                           f"fast the pairs turn: leave partial_rotary_factor out (or 1.0).")
    if base != base0:
        return wrong(name, f"rope_theta = {base:g} changes the model's base ({base0:,.0f}, what "
                           f"it was trained with); PI keeps the base and reads position m as "
                           f"m / s.")
    theta, _ = rope_frequencies(model)
    with np.errstate(all="ignore"):
        ratio = theta / inv_freq  # how much each pair is slowed
        uniform = np.allclose(ratio, ratio[0], rtol=1e-9)
    if not uniform:
        return wrong(name, "that slows some pairs more than others (NTK-aware, YaRN, ...): PI "
                           "slows every pair by the same factor, i.e. reads position m as m / s "
                           "(rope_type 'linear').")
    if af != 1.0:
        return wrong(name, f"PI leaves the attention scale alone; this config multiplies cos and "
                           f"sin by {af:.3f}.")
    s = float(ratio[0])
    if np.isclose(s, 1.0):
        return wrong(name, "with factor 1 nothing changes: positions up to 1023 stay beyond the "
                           "trained range [0, 256).")
    last = (PI_LENGTH - 1) / s
    if last >= TRAINED_LENGTH:
        return wrong(name, f"with s = {s:g} the last position 1023 is read as {last:.1f}, still "
                           f"beyond the trained range [0, 256): s must be at least L'/L = 1024/256.")
    if not np.isclose(s, PI_LENGTH / TRAINED_LENGTH):
        return wrong(name, f"s = {s:g} fits, but squeezes neighbours closer than needed "
                           f"(1/{s:g} of a position apart): PI uses s = L'/L exactly.")
    return correct(name, "Correct: rope_type 'linear' with factor 4 reads position m as m / 4, "
                         "so 0..1023 map onto 0..255.75, and neighbours end up 1/4 apart.")


@preamble
def uniform_bos_weight(answer):
    """``answer``: the mean, over queries at positions 32..255, of the weight <bos> (key 0)
    would get if each causal query spread its attention evenly over the keys it can see."""
    name = "uniform_bos_weight"
    p = np.arange(QUERY_FROM, TRAINED_LENGTH)
    expected = float(np.mean(1.0 / (p + 1)))  # query p sees keys 0..p: p + 1 of them
    if as_number(answer) is None:
        try:
            items(answer)
        except Unreadable:
            pass
        else:
            return wrong(name, "give one number (the mean over the queries).")
    value = number(answer)
    tolerance = digits_tolerance(expected, SIGNIFICANT_DIGITS)  # the prompt asks for 3 digits

    def near(a, b):
        return abs(a - b) <= tolerance

    if near(value, expected):
        return correct(name, f"Correct: {expected:.4f}. The query at p sees p + 1 keys, so "
                             f"uniform attention gives <bos> 1/(p + 1).")
    mistakes = [
        (float(np.mean(1.0 / p)), "off by one: the query at position p also sees itself, so it "
                                  "has p + 1 keys, not p."),
        (1.0 / TRAINED_LENGTH, "that is uniform over all 256 keys; a causal query at p sees "
                               "only keys 0..p."),
        (1.0 / (np.mean(p) + 1), "average the weights 1/(p + 1), not the positions: the mean "
                                 "of 1/x is not 1 over the mean of x."),
    ]
    for candidate, hint in mistakes:
        if near(value, candidate):
            return wrong(name, hint)
    close = rounded_hint(answer, value, expected, [c for c, _ in mistakes], near)
    if close:
        return wrong(name, close)
    return wrong(name, "not yet: for each query position p in 32..255, <bos> gets 1/(number of "
                       "keys p can see); average those.")


@preamble
def streaming_positions(answer):
    """``answer``: ``(held, rope_position)``: the original positions a StreamingLLM cache with
    4 sinks and 252 recent tokens holds after tokens 0..1000, sorted, and the RoPE position the
    newest key (token 1000) is rotated by."""
    name = "streaming_positions"
    pair = "a pair: (array of original positions held, RoPE position of token 1000)"
    try:
        parts = items(answer, what=pair)
    except Unreadable:
        parts = None
    if parts is None or len(parts) != 2:
        return wrong(name, f"give {pair}.")
    held = np.array(wholes(parts[0], what="the original positions held, as whole numbers",
                           ordered=False), dtype=object)  # Python ints: no overflow
    rope_position = whole(parts[1], what="the RoPE position as one number")
    cache = StreamingCache(N_SINK, N_RECENT)
    for _ in range(STREAM_SEEN):
        cache.append()
    want = cache.positions
    if held.shape != want.shape or not np.array_equal(np.sort(held), want):
        if held.size and held.ndim == 1 and not np.isin(np.arange(N_SINK), held).all():
            return wrong(name, "the first 4 tokens (the sinks) are never evicted.")
        if held.size == want.size + 1 or held.size == want.size - 1:
            return wrong(name, f"off by one: you gave {held.size} positions, the cache holds "
                               f"exactly 4 + 252 = {want.size}. Count the recent ones back "
                               f"from the newest token, which is one of the 252 itself.")
        return wrong(name, f"the cache holds {want.size} positions: the 4 sinks and the latest "
                           "252.")
    if rope_position == STREAM_SEEN - 1:
        return wrong(name, "1000 is its original position; StreamingLLM rotates by the cache "
                           "slot, so no position beyond the cache size is ever seen.")
    if rope_position != cache.rope_positions[-1]:
        return wrong(name, "slots are numbered 0 .. size - 1 in cache order; the newest key sits "
                           "in the last slot.")
    return correct(name, "Correct: sinks 0..3 and tokens 749..1000, and the newest key is "
                         "rotated as position 255 (keys are cached before RoPE).")


# ------------------------------------------------------------------ reading the extension sweep
# reach(extension, threshold) -> {label: longest length up to which retrieval stays at or above
# threshold, 0 if below already at the shortest}, as tinylm_results.retrieval_reach. Tried on
# the committed sweep at thresholds that sit exactly on its accuracies (64 documents: multiples
# of 1/64) and between them, and on made-up sweeps whose cells come in shuffled order.

def _made_up_sweep(rng):
    """A sweep of 3 to 5 methods at 3 to 5 lengths, accuracies in 64ths (dips and recoveries
    included), its cells shuffled."""
    pairs = [("base", v) for v in VARIANT_LABELS if v != "as_trained"] + [("pi2x", "as_trained")]
    chosen = [pairs[i] for i in rng.choice(len(pairs), size=rng.integers(3, 6), replace=False)]
    start = int(rng.choice([128, 256, 512]))
    lengths = [start * 2 ** k for k in range(int(rng.integers(3, 6)))]
    cells = [{"model": m, "variant": v, "length": n,
              "accuracy": float(rng.integers(20, 65)) / 64}
             for m, v in chosen for n in lengths]
    order = rng.permutation(len(cells))
    return {"trained_length": start, "lengths": lengths, "cells": [cells[i] for i in order]}


@functools.lru_cache(maxsize=1)
def _reach_cases():
    """(extension, threshold) pairs; the committed sweep first."""
    ext = load_results("extension")
    accs = sorted({c["accuracy"] for c in ext["cells"]})
    rng = np.random.default_rng(10)
    cases = [(ext, t) for t in [0.9, 0.5, 0.984375, 1.0, 0.0, accs[1]]
             + [float(x) for x in np.round(rng.uniform(0.3, 1.0, size=3), 3)]]
    for _ in range(8):
        sweep = _made_up_sweep(rng)
        a = sorted({c["accuracy"] for c in sweep["cells"]})
        cases.append((sweep, float(a[rng.integers(len(a))])))  # on a cell's accuracy exactly
    return tuple(cases)


def _slip_reach(extension, threshold, *, stays=True, strict=False, sort=True, first_fail=False):
    """The reach with one typical slip."""
    out = {}
    pairs = list(dict.fromkeys((c["model"], c["variant"]) for c in extension["cells"]))
    for m, v in pairs:
        mine = [(c["length"], c["accuracy"]) for c in extension["cells"]
                if (c["model"], c["variant"]) == (m, v)]
        if sort:
            mine.sort()
        ok = [(a > threshold if strict else a >= threshold) for _, a in mine]
        if not stays:
            reach = max([n for (n, _), k in zip(mine, ok) if k], default=0)
        elif first_fail:
            reach = next((n for (n, _), k in zip(mine, ok) if not k), 0)
        else:
            reach = 0
            for (n, _), k in zip(mine, ok):
                if not k:
                    break
                reach = n
        out[label(m, v)] = reach
    return out


_REACH_SLIPS = [
    (dict(stays=False), "Stays means at every length up to it: a method that dips below the "
                        "threshold and recovers (PI, s = 8: 0.86 at 256, 0.98 at 1,024) "
                        "reaches only as far as the length before the dip."),
    (dict(strict=True), "At or above the threshold: a cell exactly on it (0.984375 is 63 of "
                        "64 documents) still counts, so use >=, not >."),
    (dict(sort=False), "The cells come in no promised order: sort each method's cells by "
                       "length before walking them (the made-up sweeps are shuffled)."),
    (dict(first_fail=True), "That is the first length where retrieval falls below the "
                            "threshold; the reach is the last length before it (0 when even "
                            "the shortest fails)."),
]


def _read_reach(result):
    """The student's dict as {label: whole length}, or a hint why it cannot be read."""
    if not isinstance(result, Mapping):
        return None, (f"returned {_short(result)}; return a dict, label -> length "
                      f"(tinylm_results.label(model, variant) as the key).")
    out = {}
    for key, value in result.items():
        if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key):
            key = label(*key)
        if not isinstance(key, str):
            return None, (f"the key {_short(key)} is not a method's name: use "
                          f"tinylm_results.label(model, variant) (or the pair itself).")
        if value is None:
            value = 0
        try:
            value = whole(value, what="a length in tokens")
        except Unreadable as err:
            return None, f"for {key!r}: {err}"
        out[key] = value
    return out, None


def _reach_probes():
    return [_reach_cases()[0]]


@preamble(function="Give a function reach(extension, threshold) that returns a dict, label "
                   "-> length.", probes=_reach_probes)
def sweep_reach(reach):
    """``reach(extension, threshold)``: for each (model, variant) of an extension sweep, the
    longest length up to which retrieval stays at or above ``threshold``, 0 if below at the
    shortest: ``{tinylm_results.label(model, variant): length}``, as
    ``tinylm_results.retrieval_reach``. Tried on the committed sweep at 9 thresholds (on its
    accuracies exactly and between them, 0 and 1) and on 8 made-up sweeps in shuffled order;
    (model, variant) pairs as keys and None for 0 are read too; the hint names a dip that
    recovers, > for >=, the file's order, or the first failing length (10, ex. 2)."""
    name = "sweep_reach"
    cases = _reach_cases()
    got = []
    for ext, t in cases:
        result, err = _run(reach, (ext, t))
        if err is not None:
            return wrong(name, f"reach(extension, {t:g}) raised {type(err).__name__}: "
                               f"{_short(str(err), 120)}")
        read, problem = _read_reach(result)
        if problem:
            return wrong(name, f"reach(extension, {t:g}) {problem}")
        got.append(read)
    truth = [retrieval_reach(ext, t) for ext, t in cases]
    if got == truth:
        return correct(name, f"Correct on all {len(cases)} sweeps and thresholds: your reading "
                             f"agrees with tinylm_results.retrieval_reach.")
    for (ext, t), g, want in zip(cases, got, truth):
        if set(g) != set(want):
            missing, extra = sorted(set(want) - set(g)), sorted(set(g) - set(want))
            return wrong(name, f"At threshold {t:g} the sweep has {len(want)} methods, one "
                               f"entry each (the fine-tuned model too)"
                               + (f"; missing {missing}" if missing else "")
                               + (f"; not in the sweep {extra}" if extra else "") + ".")
    for slip, hint in _REACH_SLIPS:
        if all(g == _slip_reach(ext, t, **slip) for (ext, t), g in zip(cases, got)):
            return wrong(name, hint)
    for (ext, t), g, want in zip(cases, got, truth):
        for key in want:
            if g[key] != want[key]:
                return wrong(name, f"At threshold {t:g}, {key}: retrieval stays at or above it "
                                   f"up to {want[key]:,} tokens, your reach says {g[key]:,}.")
    return wrong(name, "not yet: compare with tinylm_results.retrieval_reach.")


# ------------------------------------------------------------------ going deeper: the loss floor

def entropy_floor():
    """The filler's entropy floor in nats: sum_a pi_a sum_b -T_ab ln T_ab, with pi the skip-bigram
    table's stationary distribution (the eigenvector of T^T for eigenvalue 1)."""
    T = skip_bigram_table()
    w, v = np.linalg.eig(T.T)
    pi = np.real(v[:, np.argmin(np.abs(w - 1))])
    pi = pi / pi.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-(pi[:, None] * np.where(T > 0, T * np.log(T), 0.0)).sum())


@preamble
def floor_perplexity(answer):
    """The perplexity at the filler's entropy floor: e to the floor in nats, e^1.055 = 2.87
    (going deeper: the training), to 3 significant digits."""
    floor = entropy_floor()
    expected = float(np.exp(floor))
    mistakes = [
        (2 ** floor, "Perplexity is e to the loss in nats (the loss uses the natural "
                     "logarithm), not 2 to it."),
        (floor, "That is the floor itself, in nats; perplexity is e to it."),
        (float(np.exp(-floor)), "e to minus the loss is the probability a uniform guess among "
                                "that many tokens gives each; perplexity is e to the loss."),
        (64.0, "That is the uniform guess over 64 words (e^4.16); the floor is lower: use "
               "the entropy floor the cell printed."),
        (4.0, "Four successors per word would be perplexity 4 only if all four were equally "
              "likely; the table's are not. Use the entropy floor the cell printed."),
        (float(np.log(floor)), "ln of the loss is not perplexity; perplexity is e to it."),
    ]
    return check_number("floor_perplexity", answer, expected, mistakes, unit="",
                        digits=SIGNIFICANT_DIGITS,
                        generic="perplexity = e^(loss in nats), with the loss at the floor.")


# ------------------------------------------------------------------ going deeper: the GGUF export

def _adjacent_row(j, d):
    """Where NeoX row j of a d-dim head goes when the pairs (j, j + d/2) become (2j, 2j + 1)."""
    half = d // 2
    return 2 * j if j < half else 2 * (j - half) + 1


@preamble
def export_row(answer):
    """The row of a 32-dim head's W_q (and W_k) that row 20 becomes in the GGUF export, whose
    rotation pairs adjacent rows (2j, 2j + 1) where the model pairs j with j + 16: 9."""
    d = TRAINED_HEAD_DIM
    j = EXPORT_ROW
    expected = _adjacent_row(j, d)
    mistakes = [
        (2 * j, f"Row {j} is in the second half of the head (rows {d // 2}..{d - 1}): it is "
                f"the partner of a first-half row, and partners take the odd rows."),
        (2 * j + 1, f"2j + 1 is where the partner of a first-half row j goes; row {j} is itself "
                    f"a partner: of which first-half row?"),
        (2 * (j - d // 2), f"That even row is where row {j}'s partner goes; row {j} takes the "
                           f"row next to it."),
        (j - d // 2, "That is the pair's index; each pair takes two adjacent rows, the first "
                     "half's row the even one, its partner the odd one."),
        (j // 2, "That is the inverse map (adjacent pairs back to NeoX halves, what "
                 "HuggingFace's converter does to Meta's checkpoints)."),
    ]
    return check_number("export_row", answer, expected, mistakes, integer=True,
                        generic=f"Row j of the first half goes to 2j; row j + {d // 2} (its "
                                f"partner) to 2j + 1.")
