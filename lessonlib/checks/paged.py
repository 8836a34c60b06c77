"""Exercise checks for notebook 11 (the paged KV cache: block tables, the null block, the prefix
cache, split-KV decode).

Every check takes the student's answer (``None`` while the stub is unfilled) and returns a
Verdict: not attempted, correct, or wrong with a hint that names the mistake. Expected values
come from lessonlib: the null entries of a sliding-window table from ``kv_cache``'s rule, the
prefix hits from ``paged.FullAttentionManager`` run over a ``paged.BlockPool``, the merged
split-KV output from ``paged.split_kv_states`` and ``paged.merge_split_states``. The typical
mistakes are recomputed here the wrong way so that a hint can say which one was made.
"""
import functools
from dataclasses import dataclass

import numpy as np

from ..kv_cache import vllm_full_blocks, vllm_window_blocks
from ..models import load_model
from ..models.shape import sliding_window
from ..radix_cache import SWARadixCache, SWATokenAllocator
from ..paged import (BlockPool, FullAttentionManager, SlidingWindowManager, block_hash,
                     merge_split_states, request_block_hashes, split_kv_states)
from ..softmax import online_softmax
from . import (FLOAT32_EPS, FLOAT32_RTOL, Unreadable, _clip, _run, _short, as_number,
               check_number, correct, distinct, vector, whole, wrong)
from ._preamble import preamble

__all__ = ["window_null_entries", "prefix_hit", "merge_splits", "radix_window_lock",
           "QUESTIONS"]

QUESTIONS = {
    "window_null_entries": dict(config="gpt-oss-20b", block_size=16, prompt_tokens=1000,
                                decode_step=103),
    "radix_window_lock": dict(window=4, system=tuple(range(1, 9)),
                              served=((10, 11, 12), (20, 21, 22, 23, 24, 25, 26)),
                              swa_evictions=(3, 8), matched=(20, 21, 30),
                              request=(20, 21, 22, 23, 24, 25, 26, 99)),
}
"""Check name -> the fixed inputs of that exercise (the notebook states them in its
question)."""


def _distinct_slips(slips, expected):
    """The (value, hint) slips whose value is neither the right one nor an earlier slip's (a
    slip that gives the right number needs no hint)."""
    mistakes, seen = [], {expected}
    for value, hint in slips:
        if value not in seen:
            seen.add(value)
            mistakes.append((value, hint))
    return mistakes


# ------------------------------------------------------------------ 1. the null block

@preamble
def window_null_entries(answer):
    """Slots of gpt-oss-20b's sliding-layer block table (W = 128, blocks of 16) holding the null
    block right after decode step 103 of a request whose 1,000-token prompt was prefilled in
    one step (vLLM 0.32, ``kv_cache.vllm_window_blocks``): decode step k has c = 1000 + k - 1
    tokens settled before it, and the table's first (c - W + 1) // 16 entries are null."""
    name = "window_null_entries"
    q = QUESTIONS[name]
    W = sliding_window(load_model(q["config"]))[0]
    B, P, k = q["block_size"], q["prompt_tokens"], q["decode_step"]
    c = P + k - 1  # settled before decode step k: the prompt and the k - 1 tokens decoded before
    live, expected = vllm_window_blocks(c, 1, W, B)
    first_step = vllm_window_blocks(P, 1, W, B)[1]  # decode step 1: the prompt settled
    slips = [  # (value, hint); a slip that gives the right number needs none (dropped below)
        (vllm_window_blocks(c + 1, 1, W, B)[1],
         f"One null entry too many. Before decode step k, c = {P:,} + k - 1 tokens are settled "
         f"(the step's own token is being computed, not settled yet), and the window of W = {W} "
         f"counts the query itself, so it still sees the W - 1 = {W - 1} tokens before it: the "
         f"first (c - W + 1) // {B} entries are null, rounded down (a block goes only when all "
         f"its tokens have left the window)."),
        (vllm_window_blocks(c, 1, W - 1, B)[1],  # the window without the query: same as above
         "One null entry too many: a window of W counts the query itself."),
        (vllm_window_blocks(c, 1, W + 1, B)[1],  # W tokens before the query: no hint if right
         f"The window of W = {W} counts the query itself: it sees W - 1 tokens before it."),
        (live, f"That counts the live blocks, the ones the window still reads; the question "
               f"asks for the entries that hold the null block. The table has {live + expected} "
               f"entries, one per started block of the {c + 1:,} tokens; the first "
               f"(c - W + 1) // {B} of them are null."),
        (expected - first_step,
         f"That counts only the blocks freed after the first decode step. The prefill step "
         f"frees nothing (no token is settled before it), but the first decode step, with "
         f"the {P:,} prompt tokens settled, frees the {first_step} prompt blocks the window "
         f"has passed all at once, and they stay null: count the null entries from the start "
         f"of the table, (c - W + 1) // {B} with c the tokens settled before the step."),
        (first_step, f"That is the count right after the first decode step (c = {P:,} settled)."
                     f" By step {k}, {k - 1} more tokens have settled: c = {P:,} + {k} - 1."),
        (vllm_window_blocks(0, P, W, B)[1],
         "Right after the prefill step, yes: it frees nothing, since no token is settled "
         "before it. But every decode step frees the blocks the window has passed, counted "
         "from the tokens settled before that step."),
        (live + expected, f"That is every entry of the table; the question asks for the null "
                          f"ones, the first (c - W + 1) // {B}."),
        (c - W + 1, f"That counts tokens, the ones the window has passed; the question asks "
                    f"for table entries, blocks of {B} tokens: (c - W + 1) // {B}."),
    ]
    mistakes = _distinct_slips(slips, expected)
    return check_number(name, answer, expected, mistakes, unit="entries", integer=True,
                        right=f"Correct: {expected} entries. Before step {k}, c = {c:,} tokens "
                              f"are settled, so (c - W + 1) // {B} = ({c:,} - {W} + 1) // {B} "
                              f"= {expected} blocks are null and {live} are live.",
                        generic=f"Tokens settled before decode step k: c = {P:,} + k - 1; "
                                f"null entries: (c - W + 1) // {B}.")


def _results(name, fn, cases, args, where, read, none_hint):
    """The student's ``fn`` on every case (``args(case)``), each result read by ``read``: the
    list of results, or the Verdict of the first case that raised, returned None or gave
    something ``read`` refuses (``where(case)`` says which)."""
    got = []
    for case in cases:
        at = f"{name} on {where(case)}"
        result, error = _run(fn, args(case))
        if error is not None:
            return wrong(name, f"{at} raised {type(error).__name__}: {_clip(error)}")
        if result is None:
            return wrong(name, f"{at} returned None: {none_hint}")
        try:
            got.append(read(result))
        except Unreadable as why:
            return wrong(name, f"{at}: {why}")
    return got


# ------------------------------------------------------------------ 2. the build: a prefix hit

@dataclass(frozen=True, eq=False)  # hashed by identity: the slips are cached per case
class _PrefixCase:
    """One case of ``prefix_hit``: the earlier prompts run through a pool (``earlier``, in
    order), the hashes its prefix cache holds then (``cached``), the new prompt and the hit
    vLLM's full-attention lookup gives it (``hit``, in tokens)."""
    label: str
    token_ids: tuple
    cached: frozenset
    block_size: int
    hit: int
    earlier: tuple


def _serve(manager, request_id, token_ids):
    """One earlier prompt: it arrives, is prefilled in one step and finishes."""
    manager.add_request(request_id, token_ids)
    manager.schedule(request_id)
    manager.free(request_id)


def _prefix_case(label, block_size, prompt, earlier=(), windowed=(), num_blocks=None):
    """The cache ``earlier`` prompts leave through a ``FullAttentionManager`` (then
    ``windowed`` ones through a ``SlidingWindowManager`` of W = block_size + 1 over the same
    pool: it caches only the block a window hit needs, the one before the prompt's last block
    boundary, so the pool holds a later block without the ones before it), and the hit the
    full-attention manager gives ``prompt`` (``schedule``'s ``hit_tokens``)."""
    B, prompt = block_size, tuple(prompt)
    blocks = [vllm_full_blocks(len(p), B) for p in (prompt, *earlier, *windowed)]
    pool = BlockPool(num_blocks or 1 + sum(blocks))
    full = FullAttentionManager(pool, B)
    for i, p in enumerate(earlier):
        _serve(full, f"earlier {i}", p)
    for i, p in enumerate(windowed):
        _serve(SlidingWindowManager(pool, B + 1, B), f"windowed {i}", p)
    cached = frozenset(pool.cached_blocks)
    full.add_request("new", prompt)
    hit = full.schedule("new").hit_tokens
    return _PrefixCase(label, prompt, cached, B, hit, tuple(earlier) + tuple(windowed))


_BASE = tuple(range(10, 74))  # the tokens the edge cases' prompts share: 10, 11, ..., 73
_OTHER = tuple(range(600, 616))  # another prompt's tokens

# (label, block_size, new prompt, earlier prompts, window-cached prompts, pool blocks)
_PREFIX_EDGES = [
    ("an empty cache", 4, _BASE[:10], (), (), None),
    ("a prompt of whole blocks (12 tokens) sent again", 4, _BASE[:12], (_BASE[:12],), (), None),
    ("a prompt shorter than one block", 4, _BASE[:3], (_BASE[:12],), (), None),
    ("a prompt (14 tokens) sent again", 4, _BASE[:14], (_BASE[:14],), (), None),
    ("a prompt that leaves an earlier one mid-block", 4, _BASE[:10] + (900, 901, 902, 903, 904),
     (_BASE[:16],), (), None),
    ("an earlier prompt's tokens shifted by one position", 4, _BASE[1:17], (_BASE[:17],), (),
     None),
    ("a cache holding a later block of the prompt but not its first", 2, _BASE[:11], (),
     (_BASE[:11],), None),
    ("a cache holding blocks 0, 1 and 4 of the prompt", 2, _BASE[:11], (_BASE[:5],),
     (_BASE[:11],), None),
    ("block_size 1", 1, _BASE[:4] + (999,), (_BASE[:6],), (), None),
    ("block_size 1, a prompt sent again", 1, _BASE[:6], (_BASE[:6],), (), None),
    ("block_size 16", 16, _BASE[:40] + (7,) * 10, (_BASE[:40],), (), None),
    ("block_size 16, a prompt of whole blocks (32 tokens) sent again", 16, _BASE[:32],
     (_BASE[:32],), (), None),
    ("three earlier prompts", 4, _BASE[:18] + (1, 2, 3),
     (_BASE[:8] + (500,) * 8, _BASE[:20], _BASE[:4]), (), None),
    ("an earlier prompt whose last blocks were evicted", 4, _BASE[:16] + (7,),
     (_BASE[:16], _OTHER), (), 6),
    ("an earlier prompt whose last block was partial", 4, _BASE[:16], (_BASE[:10],), (), None),
    ("a cache of another prompt only", 4, _BASE[:12], (_OTHER,), (), None),
]
_PREFIX_RANDOM = 20


def _random_prefix_case(rng):
    """Earlier prompts that share a random base's prefix, each with its own tail, and a new
    prompt that is one of them or another cut of the base; the pool sometimes too small to keep
    them all (evictions)."""
    B = int(rng.choice([1, 2, 4, 16]))
    base = tuple(int(t) for t in rng.integers(0, 50, size=B * int(rng.integers(1, 6))
                                              + int(rng.integers(0, B + 1)) + 1))

    def cut():
        tail = rng.integers(50, 100, size=int(rng.integers(0, 2 * B + 1)))
        return base[:int(rng.integers(1, len(base) + 1))] + tuple(int(t) for t in tail)

    earlier = [cut() for _ in range(int(rng.integers(1, 4)))]
    prompt = earlier[int(rng.integers(len(earlier)))] if rng.random() < 0.4 else cut()
    need = max(vllm_full_blocks(len(p), B) for p in [prompt] + earlier)
    tight = 1 + need + int(rng.integers(0, 3)) if rng.random() < 0.3 else None
    n, k = len(prompt), len(earlier)
    label = f"a prompt of {n} token{'s' * (n > 1)} after {k} earlier prompt{'s' * (k > 1)}"
    return _prefix_case(label, B, prompt, earlier, (), tight)


@functools.lru_cache(maxsize=1)
def _prefix_cases():
    """The edge cases, then ``_PREFIX_RANDOM`` seeded random ones: a tuple of ``_PrefixCase``."""
    rng = np.random.default_rng(1130)
    edges = [_prefix_case(*edge) for edge in _PREFIX_EDGES]
    return tuple(edges + [_random_prefix_case(rng) for _ in range(_PREFIX_RANDOM)])


def _prefix_args(case):
    """The student's arguments: (token_ids, cached, block_size), a list, a set and an int."""
    return list(case.token_ids), set(case.cached), case.block_size


def _prefix_probes():
    return [_prefix_args(case) for case in _prefix_cases()[:3]]


def _found(hashes, cached):
    """How many of ``hashes`` are in ``cached`` before the first that is not."""
    return next((i for i, h in enumerate(hashes) if h not in cached), len(hashes))


@functools.lru_cache(maxsize=None)
def _prefix_slips(case):
    """{slip: the tokens a function with that one slip returns} for one case."""
    ids, cached, B = case.token_ids, case.cached, case.block_size
    chained = request_block_hashes(ids, B)  # every full block's, the last token's included
    alone = [block_hash(None, ids[i * B:(i + 1) * B]) for i in range(len(chained))]
    limit = (len(ids) - 1) // B
    return {
        "blocks": case.hit // B,
        "last_token": _found(chained, cached) * B,
        "drop_last": _found(chained[:max(len(ids) // B - 1, 0)], cached) * B,
        "unchained": _found(alone[:limit], cached) * B,
        "every_cached": sum(h in cached for h in chained[:limit]) * B,
    }


_PREFIX_HINTS = {
    "blocks": "That counts blocks; return tokens: the blocks hit times block_size.",
    "last_token": "The last token's logits must be computed, so the lookup covers at most "
                  "len(token_ids) - 1 tokens: (len(token_ids) - 1) // block_size blocks. A "
                  "prompt of whole blocks sent again hits all its blocks but the last.",
    "drop_last": "One block too few when the prompt does not end on a block boundary: only "
                 "the last token must be computed, not the last block. At most "
                 "(len(token_ids) - 1) // block_size blocks: 3 of a 14-token prompt in blocks "
                 "of 4.",
    "unchained": "Each block's hash chains from its parent: block_hash(parent, tokens), the "
                 "parent the hash of the block before (None for block 0). Hashed alone, a "
                 "block after the first never matches the cache's chained hashes.",
    "every_cached": "Stop at the first block whose hash is not in cached: a hit is a run of "
                    "blocks from block 0. The blocks after a miss are computed again, whatever "
                    "the cache holds (their K and V depend on every token before them).",
}


def _prefix_where(case):
    n, k = len(case.token_ids), len(case.cached)
    return (f"{case.label} ({n} token{'s' * (n > 1)}, block_size {case.block_size}, {k} "
            f"hash{'es' * (k != 1)} cached)")


@preamble(function="Give a function prefix_hit(token_ids, cached, block_size) that returns a "
                   "number of tokens.", probes=_prefix_probes)
def prefix_hit(fn):
    """``prefix_hit(token_ids, cached, block_size) -> int``: the tokens vLLM 0.32's
    full-attention prefix lookup hits (11, ex. 2): the longest run of the prompt's full blocks
    from block 0 whose chained hashes (``paged.block_hash``, parent None for block 0) are all in
    ``cached``, at most (len(token_ids) - 1) // block_size blocks, times block_size. Tried on
    ``_PREFIX_EDGES`` and ``_PREFIX_RANDOM`` seeded cases against ``paged.FullAttentionManager``
    (``cached`` is the pool's ``cached_blocks`` after the earlier prompts ran)."""
    name = "prefix_hit"
    cases = _prefix_cases()
    got = _results(name, fn, cases, _prefix_args, _prefix_where,
                   lambda r: whole(r, what="the tokens hit, one whole number"),
                   "every path must return a number of tokens (0 when nothing hits).")
    if not isinstance(got, list):
        return got
    ok = [g == case.hit for g, case in zip(got, cases)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} cases (an empty cache, prompts sent "
                             f"again, a prompt of whole blocks, a prefix that leaves mid-block, "
                             f"tokens shifted by one, a cached block after a miss, evictions, "
                             f"block_size 1 and 16): the run of chained hashes found from "
                             f"block 0, at most (len - 1) // block_size blocks, in tokens.")
    for slip, hint in _PREFIX_HINTS.items():
        if all(g == _prefix_slips(case)[slip] for g, case in zip(got, cases)):
            return wrong(name, hint)
    bad = ok.index(False)
    case = cases[bad]
    return wrong(name, f"On {_prefix_where(case)} it returned {got[bad]:,} tokens; the prefix "
                       f"cache hits {case.hit:,}. Hash the prompt's full blocks in a chain "
                       f"(block_hash(parent, tokens), parent None for block 0), count them "
                       f"while each hash is in cached, at most (len(token_ids) - 1) // "
                       f"block_size blocks, and return tokens.")


# ------------------------------------------------------------------ 3. going deeper: split-KV
# One case: one query head's split states from paged.split_kv_states on a random paged cache,
# and the exact output, paged.merge_split_states's row for that head.

@dataclass(frozen=True, eq=False)  # hashed by identity: the slips are cached per case
class _MergeCase:
    """One case of ``merge_splits``: one head's ``states`` ((m, l, acc) per split, acc a
    read-only (dv,) array), the exact output ``out`` (dv,), whether its scores are so large
    that exp(m) over- or underflows float64 (``huge``), and the tolerance a student's output
    is held to (``rtol``, ``atol``: ``_tolerance``)."""
    label: str
    states: tuple
    out: np.ndarray
    huge: bool
    rtol: float
    atol: float

    @property
    def empty(self):
        """Splits that saw no key (m = -inf)."""
        return sum(m == -np.inf for m, _, _ in self.states)


def _tolerance(states):
    """(rtol, atol) for one head's output: ``FLOAT32_RTOL`` (and 1e-6 for an element near 0),
    widened by what float32 costs a right merge when the scores are large: m rounded to float32
    moves each factor exp(m - M) by up to 2 ``FLOAT32_EPS`` |m| (relative; 3e-4 at |m| =
    1,200), and the output by twice that times the largest split output |acc / l|."""
    seen = [(m, l, acc) for m, l, acc in states if m > -np.inf]
    slack = 2 * FLOAT32_EPS * max(abs(m) for m, _, _ in seen)
    largest = max(float(np.abs(acc).max()) / l for _, l, acc in seen)
    return FLOAT32_RTOL + slack, 1e-6 + 2 * slack * largest


_HEADS, _D = 2, 8  # query heads per cache (one KV head: each head is a case), head_dim

# (label, block_size, context_len, num_splits, dv, window, sink_tokens, huge: 0, or the sign
# of scores near +-1,000)
_MERGE_EDGES = [
    ("one split", 4, 13, 1, 3, None, 0, 0),
    ("16 splits, the last ones empty", 4, 50, 16, 2, None, 0, 0),
    ("more splits than keys", 2, 3, 5, 2, None, 0, 0),
    ("a window of 12: the first splits see no key", 4, 40, 5, 3, 12, 0, 0),
    ("a window of 8 and 2 sinks: the middle splits see no key", 4, 40, 5, 2, 8, 2, 0),
    ("scores near +1,000", 4, 24, 4, 3, None, 0, 1),
    ("scores near -1,000", 8, 24, 3, 2, None, 0, -1),
    ("dv = 1", 2, 20, 4, 1, None, 0, 0),
    ("scores near +1,000, a window of 10, dv = 1", 4, 30, 3, 1, 10, 0, 1),
    ("two splits", 16, 33, 2, 4, None, 0, 0),
]
_MERGE_RANDOM = 8  # random caches, each giving _HEADS cases


def _merge_setup(rng, label, B, n, splits, dv, window, sinks, huge):
    """The cases of one paged cache: ``_HEADS`` heads' states of a decode step at position
    n - 1 split ``splits`` ways, keys and values random, the table a random order of blocks."""
    n_blocks = vllm_full_blocks(n, B)
    num_blocks = n_blocks + 2
    table = rng.permutation(np.arange(1, num_blocks))[:n_blocks]
    if huge:  # every key near +-35 u, the queries 30 u, 33 u: scores near +-1,050, spread ~1
        u = rng.normal(size=_D)
        u /= np.linalg.norm(u)
        kc = huge * 35.0 * u + 0.05 * rng.normal(size=(num_blocks, B, 1, _D))
        q = (30.0 + 3.0 * np.arange(_HEADS))[None, :, None] * u  # (1, heads, d)
        scale = 1.0
    else:
        kc = rng.normal(size=(num_blocks, B, 1, _D))
        q, scale = rng.normal(size=(1, _HEADS, _D)), None
    vc = rng.normal(size=(num_blocks, B, 1, dv))
    states = split_kv_states(q, kc, vc, table, n, num_splits=splits, window=window,
                             sink_tokens=sinks, scale=scale)
    out = merge_split_states(states)  # (heads, dv)
    cases = []
    for h in range(_HEADS):
        per_head = tuple((float(s.m[h]), float(s.l[h]), np.array(s.acc[h])) for s in states)
        for _, _, acc in per_head:
            acc.flags.writeable = False
        row = np.array(out[h])
        row.flags.writeable = False
        cases.append(_MergeCase(f"{label}, head {h}", per_head, row, bool(huge),
                                *_tolerance(per_head)))
    return cases


def _random_merge_setup(rng):
    B = int(rng.choice([1, 2, 4, 8, 16]))
    n = int(rng.integers(1, 81))
    splits, dv = int(rng.integers(1, 11)), int(rng.choice([1, 2, 4, 8]))
    window = int(rng.integers(1, n + 1)) if rng.random() < 0.4 else None
    sinks = int(rng.integers(0, 3)) if window else 0
    label = (f"{n} keys in {splits} split{'s' if splits > 1 else ''}"
             + (f", a window of {window}" if window else "")
             + (f" and {sinks} sink{'s' if sinks > 1 else ''}" if sinks else ""))
    return _merge_setup(rng, label, B, n, splits, dv, window, sinks, 0)


@functools.lru_cache(maxsize=1)
def _merge_cases():
    """The edge caches' cases, then ``_MERGE_RANDOM`` seeded random caches': a tuple of
    ``_MergeCase``."""
    rng = np.random.default_rng(1131)
    cases = []
    for edge in _MERGE_EDGES:
        cases += _merge_setup(rng, *edge)
    for _ in range(_MERGE_RANDOM):
        cases += _random_merge_setup(rng)
    return tuple(cases)


def _merge_args(case):
    """The student's argument: a list of (m, l, acc) tuples, acc a writable (dv,) array."""
    return ([(m, l, np.array(acc)) for m, l, acc in case.states],)


def _merge_probes():
    return [_merge_args(case) for case in _merge_cases()[:3]]


@functools.lru_cache(maxsize=None)
def _merge_slips(case):
    """{slip: the outputs a function with that one slip may return} for one case (NaN where
    the slip divides 0 by 0 or inf by inf)."""
    m = np.array([s[0] for s in case.states])  # (splits,)
    l = np.array([s[1] for s in case.states])
    acc = np.stack([s[2] for s in case.states])  # (splits, dv)
    seen = m > -np.inf
    w = online_softmax(m)
    w = w / w.max()  # the right factors exp(m - M), M the largest m: a softmax of the maxima
    with np.errstate(all="ignore"):
        raw = np.exp(m)  # without the max: inf, or 0, once |m| passes ~709
        return {
            "no_rescale": [acc.sum(axis=0) / l.sum()],
            "no_max": [(raw[:, None] * acc).sum(axis=0) / (raw * l).sum()],
            "average": [(acc[seen] / l[seen, None]).mean(axis=0), (acc / l[:, None]).mean(axis=0)],
            "acc_alone": [(w[:, None] * acc).sum(axis=0), acc.sum(axis=0)],
            "l_alone": [np.array([(w * l).sum()]), np.array([l.sum()])],
        }


_MERGE_HINTS = {
    "no_rescale": "Each split's l and acc are sums measured against its own max m, so they "
                  "cannot be added as they are: rescale each split's by exp(m - M), with M the "
                  "largest m of all splits, then add them up; the output is the summed acc "
                  "divided by the summed l.",
    "no_max": "exp(m) overflows to inf (or underflows to 0) when the scores are large, and "
              "inf / inf or 0 / 0 is NaN: rescale by exp(m - M), with M the largest m, so that "
              "every factor is at most 1.",
    "average": "Averaging each split's own output acc / l weighs every split alike, but a "
               "split counts in proportion to its share of the softmax's denominator. Rescale "
               "and add the numerators and the denominators apart: sum exp(m - M) acc, divided "
               "by sum exp(m - M) l.",
    "acc_alone": "That is the merged numerator alone: divide it by the merged denominator, "
                 "sum exp(m - M) l.",
    "l_alone": "That is the merged denominator l alone; the output is the merged numerator, "
               "sum exp(m - M) acc, divided by it: an array of shape (dv,).",
}
_EMPTY_HINT = ("Wrong only where a split saw no key (m = -inf, l = 0, acc = 0): such a split "
               "adds nothing. exp(-inf - M) is 0, but a running merge that starts from an "
               "empty split computes exp(-inf - (-inf)), which is NaN, and an empty split's "
               "acc / l is 0 / 0: give an empty split the weight 0 (or skip it), with M the "
               "largest m.")


def _same(got, want, case):
    """``got`` matches ``want`` (NaN where it has NaN) within ``case``'s tolerance."""
    want = np.atleast_1d(want)
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=case.rtol,
                                                        atol=case.atol, equal_nan=True))


def _output(result):
    """A student's output as a flat float64 array (NaN and inf kept; one number as one
    value), else Unreadable."""
    try:
        return vector(result, what="the output, an array of shape (dv,)", finite=False)
    except Unreadable:
        value = as_number(result)
        if value is None:
            raise
        return np.array([value])


def _merge_where(case):
    dv = case.out.shape[0]
    return (f"{case.label} ({len(case.states)} splits, {case.empty} of them empty, "
            f"dv = {dv})")


@preamble(function="Give a function merge_splits(states) that returns the output, an array of "
                   "shape (dv,).", probes=_merge_probes)
def merge_splits(fn):
    """``merge_splits(states) -> (dv,)``: one query head's attention output from its splits'
    partial states (11, going deeper, FlashDecoding's combine): ``states`` a list of (m, l,
    acc), m -inf, l 0 and acc zeros for a split that saw no key; with M the largest m, sum
    exp(m - M) acc over sum exp(m - M) l. Tried on the heads of ``_MERGE_EDGES`` and
    ``_MERGE_RANDOM`` seeded paged caches (``paged.split_kv_states``) against
    ``paged.merge_split_states``, within ``FLOAT32_RTOL`` (widened where |m| is large by what
    float32 rounding of m costs, ``_tolerance``)."""
    name = "merge_splits"
    cases = _merge_cases()
    got = _results(name, fn, cases, _merge_args, _merge_where, _output,
                   "return the output, an array of shape (dv,).")
    if not isinstance(got, list):
        return got
    ok = [_same(g, case.out, case) for g, case in zip(got, cases)]
    if all(ok):
        return correct(name, f"Correct on {len(cases)} heads (one split, many, empty ones "
                             f"first and last, scores near +-1,000, dv = 1): each split "
                             f"rescaled by exp(m - M), the numerators over the denominators.")
    for slip, hint in _MERGE_HINTS.items():
        if all(any(_same(g, v, case) for v in _merge_slips(case)[slip])
               for g, case in zip(got, cases)):
            return wrong(name, hint)
    if all(good for good, case in zip(ok, cases) if not case.huge):
        return wrong(name, _MERGE_HINTS["no_max"])
    if all(good for good, case in zip(ok, cases) if not case.empty):
        return wrong(name, _EMPTY_HINT)
    bad = ok.index(False)
    case, g = cases[bad], got[bad]
    dv = case.out.shape[0]
    if g.shape != (dv,):
        return wrong(name, f"On {_merge_where(case)} it returned {g.size} values "
                           f"({_short(g.tolist())}); return the output, an array of shape "
                           f"(dv,) = ({dv},).")
    j = int(np.flatnonzero(~np.isclose(g, case.out, rtol=case.rtol, atol=case.atol))[0])
    mine, exact = distinct(g[j], case.out[j])
    return wrong(name, f"On {_merge_where(case)} output[{j}] is {mine}; the exact output has "
                       f"{exact}. With M the largest m: sum exp(m - M) acc, divided by sum "
                       f"exp(m - M) l, a split that saw no key adding nothing.")


# ------------------------------------------------------------------ 4. the radix cache's window lock

def _radix_tree(q):
    """Notebook 11's SWA radix tree, as its cell leaves it: two requests served, two SWA
    evictions, one match; returns (tree, the nodes' ids along the question's request)."""
    alloc = SWATokenAllocator(64, 64)
    tree = SWARadixCache(alloc, q["window"])
    system = list(q["system"])
    for tail in q["served"]:  # one request each, as SGLang's scheduler drives it
        tokens = system + list(tail)
        hit = tree.match_prefix(tokens)
        lock = tree.inc_lock_ref(hit.last_node)
        kv = hit.device_indices + alloc.alloc(len(tokens) - hit.prefix_len)
        tree.insert(tokens, kv, prev_prefix_len=hit.prefix_len)
        tree.dec_lock_ref(hit.last_node, lock)
    for n in q["swa_evictions"]:
        tree.evict(swa_num_tokens=n)
    tree.match_prefix(system + list(q["matched"]))
    return tree


@preamble
def radix_window_lock(answer):
    """Tokens whose window KV ``inc_lock_ref`` protects when notebook 11's request
    (``QUESTIONS``) is matched in the tree its cell left (window W = 4): SGLang locks the
    window KV of whole nodes, from the request's last node up until W tokens are covered, and
    the cell's last match split the node it ended in."""
    name = "radix_window_lock"
    q = QUESTIONS[name]
    tree = _radix_tree(q)
    request = list(q["system"]) + list(q["request"])
    hit = tree.match_prefix(request)
    before = tree.swa_protected_size
    tree.inc_lock_ref(hit.last_node)
    expected = tree.swa_protected_size - before
    full = tree.full_protected_size
    W = q["window"]
    last = tree.node(hit.last_node)
    unsplit = len(q["served"][1])  # the node before the cell's match split it
    slips = [
        (W, f"The lock covers whole nodes, not exactly W = {W} tokens: from the request's last "
            f"node up, node by node, until at least {W} tokens are covered."),
        (unsplit, f"The node holding 20 ... 26 is not one node any more: the cell's last "
                  f"match, of system + [20, 21, 30], ended inside it and split it in two. "
                  f"Look at tree.nodes() now."),
        (full, f"That is the full-attention lock, every token of the path ({full}); the window "
               f"layers' lock stops once {W} tokens are covered."),
        (hit.prefix_len - len(q["system"]), "The window lock stops at the first node that "
                                            "covers W tokens; it need not reach the tombstone."),
        (0, "The path holds a tombstone, but its last nodes have window KV, and those are what "
            "the lock protects."),
    ]
    mistakes = _distinct_slips(slips, expected)
    return check_number(name, answer, expected, mistakes, unit="tokens", integer=True,
                        right=f"Correct: {expected} tokens, the request's last node "
                              f"{last.key} alone covers W = {W}.",
                        generic=f"Walk up from the request's last node, adding whole nodes "
                                f"until at least W = {W} tokens are covered.")
