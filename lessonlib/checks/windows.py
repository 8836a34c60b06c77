"""Exercise checks for notebook 06 (sliding windows, interleaved layers, attention sinks).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
come from lessonlib (kv_cache, streaming); the typical mistakes are recomputed the wrong way.
"""
from ..models import load_model
from ..models.configs import load_config
from ..models.shape import sliding_window
from ..kv_cache import MIB, kv_cache_bytes, llamacpp_swa_cells
from ..engines import llamacpp_cached_tokens
from ..streaming import StreamingCache, receptive_field
import functools

import numpy as np

from . import (SIGNIFICANT_DIGITS, Unreadable, _clip, _short, _run, check_number, correct, items,
               wholes, wrong)
from ._preamble import preamble

__all__ = ["receptive_field_tokens", "swa_cells", "sliding_layers_mib", "streaming_cache",
           "context_shift", "QUESTIONS"]

QUESTIONS = {
    "receptive_field_tokens": dict(config="Mistral-7B"),
    "swa_cells": dict(config="tiny-gemma3-swa", n_ctx=32768, n_seq=2, n_ubatch=800),
    "sliding_layers_mib": dict(config="gpt-oss-20b", max_model_len=131072, block_size=16),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


@preamble
def receptive_field_tokens(answer):
    """How far back Mistral-7B-v0.1's 32 windowed layers (W = 4096) can carry information."""
    name = "receptive_field_tokens"
    model = load_model(QUESTIONS[name]["config"])
    L, W = model.shape.layers, sliding_window(model)[0]
    expected = receptive_field(L, W)
    mistakes = [
        (L * W, f"You used W instead of W - 1: a window of W = {W} includes the query itself, so "
                f"one layer reaches only W - 1 = {W - 1} positions back."),
        (W - 1, f"That is one layer. Each of the {L} layers moves information W - 1 further."),
        (W, f"That is one layer's window. Information hops W - 1 positions per layer, {L} "
            f"times."),
        ((L - 1) * (W - 1), f"Every one of the {L} layers adds a hop, not {L - 1}."),
        (L * (W - 1) + 1, "That counts positions covered, including the token itself; the "
                          "question asks for the distance back."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True,
                        right=f"Correct: {L} x ({W} - 1) = {expected:,} positions (the often "
                              f"quoted {L * W:,} counts W instead of W - 1).",
                        generic="One layer reaches W - 1 positions back; stacked layers add "
                                "their reaches.")


@preamble
def swa_cells(answer):
    """Cells of each sliding-window layer in llama.cpp for the tiny Gemma 3 model (W = 128) at
    -c 32768 with 2 sequences (--kv-unified) and -ub 800 (llama-kv-cache-iswa.cpp's rule)."""
    q = QUESTIONS["swa_cells"]
    W = sliding_window(load_config(q["config"]))[0]  # no num_attention_heads: no Model
    n_ctx, n_seq, ub = q["n_ctx"], q["n_seq"], q["n_ubatch"]
    expected = llamacpp_swa_cells(n_ctx, W, n_seq=n_seq, n_ubatch=ub)
    # The slips padded by llama.cpp's own rule (kv_cache owns the 256), each with one input
    # wrong: one sequence's window; no room for the micro-batch (a context of exactly the
    # windows caps the sum at n_swa x n_seq); the micro-batch once per sequence.
    one_window = llamacpp_swa_cells(n_ctx, W, n_seq=1, n_ubatch=ub)
    no_batch = llamacpp_swa_cells(min(n_ctx, W * n_seq), W, n_seq=n_seq, n_ubatch=ub)
    batch_per_seq = llamacpp_swa_cells(n_ctx, W, n_seq=n_seq, n_ubatch=n_seq * ub)
    mistakes = [
        (W * n_seq + ub, f"Right sum, but llama.cpp rounds the cell count up to a multiple of "
                         f"256 (GGML_PAD): pad({W * n_seq + ub}, 256)."),
        (one_window, f"Each of the {n_seq} sequences keeps its own window: n_swa x n_seq."),
        (W + ub, f"Two slips: n_swa x n_seq (each of the {n_seq} sequences keeps a window), and "
                 f"the padding to a multiple of 256."),
        (no_batch, "The micro-batch being processed must fit next to the window: add "
                   "n_ubatch before padding."),
        (W, "The window alone is not enough: add the other sequences' windows and the "
            "micro-batch, then pad to 256."),
        (n_ctx, "That is a global layer (or --swa-full); sliding layers get "
                "pad(min(n_ctx, n_swa x n_seq + n_ubatch), 256)."),
        (batch_per_seq, "The micro-batch is added once, not once per sequence."),
    ]
    return check_number("swa_cells", answer, expected, mistakes, unit="cells", integer=True,
                        generic="pad(min(n_ctx, n_swa x n_seq + n_ubatch), 256).")


@preamble
def sliding_layers_mib(answer):
    """MiB that vLLM's hybrid manager gives gpt-oss-20b's sliding layers for one request at
    max_model_len 131,072 (block size 16, BF16): SlidingWindowSpec's blocks, to 3 significant
    digits."""
    q = QUESTIONS["sliding_layers_mib"]
    model = load_model(q["config"])
    n, bs = q["max_model_len"], q["block_size"]
    group = kv_cache_bytes(model, n, engine="vllm", block_size=bs).sliding_layers
    expected = group.bytes / MIB
    W, n_local, per_cell = group.window, group.n_layers, group.bytes_per_cell
    full = kv_cache_bytes(model, n, engine="vllm", block_size=bs, swa_full=True).sliding_layers
    heads, kv_heads = model.shape.heads, model.shape.kv_heads
    n_layers = model.shape.layers
    mistakes = [
        (n_local * W * per_cell / MIB, f"vLLM allocates whole blocks, plus one: the window need "
                                       f"not start at a block boundary, so cdiv(W - 1, "
                                       f"{bs}) + 1 = {group.blocks} blocks of {bs}, not W "
                                       f"tokens."),
        (full.bytes / MIB, "That is the cache with the hybrid manager disabled (every layer "
                           "full); with it on, a sliding layer keeps only its window's blocks."),
        (expected * heads / kv_heads, f"Use the {kv_heads} KV heads, not the {heads} query "
                                      f"heads."),
        (expected / 2, "Each of a block's 16 slots holds a key AND a value: 2 x KV heads x "
                       "head_dim x 2 bytes."),
        (expected * n_layers / n_local, f"Only the {n_local} sliding layers (layer_types) "
                                        f"count, not all {n_layers}."),
        (expected / n_local, f"That is one layer; gpt-oss-20b has {n_local} sliding layers."),
    ]
    return check_number("sliding_layers_mib", answer, expected, mistakes, unit="MiB",
                        digits=SIGNIFICANT_DIGITS,
                        generic="sliding layers x (cdiv(W - 1, 16) + 1) blocks x 16 slots x "
                                "bytes per slot, divided by 2**20.")


# ------------------------------------------------------------------ the build: StreamingLLM
# (n_sink, n_recent, n tokens arrived): the edge cases, then seeded random ones.
_STREAM_EDGES = [
    (4, 8, 20),  # the worked size (06's sinks cell): full, 8 tokens evicted
    (4, 8, 0),  # nothing arrived yet
    (4, 8, 3),  # fewer tokens than sinks
    (4, 8, 12),  # exactly full
    (4, 8, 13),  # the first eviction
    (0, 5, 9),  # no sinks: a plain window
    (1, 1, 10),  # one sink, one recent
    (3, 1, 2),
    (2, 3, 1000),
]
_STREAM_RANDOM = 20


@functools.lru_cache(maxsize=1)
def _stream_cases():
    """((n_sink, n_recent, n, positions, rope_positions), ...) from ``StreamingCache``."""
    rng = np.random.default_rng(606)
    shapes = list(_STREAM_EDGES) + [
        (int(rng.integers(0, 7)), int(rng.integers(1, 11)), int(rng.integers(0, 61)))
        for _ in range(_STREAM_RANDOM)]
    cases = []
    for s, r, n in shapes:
        cache = StreamingCache(s, r)
        for _ in range(n):
            cache.append()
        cases.append((s, r, n, cache.positions.tolist(), cache.rope_positions.tolist()))
    return tuple(cases)


def _stream_probes():
    return [case[:3] for case in _stream_cases()[:3]]


def _stream_slips(s, r, n):
    """{slip: (positions, rope_positions)} a function with that one slip returns."""
    def kept(recent):
        held = list(range(min(s, n))) + list(range(max(s, n - recent), n))
        return held, list(range(len(held)))
    window = list(range(max(0, n - s - r), n))
    right = kept(r)
    return {
        "window": (window, list(range(len(window)))),
        "rope_original": (right[0], right[0]),
        "rope_from_one": (right[0], [i + 1 for i in right[1]]),
        "no_evict": (list(range(n)), list(range(n))),
        "recent_plus_one": kept(r + 1),
        "recent_minus_one": kept(r - 1),
    }


_STREAM_HINTS = {
    "window": "That is a plain window of the last n_sink + n_recent tokens: the first n_sink "
              "tokens are sinks and are never evicted.",
    "rope_original": "The positions held are right, but StreamingLLM gives RoPE the slot "
                     "indices 0 .. size - 1 (each token's place in the cache), not the original "
                     "positions: the model never sees a position beyond its cache.",
    "rope_from_one": "Slots count from 0: the RoPE positions are 0 .. size - 1.",
    "no_evict": "Nothing was evicted: the cache holds at most n_sink + n_recent tokens, and "
                "evicts the oldest one after the sinks when it overflows.",
    "recent_plus_one": "One recent token too many: keep exactly n_recent after the sinks (the "
                       "newest token included).",
    "recent_minus_one": "One recent token too few: keep exactly n_recent after the sinks, the "
                        "newest token included.",
}


def _stream_result(result):
    """(positions, rope_positions) as lists of ints, else Unreadable."""
    what = "(positions, rope_positions): two lists of whole numbers"
    parts = items(result, what=what)
    if len(parts) != 2 or not all(hasattr(p, "__len__") or hasattr(p, "__iter__")
                                  for p in parts):
        raise Unreadable(f"Give {what}, got {_short(result)}.")
    return tuple(wholes(p, what=what) for p in parts)


@preamble(function="Give a function streaming_cache(n_sink, n_recent, n) returning "
                   "(positions, rope_positions).", probes=_stream_probes)
def streaming_cache(fn):
    """``streaming_cache(n_sink, n_recent, n) -> (positions, rope_positions)``: what a
    StreamingLLM cache holds after tokens 0..n-1 arrived (06, ex. 2): the original positions in
    cache order (the sinks, then the newest n_recent), and the RoPE positions StreamingLLM gives
    them (the slots 0 .. size - 1). Tried on ``_STREAM_EDGES`` and ``_STREAM_RANDOM`` seeded cases
    against ``lessonlib.streaming.StreamingCache``."""
    name = "streaming_cache"
    cases, got = _stream_cases(), []
    for s, r, n, _, _ in cases:
        result, error = _run(fn, (s, r, n))
        where = f"streaming_cache({s}, {r}, {n})"
        if error is not None:
            return wrong(name, f"{where} raised {type(error).__name__}: {_clip(error)}")
        try:
            got.append(_stream_result(result))
        except Unreadable as why:
            return wrong(name, f"{where}: {why}")
    ok = [g == (p, q) for g, (_, _, _, p, q) in zip(got, cases)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} cases (no token yet, fewer tokens than "
                             f"sinks, exactly full, no sinks): the sinks stay, the newest "
                             f"n_recent follow, and RoPE counts the slots.")
    for slip, hint in _STREAM_HINTS.items():
        if all(g == _stream_slips(s, r, n)[slip] for g, (s, r, n, _, _) in zip(got, cases)):
            return wrong(name, hint)
    if all(good for good, (s, r, n, _, _) in zip(ok, cases) if n >= s + r):
        return wrong(name, "Right once the cache is full, wrong before: until n_sink + "
                           "n_recent tokens have arrived nothing is evicted, and the cache "
                           "holds tokens 0 .. n - 1, each once.")
    if all(good for good, (s, r, n, _, _) in zip(ok, cases) if s > 0):
        return wrong(name, "Right with sinks, wrong with n_sink = 0: then the cache is a plain "
                           "window of the newest n_recent tokens.")
    bad = ok.index(False)
    s, r, n, _, _ = cases[bad]
    held, rope = got[bad]
    return wrong(name, f"streaming_cache({s}, {r}, {n}) returned positions {_short(held, 80)} and "
                       f"RoPE positions {_short(rope, 80)}. Keep 0 .. n_sink - 1 and the "
                       f"n_recent newest tokens (none twice), in order; RoPE counts the slots.")


# ------------------------------------------------------------------ going deeper: context shift
# (n tokens arrived, n_ctx, n_keep): the edge cases, then seeded random ones. llama-server's rule
# (engines.llamacpp_cached_tokens, with the BOS): before a token goes in, a cache holding
# n_ctx - 1 tokens keeps its first min(n_ctx - 4, n_keep + 1), drops half (rounded down) of the
# rest, and closes the gap.
_SHIFT_EDGES = [
    (20, 13, 3),  # the notebook's model of the rule: one shift, then refilling
    (0, 13, 3),  # nothing arrived
    (12, 13, 3),  # n_ctx - 1 held: no shift yet
    (13, 13, 3),  # the first shift
    (40, 13, 0),  # --keep 0: only the BOS survives
    (30, 5, 0),  # the smallest context
    (30, 10, 20),  # --keep larger than the context allows: n_ctx - 4
    (50, 12, 7),  # n_keep + 1 = n_ctx - 4 exactly
    (100, 16, 2),  # an odd number of tokens after the kept ones: half rounded down
    (1000, 64, 7),  # many shifts
]
_SHIFT_RANDOM = 20


@functools.lru_cache(maxsize=1)
def _shift_cases():
    """((n, n_ctx, n_keep, tokens held), ...) from ``engines.llamacpp_cached_tokens``."""
    rng = np.random.default_rng(616)
    shapes = list(_SHIFT_EDGES)
    for _ in range(_SHIFT_RANDOM):
        n_ctx = int(rng.integers(5, 41))
        shapes.append((int(rng.integers(0, 4 * n_ctx + 1)), n_ctx, int(rng.integers(0, n_ctx + 1))))
    return tuple((n, c, k, llamacpp_cached_tokens(n, c, n_keep=k).tokens.tolist())
                 for n, c, k in shapes)


def _shift_probes():
    return [case[:3] for case in _shift_cases()[:3]]


def _shift_sim(n, n_ctx, n_keep, *, bos=1, cap=True, full=None, discard=None,
               one_at_a_time=False):
    """A context shift with one rule changed (the slips below); the defaults are llama.cpp's."""
    keep = n_keep + bos
    keep = min(n_ctx - 4, keep) if cap else keep
    full = n_ctx - 1 if full is None else full
    n_left = n_ctx - 1 - keep
    drop = n_left // 2 if discard is None else discard(n_left)
    held = []
    for token in range(n):
        if len(held) >= full:
            del held[keep:keep + (1 if one_at_a_time else max(drop, 0))]
        held.append(token)
    return held


_SHIFT_SLIPS = {
    "no_bos": (dict(bos=0), "The BOS token is kept too: --keep N keeps the first N tokens after "
                            "the BOS, so N + 1 stay at the front."),
    "full_at_n_ctx": (dict(full="n_ctx"), "The shift comes one token earlier: when the cache "
                                          "holds n_ctx - 1 tokens and another is about to go "
                                          "in, not when all n_ctx cells are taken."),
    "round_up": (dict(discard=lambda m: (m + 1) // 2), "One token too many goes when the count is "
                                                       "odd: the cache holds n_ctx - 1 tokens when "
                                                       "it shifts, so n_left = n_ctx - 1 - kept, "
                                                       "and half of it, rounded down, is dropped "
                                                       "(n_left // 2)."),
    "no_cap": (dict(cap=False), "The server never keeps more than n_ctx - 4 tokens at the front, "
                                "whatever --keep says: try a --keep larger than the context."),
    "one_at_a_time": (dict(one_at_a_time=True), "That evicts one token per step, like "
                                                "StreamingLLM. llama.cpp drops half of the tokens "
                                                "after the kept ones in one go, then refills."),
    "everything": (dict(full=10 ** 9), "Nothing was dropped: with --context-shift the server "
                                       "shifts whenever the cache holds n_ctx - 1 tokens."),
}


def _shift_slip(n, n_ctx, n_keep, slip):
    kw = dict(_SHIFT_SLIPS[slip][0])
    if kw.get("full") == "n_ctx":
        kw["full"] = n_ctx
    return _shift_sim(n, n_ctx, n_keep, **kw)


@preamble(function="Give a function context_shift(n, n_ctx, n_keep) returning the tokens held, a "
                   "list.", probes=_shift_probes)
def context_shift(fn):
    """``context_shift(n, n_ctx, n_keep) -> list``: the tokens (0 = the BOS, then in arrival
    order) llama-server's cache holds after n tokens with ``-c n_ctx --keep n_keep
    --context-shift`` (06, going deeper): shift when n_ctx - 1 are held and another comes, keep
    min(n_ctx - 4, n_keep + 1), drop half (rounded down) of the rest. Tried on ``_SHIFT_EDGES``
    and ``_SHIFT_RANDOM`` seeded cases against ``engines.llamacpp_cached_tokens``."""
    name = "context_shift"
    cases, got = _shift_cases(), []
    for n, c, k, _ in cases:
        result, error = _run(fn, (n, c, k))
        where = f"context_shift({n}, {c}, {k})"
        if error is not None:
            return wrong(name, f"{where} raised {type(error).__name__}: {_clip(error)}")
        try:
            got.append(wholes(result, what="the tokens held: a list of whole numbers"))
        except Unreadable as why:
            return wrong(name, f"{where}: {why}")
    ok = [g == want for g, (_, _, _, want) in zip(got, cases)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} cases (no shift yet, the first shift, "
                             f"--keep 0, --keep past n_ctx - 4, many shifts): BOS + --keep stay, "
                             f"half of the rest goes at once.")
    for slip, (_, hint) in _SHIFT_SLIPS.items():
        if all(g == _shift_slip(n, c, k, slip) for g, (n, c, k, _) in zip(got, cases)):
            return wrong(name, hint)
    if all(good for good, (n, c, _, _) in zip(ok, cases) if n < c):
        first = next(i for i, good in enumerate(ok) if not good)
        n, c, k, want = cases[first]
        return wrong(name, f"Right until the first shift, wrong after: context_shift({n}, {c}, "
                           f"{k}) should hold {_short(want, 80)}, got {_short(got[first], 80)}. "
                           f"Keep BOS + --keep (at most n_ctx - 4), drop half of the rest "
                           f"(rounded down), keep the order.")
    bad = ok.index(False)
    n, c, k, want = cases[bad]
    return wrong(name, f"context_shift({n}, {c}, {k}) returned {_short(got[bad], 80)}. Before "
                       f"any shift the cache holds tokens 0 .. n - 1 in order; it shifts only "
                       f"when n_ctx - 1 tokens are held and another arrives.")
