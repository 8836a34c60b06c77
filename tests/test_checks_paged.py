"""lessonlib.checks.paged: the reference solutions pass, typical mistakes get their hint."""
import math

import numpy as np
import pytest
from _support import solutions

from lessonlib import kv_cache, paged
from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import paged as checks

SOLUTIONS = vars(solutions("11_paged_cache"))
NAMES = ["window_null_entries", "prefix_hit", "merge_splits", "radix_window_lock"]


def test_every_check_passes_its_reference_and_is_not_attempted_on_the_stub():
    for name in NAMES:
        check = getattr(checks, name)
        assert check(SOLUTIONS[name]).ok is True, name
        assert check(None).ok is None and check(None).message == NOT_ATTEMPTED
    for name in ("prefix_hit", "merge_splits"):
        check = getattr(checks, name)
        assert check(lambda *a: None).ok is None

        def stub(*a):
            raise NotImplementedError

        assert check(stub).ok is None
        assert check(42).ok is False and "Give a function" in check(42).message


# ------------------------------------------------------------------ 1. the null block

def _replay_null_entries(prompt=1000, steps=103, W=128, B=16):
    """The null entries of a sliding-window table after ``steps`` decode steps, replayed."""
    manager = paged.SlidingWindowManager(paged.BlockPool(200), W, B)
    manager.add_request("r", list(range(prompt)))
    manager.schedule("r")  # the prefill, one step
    for k in range(steps):
        manager.append_tokens("r", [7])
        table = manager.schedule("r").block_table
    return table.count(paged.NULL_BLOCK)


def test_window_null_entries_expected_value_is_the_managers():
    assert _replay_null_entries() == SOLUTIONS["window_null_entries"] == 60
    assert checks.window_null_entries(_replay_null_entries()).ok is True
    assert checks.window_null_entries(_replay_null_entries(steps=104)).ok is False  # 61


@pytest.mark.parametrize("answer, hint", [
    ((1103 - 128 + 1) // 16, "One null entry too many"),   # 61: c counted after the step
    ((1102 - 127 + 1) // 16, "One null entry too many"),   # 61: a window of W - 1
    (-(-(1102 - 128 + 1) // 16), "rounded down"),          # 61: rounded up
    (69 - 60, "live blocks"),                               # 9
    (60 - 54, "prefill step frees nothing"),                # 6: decode steps' frees after step 1
    (103 // 16, "prefill step frees nothing"),              # 6: a block per 16 decode steps
    ((1000 - 128 + 1) // 16, "after the first decode step"),  # 54
    (0, "Right after the prefill step"),
    (69, "every entry of the table"),
    (1102 - 128 + 1, "counts tokens"),                      # 975
    (62, "Not 62 entries"),
])
def test_window_null_entries_hints(answer, hint):
    verdict = checks.window_null_entries(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_window_null_entries_slip_that_gives_the_right_number_needs_no_hint():
    """Forgetting that the window counts the query, (c - W) // 16, is 974 // 16 = 60 too; so is
    counting the step's token and that slip together, (1103 - 128) // 16."""
    assert (1102 - 128) // 16 == (1103 - 128) // 16 == 60
    assert kv_cache.vllm_window_blocks(1102, 1, 129, 16)[1] == 60


def test_window_null_entries_reads_counts_in_every_form():
    for answer in (60, 60.0, np.int64(60), np.array(60), np.float32(60)):
        assert checks.window_null_entries(answer).ok is True, answer
    for answer, hint in [(60.5, "not a whole number"), ("60", "without quotes"),
                         ([60], "one number"), (True, "True and False")]:
        verdict = checks.window_null_entries(answer)
        assert verdict.ok is False and hint in verdict.message, (answer, verdict.message)


# ------------------------------------------------------------------ 2. the build: prefix_hit

def _hit(token_ids, cached, block_size, *, chained=True, last=True, stop=True, tokens=True,
         drop_last=False):
    """A student's prefix_hit, with one slip chosen by keyword."""
    B = block_size
    n = (len(token_ids) - 1) // B if last else len(token_ids) // B
    if drop_last:
        n = max(len(token_ids) // B - 1, 0)
    parent, blocks = None, 0
    for i in range(n):
        parent = paged.block_hash(parent if chained else None, token_ids[i * B:(i + 1) * B])
        if parent in cached:
            blocks += 1
        elif stop:
            break
    return blocks * B if tokens else blocks


def test_prefix_hit_reference_and_forms_are_correct():
    ref = SOLUTIONS["prefix_hit"]
    assert checks.prefix_hit(_hit).ok is True
    assert checks.prefix_hit(lambda t, c, b: float(ref(t, c, b))).ok is True
    assert checks.prefix_hit(lambda t, c, b: np.int64(ref(t, c, b))).ok is True

    def with_request_hashes(token_ids, cached, block_size):  # another way to the chain
        hashes = paged.request_block_hashes(token_ids, block_size)[:(len(token_ids) - 1)
                                                                     // block_size]
        return block_size * next((i for i, h in enumerate(hashes) if h not in cached),
                                 len(hashes))

    assert checks.prefix_hit(with_request_hashes).ok is True


@pytest.mark.parametrize("slip, hint", [
    (dict(last=False), "last token's logits must be computed"),
    (dict(drop_last=True), "One block too few"),
    (dict(chained=False), "chains from its parent"),
    (dict(tokens=False), "That counts blocks"),
    (dict(stop=False), "Stop at the first block"),
], ids=["last-token-kept", "last-block-dropped", "unchained", "blocks", "every-cached"])
def test_prefix_hit_names_each_typical_slip(slip, hint):
    verdict = checks.prefix_hit(lambda t, c, b: _hit(t, c, b, **slip))
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_prefix_hit_none_errors_and_unreadable_results_are_not_yet():
    ref = SOLUTIONS["prefix_hit"]
    for fn, hint in [(lambda t, c, b: None if not c else ref(t, c, b), "returned None"),
                     (lambda t, c, b: ref(t, c, b) if len(t) >= b else 1 // 0,
                      "raised ZeroDivisionError"),
                     (lambda t, c, b: str(ref(t, c, b)), "without quotes"),
                     (lambda t, c, b: ref(t, c, b) + 0.5, "not a whole number"),
                     (lambda t, c, b: [ref(t, c, b)], "one number itself"),
                     (lambda t, c, b: True, "True and False")]:
        verdict = checks.prefix_hit(fn)
        assert verdict.ok is False and hint in verdict.message, (hint, verdict.message)


def test_prefix_hit_cannot_be_passed_by_a_constant_or_a_lookup_of_the_probes():
    for k in (0, 1, 4, 8, 16):
        assert checks.prefix_hit(lambda t, c, b, k=k: k).ok is False
    probes = {(tuple(t), b): _hit(t, c, b) for t, c, b in checks._prefix_probes()}
    verdict = checks.prefix_hit(lambda t, c, b: probes.get((tuple(t), b), 0))
    assert verdict.ok is False and "the prefix cache hits" in verdict.message, verdict


def _lcp(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def test_prefix_hit_cases_cover_the_edges():
    cases = checks._prefix_cases()
    assert len(cases) >= 30 and len({c.hit for c in cases}) >= 5
    for c in cases:  # the manager's hit is the chained rule (the reference) on the pool's hashes
        assert c.hit == _hit(list(c.token_ids), c.cached, c.block_size), c.label
    assert any(not c.cached for c in cases)  # an empty cache
    assert any(len(c.token_ids) % c.block_size == 0 and c.token_ids in c.earlier
               and c.hit == len(c.token_ids) - c.block_size for c in cases)  # last block: no hit
    assert any(len(c.token_ids) < c.block_size and c.cached for c in cases)
    assert any(c.token_ids in c.earlier and len(c.token_ids) % c.block_size for c in cases)
    assert any(c.block_size <= _lcp(c.token_ids, e) < min(len(e), len(c.token_ids))
               and _lcp(c.token_ids, e) % c.block_size and c.hit == _lcp(c.token_ids, e)
               // c.block_size * c.block_size for c in cases for e in c.earlier)  # mid-block
    assert any(c.hit == 0 and any(c.token_ids == e[1:len(c.token_ids) + 1] for e in c.earlier)
               for c in cases)  # shifted by one

    def gap(c):  # a block cached after one that is not, within the lookup's reach
        hashes = paged.request_block_hashes(c.token_ids, c.block_size)
        found = [h in c.cached for h in hashes[:(len(c.token_ids) - 1) // c.block_size]]
        return any(found[j] and not all(found[:j]) for j in range(len(found)))

    assert any(gap(c) and c.hit == 0 for c in cases) and any(gap(c) and c.hit for c in cases)
    assert {1, 16} <= {c.block_size for c in cases}
    # Evictions: every hit is at most the one a cache that kept everything gives, and one is less.
    kept = [kv_cache.vllm_prefix_hits(list(c.earlier) + [c.token_ids], c.block_size)[-1]
            for c in cases]
    assert all(c.hit <= k for c, k in zip(cases, kept))
    assert any(c.hit < k and not gap(c) for c, k in zip(cases, kept))


# ------------------------------------------------------------------ 3. going deeper: merge_splits

def _arrays(states):
    m = np.array([s[0] for s in states], dtype=float)
    l = np.array([s[1] for s in states], dtype=float)
    acc = np.stack([np.asarray(s[2], dtype=float) for s in states])
    return m, l, acc


def _plain_sums(states):
    m, l, acc = _arrays(states)
    return acc.sum(axis=0) / l.sum()


def _no_max(states):
    m, l, acc = _arrays(states)
    w = np.exp(m)
    return (w[:, None] * acc).sum(axis=0) / (w * l).sum()


def _running_merge(states):
    """Merged two at a time from (-inf, 0, 0), with no guard for an empty split."""
    M, L, A = -math.inf, 0.0, 0.0
    for m, l, acc in states:
        new = max(M, m)
        a, b = np.exp(M - new), np.exp(m - new)
        M, L, A = new, L * a + l * b, A * a + np.asarray(acc) * b
    return A / L


def _average(states):
    m, l, acc = _arrays(states)
    seen = m > -np.inf
    return (acc[seen] / l[seen, None]).mean(axis=0)


def _average_all(states):
    m, l, acc = _arrays(states)
    return (acc / l[:, None]).mean(axis=0)


def _weights(states):
    m, _, _ = _arrays(states)
    M = m.max()
    return np.where(m > -np.inf, np.exp(m - M), 0.0)


def _acc_alone(states):
    _, _, acc = _arrays(states)
    return (_weights(states)[:, None] * acc).sum(axis=0)


def _l_alone(states):
    _, l, _ = _arrays(states)
    return float((_weights(states) * l).sum())


def test_merge_splits_reference_and_forms_are_correct():
    ref = SOLUTIONS["merge_splits"]
    assert checks.merge_splits(ref).ok is True
    assert checks.merge_splits(lambda s: list(ref(s))).ok is True
    assert checks.merge_splits(lambda s: ref(s)[None, :]).ok is True  # (1, dv) reads as (dv,)

    def float32(states):  # the same merge in float32: within FLOAT32_RTOL
        M = np.float32(max(m for m, _, _ in states))
        l_sum, acc_sum = np.float32(0), np.zeros_like(states[0][2], dtype=np.float32)
        for m, l, acc in states:
            if m > -np.inf:
                w = np.exp(np.float32(m) - M)
                l_sum += w * np.float32(l)
                acc_sum += w * acc.astype(np.float32)
        return acc_sum / l_sum

    assert checks.merge_splits(float32).ok is True


@pytest.mark.parametrize("fn, hint", [
    (_plain_sums, "cannot be added as they are"),
    (_no_max, "exp(m) overflows"),
    (_running_merge, "saw no key"),
    (_average, "Averaging each split's own output"),
    (_average_all, "Averaging each split's own output"),
    (_acc_alone, "merged numerator alone"),
    (_l_alone, "denominator l alone"),
], ids=["plain-sums", "no-max", "nan-from-empty", "average", "average-with-empties",
        "acc-alone", "l-alone"])
def test_merge_splits_names_each_typical_slip(fn, hint):
    verdict = checks.merge_splits(fn)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_merge_splits_none_errors_and_unreadable_results_are_not_yet():
    ref = SOLUTIONS["merge_splits"]
    for fn, hint in [(lambda s: None if len(s) == 1 else ref(s), "returned None"),
                     (lambda s: 1 / 0, "raised ZeroDivisionError"),
                     (lambda s: str(ref(s)), "without quotes"),
                     (lambda s: {"out": ref(s)}, "dict"),
                     (lambda s: np.append(ref(s), 0.0), "array of shape (dv,)"),
                     (lambda s: ref(s) * 1.001, "the exact output has")]:
        verdict = checks.merge_splits(fn)
        assert verdict.ok is False and hint in verdict.message, (hint, verdict.message)


def test_merge_splits_cannot_be_passed_by_a_constant_or_one_split():
    assert checks.merge_splits(lambda s: np.zeros(len(s[0][2]))).ok is False
    assert checks.merge_splits(lambda s: np.ones(len(s[0][2]))).ok is False
    assert checks.merge_splits(lambda s: s[-1][2] / max(s[-1][1], 1e-300)).ok is False


def test_merge_splits_cases_cover_the_edges():
    cases = checks._merge_cases()
    assert len(cases) >= 30
    splits = [len(c.states) for c in cases]
    assert 1 in splits and max(splits) >= 8
    assert any(c.empty for c in cases)
    assert any(c.states[0][0] == -math.inf for c in cases)  # the first split saw no key
    assert any(c.states[0][0] > -math.inf and c.states[1][0] == -math.inf
               for c in cases if len(c.states) > 2)  # an empty split in the middle
    finite = [max(abs(m) for m, _, _ in c.states if m > -math.inf) for c in cases]
    big = math.log(np.finfo(np.float64).max)  # ~709.78: exp(m) overflows past it
    assert any(f > big and max(m for m, _, _ in c.states) > 0 for f, c in zip(finite, cases))
    assert any(f > big and max(m for m, _, _ in c.states) < 0 for f, c in zip(finite, cases))
    assert any(c.out.shape == (1,) for c in cases) and any(c.out.shape[0] > 1 for c in cases)
    for c in cases:  # empty splits are the merge's identity, and the reference agrees
        for m, l, acc in c.states:
            if m == -math.inf:
                assert l == 0.0 and not acc.any()
        np.testing.assert_allclose(SOLUTIONS["merge_splits"](list(c.states)), c.out,
                                   rtol=1e-12, atol=1e-12)


def test_merge_splits_cases_are_exact_attention():
    """The states the check hands out are split_kv_states of a paged cache, and their merge is
    attention of the query over the cache (paged_attention), with a window and sinks too."""
    rng = np.random.default_rng(0)
    for B, n, splits, window, sinks in [(4, 40, 5, 12, 0), (4, 40, 5, 8, 2), (2, 3, 5, None, 0)]:
        kc, vc = rng.normal(size=(12, B, 1, 8)), rng.normal(size=(12, B, 1, 3))
        q, table = rng.normal(size=(1, 2, 8)), rng.permutation(np.arange(1, 12))[:-(-n // B)]
        states = paged.split_kv_states(q, kc, vc, table, n, num_splits=splits, window=window,
                                       sink_tokens=sinks)
        want = paged.paged_attention(q, kc, vc, table, n, window=window, sink_tokens=sinks)[0]
        for h in range(2):
            per_head = [(float(s.m[h]), float(s.l[h]), np.array(s.acc[h])) for s in states]
            np.testing.assert_allclose(SOLUTIONS["merge_splits"](per_head), want[h],
                                       rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ 4. the radix cache's window lock

def test_radix_window_lock_is_the_trees_own_count():
    """The expected value is what the tree says (swa_protected_size after the lock), and the
    split the cell's match made is what makes it 5 and not 7."""
    from lessonlib.checks.paged import QUESTIONS, _radix_tree
    q = QUESTIONS["radix_window_lock"]
    tree = _radix_tree(q)
    keys = [n.key for n in tree.nodes()[1:]]
    assert (20, 21) in keys and (22, 23, 24, 25, 26) in keys  # the cell's match split the node
    hit = tree.match_prefix(list(q["system"]) + list(q["request"]))
    assert hit.prefix_len == 15
    tree.inc_lock_ref(hit.last_node)
    assert tree.swa_protected_size == SOLUTIONS["radix_window_lock"] == 5
    assert tree.full_protected_size == 15
    assert checks.radix_window_lock(5).ok is True


@pytest.mark.parametrize("answer, hint", [(4, "whole nodes"), (7, "split it in two"),
                                          (15, "full-attention lock"), (0, "tombstone"),
                                          (6, "Walk up from the request's last node")])
def test_radix_window_lock_hints(answer, hint):
    verdict = checks.radix_window_lock(answer)
    assert verdict.ok is False and hint in verdict.message, verdict
