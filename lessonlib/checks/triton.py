"""Exercise checks for notebook 04 (the Triton FlashAttention kernel, read line by line).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
are computed here from the kernel's own rules (the launch grid, the head mapping, the loop
bounds via ``lessonlib.attention.key_blocks``, whose plan the tests hold equal to the kernel's,
and the sink fold); the typical mistakes are recomputed the wrong way so a hint can name them.
Nothing here imports triton.
"""
import math

import numpy as np

from ..attention import key_blocks
from . import (FLOAT32_RTOL, Unreadable, _short, as_number, call, check_number, close_to, correct,
               shown, vector, wholes, wrong)
from ._preamble import preamble

__all__ = ["grid_programs", "program_heads", "visited_key_blocks", "sink_output", "QUESTIONS"]

# The fixed inputs of each exercise (the notebook states them in the question).
QUESTIONS = {
    "grid_programs": dict(b=2, hq=8, hkv=2, nq=1000, nk=1000, block_m=64, block_n=64),
    "program_heads": dict(probes=((8, 2), (4, 4), (6, 1), (12, 3), (32, 8))),
    "visited_key_blocks": dict(n=1024, block_m=128, block_n=64, causal=True, window=193,
                               sink_tokens=4, pid_m=5),
    # One row's state after the loop (m and l in the kernel's log2 units, acc a weighted sum of
    # values measured from the same m) and its head's sink logit, times log2 e.
    "sink_output": dict(m=5.0, l=3.0, acc=(6.0, -3.0), s=6.0),
}


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


# ------------------------------------------------------------------ 4. the learned sink

def _fold(m, l, acc, s, exp=lambda x: 2.0 ** x, rescale_acc=True):
    m_final = max(m, s)
    alpha = exp(m - m_final)
    l_final = l * alpha + exp(s - m_final)
    acc_final = np.asarray(acc, dtype=float) * (alpha if rescale_acc else 1.0)
    return acc_final / l_final


@preamble
def sink_output(answer):
    """The output row o after folding the sink: m = 5 and l = 3 in the kernel's log2 units
    (exp2), s = 6 (times log2 e), and acc = (6, -3), a weighted sum of values measured from m
    (not a log quantity)."""
    name = "sink_output"
    q = QUESTIONS[name]
    m, l, acc, s = q["m"], q["l"], np.asarray(q["acc"], dtype=float), q["s"]
    expected = _fold(m, l, acc, s)
    if as_number(answer) is not None:
        return wrong(name, f"Give the output row o = acc / l: {expected.size} numbers, one per "
                           f"value dim.")
    got = vector(answer, what="the output row as two numbers")
    if got.shape != expected.shape:
        return wrong(name, f"Give the output row o = acc / l: {expected.size} numbers, one per "
                           f"value dim.")
    if close_to(got, expected, rtol=FLOAT32_RTOL, atol=1e-9):
        return correct(name, f"Correct: m = max({m:g}, {s:g}) = {max(m, s):g}, everything "
                             f"rescaled by 2^({m:g} - {max(m, s):g}), the sink adds 2^0 = 1 to "
                             f"l and nothing to acc: o = {np.round(expected, 6).tolist()}.")
    mistakes = [
        (acc / l, "That ignores the sink: it is one more term in the denominator l (and none "
                  "in acc), so every weight shrinks."),
        (_fold(m, l, acc, s, rescale_acc=False),
         f"You rescaled l to the new max but not acc: both were accumulated relative to "
         f"m = {m:g}, so both need alpha = 2^(m - m_final)."),
        (_fold(m, l, acc, s, exp=math.exp),
         "The kernel keeps m and s in log2 units (scores times log2 e) and uses exp2: the "
         "factors are 2^x, not e^x."),
        (acc / (l + 2.0 ** s), f"The sink's term must be measured from the same reference as "
                               f"l: 2^(s - m) = 2^({s:g} - {m:g}), not 2^s."),
        (acc / (l + 1.0), f"2^0 = 1 is the sink's term only after rescaling to m = s; "
                          f"against l's reference m = {m:g} it is 2^(s - m)."),
        ((acc + 2.0 ** (s - m)) / (l + 2.0 ** (s - m)),
         "The sink has no value vector: it adds to l only, never to acc."),
    ]
    for value, hint in mistakes:
        if close_to(got, value, rtol=FLOAT32_RTOL, atol=1e-9):
            return wrong(name, hint)
    return wrong(name, f"Not [{', '.join(shown(g) for g in got)}]. m_final = max(m, s); "
                       f"alpha = 2^(m - m_final); l = l alpha + 2^(s - m_final); acc = acc "
                       f"alpha; o = acc / l.")
