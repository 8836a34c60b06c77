"""Exercise checks for notebook 04 (the Triton FlashAttention kernel, read line by line).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
are computed here from the kernel's own rules (the launch grid, the head mapping, the loop
bounds via ``lessonlib.attention.key_blocks``, whose plan the tests hold equal to the kernel's,
and the sink fold); the typical mistakes are recomputed the wrong way so a hint can name them.
Nothing here imports triton.
"""
import functools
import math

import numpy as np

from ..attention import attention_mask, key_blocks
from ..engines import VLLM_BACKENDS, vllm_attention_backend
from ..kernel_plan import kernel_key_stretches, stretch_blocks
from . import (FLOAT32_RTOL, Unreadable, _clip, _run, _short, as_number, call, check_number,
               close_to, correct, items, shown, vector, wholes, wrong)
from ._preamble import preamble

__all__ = ["grid_programs", "program_heads", "visited_key_blocks", "program_tiles",
           "nan_guard_rows", "sink_output", "vllm_backends", "QUESTIONS"]

# The fixed inputs of each exercise (the notebook states them in the question).
QUESTIONS = {
    "grid_programs": dict(b=2, hq=8, hkv=2, nq=1000, nk=1000, block_m=64, block_n=64),
    "program_heads": dict(probes=((8, 2), (4, 4), (6, 1), (12, 3), (32, 8))),
    "visited_key_blocks": dict(n=1024, block_m=128, block_n=64, causal=True, window=193,
                               sink_tokens=4, pid_m=5),
    # The worked example without sink tokens: the loop starts at the window-edge block.
    "nan_guard_rows": dict(n=256, block=32, causal=True, window=80, pid_m=6),
    # One row's state after the loop (m and l in the kernel's log2 units, acc a weighted sum of
    # values measured from the same m) and its head's sink logit z, times log2 e.
    "sink_output": dict(m=5.0, l=3.0, acc=(6.0, -3.0), z=6.0),
    # (GPU, compute capability, head size, learned sinks): the backend vLLM picks for each.
    "vllm_backends": dict(cases=(("L4", (8, 9), 64, True), ("B200", (10, 0), 96, False),
                                 ("A100", (8, 0), 512, False))),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


def _cdiv(a, b):
    return -(-a // b)


# ------------------------------------------------------------------ 1. the launch grid

@preamble
def grid_programs(answer):
    """Programs launched for q (2, 8, 1000, d), k/v (2, 2, 1000, d), BLOCK_M = BLOCK_N = 64."""
    name = "grid_programs"
    q = QUESTIONS[name]
    b, hq, hkv, nq, nk, bm, bn = (q[k] for k in ("b", "hq", "hkv", "nq", "nk", "block_m",
                                                  "block_n"))
    axis0 = _cdiv(nq, bm)
    expected = axis0 * b * hq
    mistakes = [
        (nq // bm * b * hq, f"{nq} / {bm} = {nq / bm:g} is not whole: the last {nq % bm} rows "
                            f"need a program too, so axis 0 is cdiv({nq}, {bm}) = {axis0}, "
                            f"not floor."),
        (nq / bm * b * hq, f"Programs come in whole numbers: axis 0 is cdiv({nq}, {bm}) = "
                           f"{axis0}, the last one partly masked."),
        (axis0 * b * hkv, f"One program per query head, not per KV head: the {hq // hkv} query "
                          f"heads of a group share K and V, but each has its own output rows."),
        (axis0 * hq, f"Axis 1 is batch x heads = {b} x {hq}: each batch element is separate "
                     f"work."),
        (axis0 * hkv, "Axis 1 runs over batch x query heads, not the KV heads alone."),
        (axis0, f"That is axis 0 alone (query blocks); multiply by axis 1 = b x hq = "
                f"{b * hq}."),
        (axis0 * _cdiv(nk, bn) * b * hq, "That counts tiles (program x key block): a program "
                                         "loops over the key blocks itself, so the grid only "
                                         "splits the queries."),
        (nq * b * hq, f"A program owns a block of BLOCK_M = {bm} query rows, not one row."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True,
                        right=f"Correct: grid = (cdiv({nq}, {bm}), {b} x {hq}) = ({axis0}, "
                              f"{b * hq}): {expected} programs, each with its own {bm} query "
                              f"rows of one head.",
                        generic="The grid is (cdiv(nq, BLOCK_M), b x hq): one program per "
                                "block of query rows of one head.")


# ------------------------------------------------------------------ 2. who am I?

def _right_heads(pid_bh, hq, hkv):
    b, h = divmod(pid_bh, hq)
    return b, h, h // (hq // hkv)


_HEAD_MISTAKES = [
    (lambda pid, hq, hkv: (pid // hq, pid % hq, (pid % hq) % hkv),
     "h % hkv deals the query heads out round-robin (head 1 to KV head 1). GQA keeps groups of "
     "consecutive heads together: h_kv = h // (hq // hkv), so heads 0..3 of an 8/2 model read "
     "KV head 0."),
    (lambda pid, hq, hkv: (pid // hq, pid % hq, (pid % hq) // hkv),
     "You divided by the number of KV heads; divide by the group size hq // hkv (query heads "
     "per KV head)."),
    (lambda pid, hq, hkv: (pid // hq, pid % hq, pid % hq),
     "h_kv = h is multi-head attention: with fewer KV heads, hq // hkv query heads share one, "
     "h_kv = h // (hq // hkv)."),
    (lambda pid, hq, hkv: (pid % hq, pid // hq, (pid // hq) // (hq // hkv)),
     "b and h are swapped: axis 1 packs batch x head with the head fastest, so b = pid_bh // hq "
     "and h = pid_bh % hq."),
    (lambda pid, hq, hkv: (pid // hkv, pid % hkv, pid % hkv),
     "Axis 1 runs over b x hq (query heads), not b x hkv: decode it with hq, then map the "
     "query head to its KV head."),
]


def _table(func):
    """func's answers on every probe: {(pid_bh, hq, hkv): (b, h, h_kv)}."""
    return {(pid_bh, hq, hkv): tuple(func(pid_bh, hq, hkv)) for pid_bh, hq, hkv in _probes()}


def _probes():
    return [(pid_bh, hq, hkv) for hq, hkv in QUESTIONS["program_heads"]["probes"]
            for pid_bh in range(2 * hq)]  # two batch elements


_HEADS = "three whole numbers (b, h, h_kv)"
_HEAD_SLIP = ("; a batch element or a head is a whole index: use // (floor division), not /, "
              "or b, h = divmod(pid_bh, hq)")


@preamble(function="Give a function program_heads(pid_bh, hq, hkv) returning (b, h, h_kv).",
          probes=_probes)
def program_heads(func):
    """``func(pid_bh, hq, hkv) -> (b, h, h_kv)``: the batch element, query head and KV head of
    the programs on grid axis 1 (the kernel's "who am I?" lines)."""
    name = "program_heads"
    got = {}
    for key in _probes():
        call_text = "program_heads({}, {}, {})".format(*key)
        result, error = call(func, *key, label=call_text)
        if error:
            return wrong(name, f"{error}. Return three integers (b, h, h_kv).")
        if result is None:
            return wrong(name, f"{call_text} returned None: every path through the function "
                               f"must return (b, h, h_kv).")
        try:
            got[key] = tuple(wholes(result, what=_HEADS, slip=_HEAD_SLIP))
        except Unreadable as why:
            return wrong(name, f"{call_text} returned {_short(result)}: {why}")
        if len(got[key]) != 3:
            return wrong(name, f"{call_text} returned {_short(result)}; return three integers "
                               f"(b, h, h_kv).")
    expected = _table(_right_heads)
    if got == expected:
        return correct(name, "Correct: b, h = divmod(pid_bh, hq) and h_kv = h // (hq // hkv). "
                             "The K and V pointers move to head h_kv: GQA without copying K or "
                             "V.")
    for mistake, hint in _HEAD_MISTAKES:
        if got == _table(mistake):
            return wrong(name, hint)
    key = next(k for k in expected if got[k] != expected[k])
    return wrong(name, f"program_heads({key[0]}, hq={key[1]}, hkv={key[2]}) gave {got[key]}; "
                       f"expected (b, h, h_kv) = {expected[key]}.")


# ------------------------------------------------------------------ 3. the loop bounds

def _visited(n, block_m, block_n, causal, window, sink_tokens, pid_m):
    q_lo = pid_m * block_m
    q_hi = min(q_lo + block_m, n)
    return {j0 // block_n for j0 in key_blocks(q_lo, q_hi, n, block_n, causal=causal,
                                                window=window, sink_tokens=sink_tokens)}


def _band(first, last_key, block_n, sink_tokens):
    """Blocks from the one holding key ``first`` to the one holding ``last_key``, and the
    blocks holding the sink tokens."""
    return set(range(max(first, 0) // block_n, last_key // block_n + 1)) \
        | set(range(_cdiv(sink_tokens, block_n)))


@preamble
def visited_key_blocks(answer):
    """The key blocks program pid_m = 5 visits: n = 1024, BLOCK_M = 128, BLOCK_N = 64, causal,
    window W = 193, 4 sink tokens (block indices, each block BLOCK_N keys)."""
    name = "visited_key_blocks"
    q = QUESTIONS[name]
    n, bm, bn, w, sinks, pid = (q[k] for k in ("n", "block_m", "block_n", "window",
                                               "sink_tokens", "pid_m"))
    expected = _visited(n, bm, bn, q["causal"], w, sinks, pid)
    p_first, p_last = pid * bm, min(pid * bm + bm, n) - 1
    count = as_number(answer)
    if count is not None:
        first_band = min(expected - set(range(_cdiv(sinks, bn))))
        if count == first_band:
            return wrong(name, f"Block {first_band} is where the window's band starts; give the "
                               f"whole set of blocks the program visits, sinks included.")
        return wrong(name, "Give the set of key-block indices the program visits, e.g. "
                           "{0, 3, 4}.")
    got = set(wholes(answer, what="a set (or list) of key-block indices, e.g. {0, 3, 4}",
                     ordered=False, slip="; block indices are whole: use // (floor division) "
                                         "to find the block that holds a key"))
    if got == expected:
        return correct(name, f"Correct: the sink block, then the band from block "
                             f"{(p_first - w + 1) // bn} (key p_first - W + 1 = "
                             f"{p_first - w + 1}) to block {p_last // bn} (the diagonal, key "
                             f"p_last = {p_last}): {sorted(expected)}.")
    if max(got, default=0) >= _cdiv(n, bn):
        return wrong(name, f"Give block indices (0..{_cdiv(n, bn) - 1}, BLOCK_N = {bn} keys "
                           f"each), not key positions.")
    mistakes = [
        (_band(p_first - w, p_last, bn, sinks),
         f"Off by one at the window's start: query p sees keys p - W + 1 .. p (W counts the "
         f"query itself), so the first query p_first = {p_first} reaches back to key "
         f"{p_first - w + 1}, in block {(p_first - w + 1) // bn}."),
        (_band(p_first - w + 1, p_last, bn, 0),
         f"The {sinks} sink tokens sit in key block 0 and every query sees them: the kernel "
         f"visits the sink blocks first, before the band."),
        (_band(p_last - w + 1, p_last, bn, sinks),
         f"The band starts at the window of the block's FIRST query (p_first = {p_first}), "
         f"which reaches furthest back; p_last's window starts later."),
        (_band(p_first - w + 1, n - 1, bn, sinks),
         f"Causal: no query of the block sees a key after p_last = {p_last}, so the loop stops "
         f"at block {p_last // bn}."),
        (_band(p_first - w + 1, p_first, bn, sinks),
         f"The block's last query p_last = {p_last} sees keys up to itself: the diagonal "
         f"block {p_last // bn} must be visited too (with the mask)."),
        (_band(p_first - w + 1, p_last, bm, sinks),
         f"Key blocks hold BLOCK_N = {bn} keys; BLOCK_M = {bm} is the query block."),
    ]
    for blocks, hint in mistakes:
        if got == blocks:
            return wrong(name, hint)
    missing, extra = sorted(expected - got), sorted(got - expected)
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if extra:
        parts.append(f"{extra} hold no key any query of the block can see")
    return wrong(name, "; ".join(parts) + f". Queries are at positions {p_first}..{p_last}; "
                                          f"the window of p is keys p - W + 1 .. p.")


# ------------------------------------------------------------------ the build: one program's tiles
# (pid_m, n, B, causal, W, sinks): B = BLOCK_M = BLOCK_N, n queries over n keys, W = 0: no
# window. The edge cases first, then seeded random ones.
_TILE_EDGES = [
    (6, 256, 32, True, 80, 4),  # the worked example: sinks | window edge | interior | diagonal
    (0, 256, 32, True, 80, 4),  # the first program: the band starts at key 0, sinks inside it
    (7, 256, 32, True, 80, 4),  # the last program
    (3, 200, 64, True, 0, 0),  # n not a multiple of B: the last program holds 8 rows
    (3, 200, 64, False, 0, 0),  # dense, ragged: the last key block is partial
    (1, 200, 64, False, 0, 0),  # dense, a middle program: only the partial block is masked
    (5, 256, 32, True, 1, 0),  # W = 1: each query sees itself only
    (5, 256, 32, True, 1, 4),  # W = 1 and sinks
    (2, 100, 32, True, 500, 4),  # W longer than n: no key is outside the window
    (4, 256, 16, True, 40, 40),  # sinks spanning three blocks, the band starting among them
    (12, 256, 16, True, 40, 40),  # sink blocks all before the band
    (6, 256, 32, False, 80, 4),  # a window without the causal mask
    (2, 256, 32, False, 0, 8),  # sinks without a window: every key is visible anyway
    (4, 130, 32, True, 50, 0),  # the last program holds 2 rows, windowed
    (0, 1, 16, True, 0, 0),  # one token
    (1, 96, 32, True, 33, 0),  # a window one key longer than a block
    (2, 192, 64, True, 64, 0),  # a window of exactly one block
    (3, 256, 64, False, 64, 2),  # no causal mask, a window and sinks
    (2, 150, 64, False, 100, 0),  # no causal mask, windowed, the last block partial
]
_TILE_RANDOM = 40


def _tile_shape(rng):
    b = int(rng.choice([8, 16, 32, 64]))
    n = int(rng.integers(1, 301))
    w = int(rng.choice([0, 1, int(rng.integers(1, n + 51)), int(rng.integers(1, n + 51))]))
    sinks = int(rng.choice([0, int(rng.integers(0, 2 * b + 1))]))
    return (int(rng.integers(0, -(-n // b))), n, b, bool(rng.integers(2)), w, sinks)


@functools.lru_cache(maxsize=1)
def _tile_cases():
    """((pid_m, n, B, causal, W, sinks), ...): ``_TILE_EDGES``, then ``_TILE_RANDOM`` seeded."""
    rng = np.random.default_rng(404)
    return tuple(_TILE_EDGES) + tuple(_tile_shape(rng) for _ in range(_TILE_RANDOM))


def _tile_probes():
    return list(_tile_cases()[:3])


def _plan(pid_m, n, b, causal, w, sinks):
    """(masked, full): sets of key blocks, from ``kernel_plan``, the kernel's own arithmetic."""
    masked, full = set(), set()
    for st in kernel_key_stretches(pid_m, n, n, causal=causal, window=w or None,
                                   sink_tokens=sinks, block_m=b, block_n=b):
        (masked if st.masked else full).update(stretch_blocks(st, b))
    return masked, full


def _tiles(pid_m, n, b, causal, w, sinks, slip=None):
    """The loop bounds restated with one typical ``slip`` (None: none), as (masked, full)."""
    if slip == "window_plus_one" and w:
        w += 1
    if slip == "no_sinks":
        sinks = 0
    p_first = pid_m * b
    p_last = p_first + b - 1 if slip == "p_last_unclipped" else min(p_first + b, n) - 1
    lo, hi = 0, n
    if causal or (slip == "window_is_causal" and w):
        hi = p_last + 1
    if w:
        lo = max((p_last if slip == "band_from_last" else p_first) - w + 1, 0) // b * b
    full_lo = lo
    full_hi = -(-n // b) * b if slip == "ragged_full" else n // b * b
    if causal:
        full_hi = ((p_last if slip == "diagonal_full" else p_first) + 1) // b * b
    if w:
        full_lo = -(-max(p_last - w + 1, 0) // b) * b
    full_lo = min(max(full_lo, lo), hi)
    full_hi = max(min(full_hi, hi), full_lo)
    sink_hi = min(-(-sinks // b) * b, lo) if w else 0
    end = (lambda e: e // b) if slip == "ragged_dropped" else (lambda e: -(-e // b))

    def blocks(start, stop):
        return set(range(start // b, end(stop))) if stop > start else set()

    masked = blocks(0, sink_hi) | blocks(lo, full_lo) | blocks(full_hi, hi)
    full = blocks(full_lo, full_hi)
    if slip == "sinks_without_window" and not w and sinks:
        masked |= set(range(min(-(-sinks // b), -(-n // b))))
        full -= masked
    if slip == "sink_blocks_full":  # a block whose every key is a sink, seen by every query
        whole = {j for j in masked if (j + 1) * b <= min(sinks, n)} if w else set()
        masked, full = masked - whole, full | whole
    if slip == "swapped":
        masked, full = full, masked
    return masked, full


_TILE_HINTS = {
    "swapped": "Masked and full are swapped: return (masked, full), the tiles that need the mask "
               "first.",
    "window_plus_one": "Off by one at the window's edge: query p sees keys p - W + 1 .. p (W "
                       "counts the query itself), so the band starts at the block holding "
                       "p_first - W + 1, and the full tiles at the first block starting at or "
                       "after p_last - W + 1.",
    "no_sinks": "The sink blocks are missing: with a window on, every query also sees keys 0 .. "
                "sinks - 1, so the kernel visits their blocks (before the band, with the mask) "
                "even when the window has long left them.",
    "band_from_last": "The band starts at the window of the program's FIRST query, p_first - W "
                      "+ 1: that query reaches furthest back. p_last's window decides only "
                      "where the full tiles start.",
    "diagonal_full": "The diagonal block is not full: a key block runs without the mask only if "
                     "every query sees all of it, and causally the first query p_first sees "
                     "only keys <= p_first. Full tiles end at (p_first + 1) // B.",
    "ragged_full": "The last key block is partial when n is not a multiple of B: its missing "
                   "keys must be masked, so it is never a full tile.",
    "ragged_dropped": "A stretch of keys [lo, hi) covers blocks lo // B up to cdiv(hi, B) - 1: "
                      "a block partly inside it, like the last partial block, is visited too.",
    "p_last_unclipped": "The last program holds only n - p_first real queries: its last query "
                        "is p_last = min(p_first + B, n) - 1, and that query's window decides "
                        "where the full tiles start.",
    "window_is_causal": "A window without the causal mask still sees every later key: only the "
                        "keys before the window are skipped, up to the end of the sequence.",
    "sinks_without_window": "With no window (W = 0) every key is visible anyway: sink tokens "
                            "change nothing, and their blocks are tiles like the others.",
    "sink_blocks_full": "The kernel proves a tile full from its loop bounds, by the causal and "
                        "window rules alone: the sink blocks visited before the band always run "
                        "with the mask, even one that holds nothing but sink tokens (a sink "
                        "block inside the band follows the band's rule).",
}


def _tile_result(result, n, b):
    """(masked, full) as sets of block indices, else Unreadable."""
    what = "(masked, full): two sets of key-block indices"
    parts = items(result, what=what)
    if len(parts) != 2:
        raise Unreadable(f"Give {what}, got {_short(result)}.")
    got = tuple(set(wholes(p, what=what, ordered=False,
                           slip="; a block index is whole: use // (floor division)"))
                for p in parts)
    blocks = -(-n // b)
    if any(j < 0 or j >= blocks for part in got for j in part):
        raise Unreadable(f"block indices run 0 .. cdiv(n, B) - 1 = {blocks - 1} (blocks of B = "
                         f"{b} keys), got {sorted(got[0] | got[1])[:12]}; give block indices, "
                         f"not key positions.")
    return got


def _case_text(pid_m, n, b, causal, w, sinks):
    return f"tiles(pid_m={pid_m}, n={n}, B={b}, causal={causal}, W={w}, sinks={sinks})"


@preamble(function="Give a function tiles(pid_m, n, B, causal, W, sinks) returning (masked, "
                   "full).", probes=_tile_probes)
def program_tiles(fn):
    """``tiles(pid_m, n, B, causal, W, sinks) -> (masked, full)``: the key blocks program
    ``pid_m`` visits with the mask and without it (n queries over n keys, BLOCK_M = BLOCK_N = B,
    W = 0: no window). Tried on ``_TILE_EDGES`` (the worked example, n not a multiple of B, W =
    1, W past n, sinks inside and beyond the window, the first and last program, dense) and
    ``_TILE_RANDOM`` seeded cases against ``lessonlib.kernel_plan.kernel_key_stretches``."""
    name = "program_tiles"
    cases, got = _tile_cases(), []
    for case in cases:
        result, error = _run(fn, case)
        where = _case_text(*case)
        if error is not None:
            return wrong(name, f"{where} raised {type(error).__name__}: {_clip(error)}")
        if result is None:
            return wrong(name, f"{where} returned None: every path through the function must "
                               f"return (masked, full).")
        try:
            got.append(_tile_result(result, case[1], case[2]))
        except Unreadable as why:
            return wrong(name, f"{where}: {why}")
    expected = [_plan(*case) for case in cases]
    if got == expected:
        return correct(name, f"Correct on {len(cases)} cases (n not a multiple of B, W = 1, W "
                             f"past n, sinks inside and before the band, the first and last "
                             f"program, dense): the sink blocks before the band, the window edge "
                             f"and the diagonal run with the mask, the interior without it.")
    both = next((c for c, (m, f) in zip(cases, got) if m & f), None)
    if both is not None:
        m, f = got[cases.index(both)]
        return wrong(name, f"{_case_text(*both)} put block(s) {sorted(m & f)} in both sets: the "
                           f"kernel visits each block once, with the mask or without it.")
    for slip, hint in _TILE_HINTS.items():
        if all(g == _tiles(*c, slip=slip) for g, c in zip(got, cases)):
            return wrong(name, hint)
    bad = next(i for i, (g, e) in enumerate(zip(got, expected)) if g != e)
    case, (m, f), (em, ef) = cases[bad], got[bad], expected[bad]
    p_first = case[0] * case[2]
    where = (f"{_case_text(*case)}: queries {p_first}..{min(p_first + case[2], case[1]) - 1}, "
             f"you gave masked {sorted(m)}, full {sorted(f)}")
    for slip, hint in _TILE_HINTS.items():
        if (m, f) == _tiles(*case, slip=slip):
            return wrong(name, f"{where}. {hint}")
    return wrong(name, f"{where}; the kernel visits masked {sorted(em)}, full {sorted(ef)}. A "
                       f"block is visited if some query of the program may see one of its keys "
                       f"(sinks included), and full if every query sees every key by the "
                       f"causal and window rules alone.")


# ------------------------------------------------------------------ the NaN guard

def _blind_rows(n, block, causal, window, pid_m, sink_tokens=0):
    """Real query rows of program pid_m that see no key of the first block its loop visits."""
    first = next(st for st in kernel_key_stretches(pid_m, n, n, causal=causal, window=window,
                                                   sink_tokens=sink_tokens, block_m=block,
                                                   block_n=block) if st.end > st.start)
    j0 = first.start // block * block
    rows = range(pid_m * block, min(pid_m * block + block, n))
    sees = attention_mask(n, n, causal=causal, window=window, sink_tokens=sink_tokens)
    return sum(not sees[p, j0:j0 + block].any() for p in rows), j0 // block


@preamble
def nan_guard_rows(answer):
    """The worked example without sinks (n = 256, BLOCK_M = BLOCK_N = 32, causal, W = 80,
    program 6): how many of its query rows see no key of the first tile its loop visits, the
    rows whose state only the NaN guard keeps at m = -inf, l = 0, acc = 0."""
    name = "nan_guard_rows"
    q = QUESTIONS[name]
    n, b, w, pid = q["n"], q["block"], q["window"], q["pid_m"]
    expected, first = _blind_rows(n, b, q["causal"], w, pid)
    last_key, p_first = first * b + b - 1, pid * b
    since = last_key + w  # the first query whose window starts past the block (in the reply)
    mistakes = [
        (expected - 1, f"Off by one at the window's edge: query p sees keys p - W + 1 .. p (W "
                       f"counts the query itself). A row is blind to block {first} when its "
                       f"oldest key p - W + 1 lies past the block's last key, {last_key}."),
        (expected + 1, f"One row too many: the row whose oldest key p - W + 1 is exactly "
                       f"{last_key}, the block's last key, still sees that key."),
        (b - expected, "That counts the rows that DO see a key of the first tile; the guard "
                       "is for the others."),
        (_blind_rows(n, b, q["causal"], w, pid, sink_tokens=4)[0],
         "That is the worked example WITH its 4 sink tokens: there the sink block comes first "
         "and every row sees keys 0..3. Without sinks the loop starts at the window's edge."),
        (b, "Not every row: the first query's window reaches into the first tile."),
    ]
    return check_number(name, answer, expected, mistakes, integer=True,
                        right=f"Correct: queries {since}..{p_first + b - 1} see nothing of block "
                              f"{first} (keys {first * b}..{last_key}): their m_new stays -inf, "
                              f"and without the guard -inf - (-inf) = NaN would poison l and acc "
                              f"for the rest of the loop.",
                        generic=f"Program {pid} holds queries {p_first}..{p_first + b - 1}; query "
                                f"p sees keys p - W + 1 .. p. Which rows see none of keys "
                                f"{first * b}..{last_key}?")


# ------------------------------------------------------------------ 4. the learned sink

def _fold(m, l, acc, z, exp=lambda x: 2.0 ** x, rescale_acc=True):
    m_final = max(m, z)
    alpha = exp(m - m_final)
    l_final = l * alpha + exp(z - m_final)
    acc_final = np.asarray(acc, dtype=float) * (alpha if rescale_acc else 1.0)
    return acc_final / l_final


@preamble
def sink_output(answer):
    """The output row o after folding the sink: m = 5 and l = 3 in the kernel's log2 units
    (exp2), z = 6 (times log2 e), and acc = (6, -3), a weighted sum of values measured from m
    (not a log quantity)."""
    name = "sink_output"
    q = QUESTIONS[name]
    m, l, acc, z = q["m"], q["l"], np.asarray(q["acc"], dtype=float), q["z"]
    expected = _fold(m, l, acc, z)
    if as_number(answer) is not None:
        return wrong(name, f"Give the output row o = acc / l: {expected.size} numbers, one per "
                           f"value dim.")
    got = vector(answer, what="the output row as two numbers")
    if got.shape != expected.shape:
        return wrong(name, f"Give the output row o = acc / l: {expected.size} numbers, one per "
                           f"value dim.")
    if close_to(got, expected, rtol=FLOAT32_RTOL, atol=1e-9):
        return correct(name, f"Correct: m = max({m:g}, {z:g}) = {max(m, z):g}, everything "
                             f"rescaled by 2^({m:g} - {max(m, z):g}), the sink adds 2^0 = 1 to "
                             f"l and nothing to acc: o = {np.round(expected, 6).tolist()}.")
    mistakes = [
        (acc / l, "That ignores the sink: it is one more term in the denominator l (and none "
                  "in acc), so every weight shrinks."),
        (_fold(m, l, acc, z, rescale_acc=False),
         f"You rescaled l to the new max but not acc: both were accumulated relative to "
         f"m = {m:g}, so both need alpha = 2^(m - m_final)."),
        (_fold(m, l, acc, z, exp=math.exp),
         "The kernel keeps m and z in log2 units (scores times log2 e) and uses exp2: the "
         "factors are 2^x, not e^x."),
        (acc / (l + 2.0 ** z), f"The sink's term must be measured from the same reference as "
                               f"l: 2^(z - m) = 2^({z:g} - {m:g}), not 2^z."),
        (acc / (l + 1.0), f"2^0 = 1 is the sink's term only after rescaling to m = z; "
                          f"against l's reference m = {m:g} it is 2^(z - m)."),
        ((acc + 2.0 ** (z - m)) / (l + 2.0 ** (z - m)),
         "The sink has no value vector: it adds to l only, never to acc."),
    ]
    for value, hint in mistakes:
        if close_to(got, value, rtol=FLOAT32_RTOL, atol=1e-9):
            return wrong(name, hint)
    return wrong(name, f"Not [{', '.join(shown(g) for g in got)}]. m_final = max(m, z); "
                       f"alpha = 2^(m - m_final); l = l alpha + 2^(z - m_final); acc = acc "
                       f"alpha; o = acc / l.")


# ------------------------------------------------------------------ going deeper: vLLM's backends

# (case index, a wrong backend) -> the hint that names why vLLM did not pick it there.
_BACKEND_HINTS = {
    (0, "FLASH_ATTN"): "L4: FlashAttention takes learned sinks only from compute capability 9.0 "
                       "(FlashAttention 3 and 4); the L4 is 8.9.",
    (0, "FLASHINFER"): "L4: FlashInfer takes learned sinks only through its TensorRT-LLM "
                       "kernels, which an 8.9 GPU does not get.",
    (1, "FLASHINFER"): "B200: FlashInfer is tried first on 10.x, but it takes head sizes 64, "
                       "128, 256 and 512 only: 96 falls through to the next backend.",
    (1, "TRITON_ATTN"): "B200: after FlashInfer comes FlashAttention, which takes any multiple "
                        "of 8 up to 256 from compute capability 8.0 on.",
    (2, "FLASH_ATTN"): "A100: FlashAttention takes head sizes up to 256 on 8.0; 512 falls "
                       "through to the next backend.",
    (2, "TRITON_ATTN"): "A100: FlashInfer, next after FlashAttention on 8.0, takes head size "
                        "512.",
}


@preamble
def vllm_backends(answer):
    """The attention backends vLLM picks, in order, for an L4 (8.9) running heads of 64 with
    learned sinks, a B200 (10.0) with heads of 96, and an A100 (8.0) with heads of 512 (F16 or
    BF16 decoders): three names as vLLM spells them."""
    name = "vllm_backends"
    cases = QUESTIONS[name]["cases"]
    expected = [vllm_attention_backend(cap, head, sinks=sinks).backend
                for _, cap, head, sinks in cases]
    what = f"a list of {len(cases)} backend names, e.g. [\"FLASH_ATTN\", ...]"
    if isinstance(answer, str):
        raise Unreadable(f"Give {what}, one per GPU in the question's order.")
    got = items(answer, what=what, ordered=True)
    if len(got) != len(cases) or not all(isinstance(g, str) for g in got):
        raise Unreadable(f"Give {what}, one per GPU in the question's order, got "
                         f"{_short(answer)}.")
    got = [g.strip().upper().replace("-", "_") for g in got]
    unknown = [g for g in got if g not in VLLM_BACKENDS]
    if unknown:
        return wrong(name, f"{unknown[0]!r} is not one of vLLM's backends: "
                           f"{', '.join(VLLM_BACKENDS)}.")
    if got == expected:
        return correct(name, f"Correct: {', '.join(expected)}. Sinks below 9.0 leave only "
                             f"Triton; FlashInfer's head sizes are few; FlashAttention stops at "
                             f"256.")
    for i, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            gpu, (major, minor) = cases[i][:2]
            return wrong(name, _BACKEND_HINTS.get((i, g), f"{gpu}: not {g}. Walk vLLM's list "
                                                          f"for compute capability {major}."
                                                          f"{minor}: the first backend whose "
                                                          f"checks pass is picked."))
