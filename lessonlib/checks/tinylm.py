"""Checks for notebook 10 (a real model's long context): each returns a Verdict.

    pi_config(answer)                 the rope_scaling dict that serves 1024 tokens with PI
    uniform_bos_weight(answer)        the weight uniform causal attention gives <bos>
    streaming_positions(answer)       what a 4-sink StreamingLLM cache holds, and the newest
                                      key's RoPE position
"""

import numpy as np

from lessonlib.checks import (SIGNIFICANT_DIGITS, Unreadable, as_number, correct,
                              digits_tolerance, items, number, quiet, rounded_hint, whole, wholes,
                              wrong)
from lessonlib.checks._preamble import preamble
from lessonlib.rope import rope_frequencies, rope_parameters, rotary_dim
from lessonlib.streaming import StreamingCache

__all__ = ["pi_config", "uniform_bos_weight", "streaming_positions",
           "PI_LENGTH", "TRAINED_LENGTH", "QUERY_FROM", "STREAM_SEEN", "N_SINK", "N_RECENT"]

TRAINED_LENGTH = 256  # the tiny model's trained context, L0
PI_LENGTH = 1024  # exercise 1: the length to serve
QUERY_FROM = 32  # exercise 2: queries at positions QUERY_FROM .. TRAINED_LENGTH - 1
STREAM_SEEN, N_SINK, N_RECENT = 1001, 4, 252  # exercise 3: tokens 0..1000 streamed


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
            r, base = rotary_dim(config), float(rope_parameters(config)["rope_theta"])
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
    r0, base0 = rotary_dim(model), float(rope_parameters(model)["rope_theta"])
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
