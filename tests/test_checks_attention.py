"""The exercise checks of notebooks 01-03: the stub is "not attempted", the instructors'
reference solution is correct, and each typical mistake gets the hint that names it."""
import math
import os
import re

import numpy as np
import pytest

from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import attention as checks
from _support import ROOT, assert_wrong, needs, optional, solutions


S1, S2, S3 = (solutions(n) for n in
              ("01_attention_memory", "02_online_softmax", "03_tiled_attention"))

ALL = {
    "score_matrix_gib": S1.score_matrix_gib,
    "unfused_scores_mib": S1.unfused_scores_mib,
    "attention_share": S1.attention_share,
    "online_softmax_update": S2.online_softmax_update,
    "attention_update": S2.attention_update,
    "sink_share": S2.sink_share,
    "tiled_reads": S3.tiled_reads,
    "causal_skipped_blocks": S3.causal_skipped_blocks,
    "small_block_ratio": S3.small_block_ratio,
}


@pytest.mark.parametrize("name", ["score_matrix_gib", "unfused_scores_mib", "attention_share",
                                  "sink_share", "tiled_reads", "small_block_ratio"])
def test_numeric_checks_reject_non_numbers_and_strangers(name):
    check = getattr(checks, name)
    assert_wrong(check("128"), "number")
    assert_wrong(check(float("nan")), "number")
    assert_wrong(check(ALL[name] * 1.37), "not")


# ------------------------------------------------------------------ notebook 01

def test_score_matrix_gib_expected_value_and_mistakes():
    n, h = 16384, 40
    assert checks.score_matrix_gib(40).ok is True  # 16384^2 x 40 x 4 / 2^30
    assert checks.score_matrix_gib(np.float32(40.0)).ok is True
    assert checks.score_matrix_gib(np.array(40.0)).ok is True  # a 0-d array is a number
    assert_wrong(checks.score_matrix_gib(1), "one head")
    assert_wrong(checks.score_matrix_gib(10), "4 bytes")
    assert_wrong(checks.score_matrix_gib(n * n * h * 4 / 1e9), "2**30")
    assert_wrong(checks.score_matrix_gib(20), "fp16")
    assert_wrong(checks.score_matrix_gib(n * h * 4 / 2 ** 30), "n x n")
    assert_wrong(checks.score_matrix_gib(160), "traffic")
    assert_wrong(checks.score_matrix_gib(1600), "all 40 layers")


def test_unfused_scores_mib_catches_the_gqa_trap():
    assert checks.unfused_scores_mib(512).ok is True  # 256 x 65536 x 8 x 4 / 2^20
    assert_wrong(checks.unfused_scores_mib(128), "kv heads", "query head")
    assert_wrong(checks.unfused_scores_mib(64), "one head")
    assert_wrong(checks.unfused_scores_mib(256), "f32")
    assert_wrong(checks.unfused_scores_mib(128 * 1024), "-ub queries")
    assert_wrong(checks.unfused_scores_mib(576), "mask")
    assert_wrong(checks.unfused_scores_mib(256 * 151936 * 4 / 2 ** 20), "logits")
    assert_wrong(checks.unfused_scores_mib(256 * 65536 * 8 * 4 / 1e6), "2**20")


def test_attention_share_mistakes():
    n, p, L, q = 65536, 8_030_261_248, 32, 4096  # N_param as notebook 01 counts and states it
    assert checks.QUESTIONS["attention_share"]["params"] == p
    w, a = 2 * p * n, 2 * n * n * q * L
    assert checks.attention_share(a / (w + a)).ok is True
    rounded = 2 * 8.03e9 * n  # the published, rounded count gives the same 3 digits
    assert checks.attention_share(a / (rounded + a)).ok is True
    assert f"{a / (w + a):.3g}" == f"{a / (rounded + a):.3g}" == "0.517"
    assert checks.attention_share(round(a / (w + a), 3)).ok is True  # 0.517 is fine
    assert_wrong(checks.attention_share(2 * a / (w + 2 * a)), "causal")
    assert_wrong(checks.attention_share(100 * a / (w + a)), "percentage")
    assert_wrong(checks.attention_share(a / w), "attention / (weights + attention)")
    assert_wrong(checks.attention_share((a / L) / (w + a / L)), "32 layers")
    assert_wrong(checks.attention_share(w / (w + a)), "weights' share")


# ------------------------------------------------------------------ notebook 02

def test_online_softmax_update_typical_mistakes():
    def forgot_rescale(m, l, x):
        m_new = max(m, x)
        return m_new, l + math.exp(x - m_new)

    def upside_down(m, l, x):
        m_new = max(m, x)
        return m_new, l * np.exp(m_new - m) + np.exp(x - m_new)

    def rescaled_new_term(m, l, x):
        m_new = max(m, x)
        return m_new, l + math.exp(x - m_new) * math.exp(m - m_new)

    def latest_not_max(m, l, x):
        return x, l * math.exp(m - x) + 1.0

    def no_max(m, l, x):
        return max(m, x), l + math.exp(x)

    def swapped(m, l, x):
        return tuple(reversed(S2.online_softmax_update(m, l, x)))

    def crashes(m, l, x):
        raise KeyError("oops")

    assert_wrong(checks.online_softmax_update(forgot_rescale), "forgot to rescale l")
    assert_wrong(checks.online_softmax_update(upside_down), "upside down")
    assert_wrong(checks.online_softmax_update(rescaled_new_term), "belongs on the old sum")
    assert_wrong(checks.online_softmax_update(latest_not_max), "running maximum")
    assert_wrong(checks.online_softmax_update(no_max), "subtract the running max")
    assert_wrong(checks.online_softmax_update(swapped), "swapped")
    assert_wrong(checks.online_softmax_update(crashes), "KeyError")
    assert_wrong(checks.online_softmax_update(lambda m, l, x: 1.0), "two numbers")
    assert_wrong(checks.online_softmax_update(42), "function")


def test_online_softmax_update_numpy_version_is_accepted():
    def with_numpy(m, l, x):
        m_new = np.maximum(m, x)
        if m_new == -np.inf:  # only masked keys so far
            return m_new, l
        return m_new, l * np.exp(m - m_new) + np.exp(x - m_new)

    assert checks.online_softmax_update(with_numpy).ok is True


def test_online_softmax_update_first_key_must_work():
    def breaks_on_first_key(m, l, x):  # 0 * exp(inf): NaN when m = -inf
        m_new = max(m, x)
        l_new = l * np.exp(m - m_new) + np.exp(x - m_new)
        return m_new, l_new if m > -math.inf else float("nan")

    assert_wrong(checks.online_softmax_update(breaks_on_first_key), "first key")


def _unguarded(m, l, x):
    """The one-pass formula with no guard: exp(-inf - (-inf)) is NaN on a masked first key."""
    m_new = max(m, x)
    return m_new, l * math.exp(m - m_new) + math.exp(x - m_new)


def _unguarded_acc(m, l, acc, x, v):
    m_new = max(m, x)
    a, w = math.exp(m - m_new), math.exp(x - m_new)
    return m_new, l * a + w, np.asarray(acc) * a + w * np.asarray(v)


def test_the_solutions_survive_masked_leading_keys():
    assert S2.online_softmax_update(-math.inf, 0.0, -math.inf) == (-math.inf, 0.0)
    m, l, acc = S2.attention_update(-math.inf, 0.0, np.zeros(2), -math.inf, np.ones(2))
    assert (m, l, acc.tolist()) == (-math.inf, 0.0, [0.0, 0.0])
    m, l = -math.inf, 0.0
    for x in (-math.inf, -math.inf, 1.0, 3.0):  # an all-masked prefix, then scores
        m, l = S2.online_softmax_update(m, l, x)
    assert (m, l) == (3.0, pytest.approx(math.exp(-2) + 1))


def test_an_update_without_the_masked_key_guard_is_wrong():
    """The formula alone (notebook 02's reference before the guard) returns NaN on a masked
    first key; both checks try one, and say why."""
    assert math.isnan(_unguarded(-math.inf, 0.0, -math.inf)[1])
    assert_wrong(checks.online_softmax_update(_unguarded), "masked first key", "nan",
                 "unchanged")
    assert_wrong(checks.attention_update(_unguarded_acc), "masked first key", "nan")


def test_a_guard_only_on_the_first_step_is_caught_by_the_masked_prefix():
    def first_call_only(m, l, x, _seen=[]):  # guards the probe, not a second masked key
        if m == x == -math.inf and not _seen:
            _seen.append(1)
            return m, l
        return _unguarded(m, l, x)

    assert_wrong(checks.online_softmax_update(first_call_only), "(-inf, -inf, 1, 3")

    def masked_adds_one(m, l, x):  # treats a masked key as a real one of score m
        if x == -math.inf:
            return (m, l + 1.0) if m > -math.inf else (m, l)
        return S2.online_softmax_update(m, l, x)

    assert_wrong(checks.online_softmax_update(masked_adds_one), "update(3.0")

    def acc_keeps_masked_values(m, l, acc, x, v):  # a masked key's value sneaks into acc
        m_new, l_new, acc_new = S2.attention_update(m, l, acc, x, v)
        return m_new, l_new, acc_new + (v if x == -math.inf and m > -math.inf else 0.0)

    assert_wrong(checks.attention_update(acc_keeps_masked_values), "expected")


def test_attention_update_typical_mistakes():
    def forgot_acc(m, l, acc, x, v):
        m_new = max(m, x)
        a, w = math.exp(m - m_new), math.exp(x - m_new)
        return m_new, l * a + w, acc + w * v

    def forgot_s(m, l, acc, x, v):
        m_new = max(m, x)
        a, w = math.exp(m - m_new), math.exp(x - m_new)
        return m_new, l + w, acc * a + w * v

    def divides_early(m, l, acc, x, v):
        m_new, l_new, acc_new = S2.attention_update(m, l, acc, x, v)
        return m_new, l_new, acc_new / l_new

    def weight_old_max(m, l, acc, x, v):
        m_new = max(m, x)
        a = math.exp(m - m_new)
        w_old = math.exp(x - m) if m > -math.inf else 1.0
        return m_new, l * a + math.exp(x - m_new), acc * a + w_old * v

    def scalar_acc(m, l, acc, x, v):
        m_new, l_new, acc_new = S2.attention_update(m, l, acc, x, v)
        return m_new, l_new, float(acc_new[0])

    assert_wrong(checks.attention_update(forgot_acc), "but not acc")
    assert_wrong(checks.attention_update(forgot_s), "but l is not")
    assert_wrong(checks.attention_update(divides_early), "divide by l", "once")
    assert_wrong(checks.attention_update(weight_old_max), "relative to the new max")
    assert_wrong(checks.attention_update(scalar_acc), "vector")
    assert_wrong(checks.attention_update(lambda *a: (1, 2)), "three things")
    assert_wrong(checks.attention_update("acc"), "function")


def test_attention_update_accepts_lists_and_tuples():
    def with_lists(m, l, acc, x, v):
        m_new = max(m, x)
        if m_new == -math.inf:
            return m_new, l, list(acc)
        a, w = math.exp(m - m_new), math.exp(x - m_new)
        return m_new, l * a + w, [acc[i] * a + w * v[i] for i in range(len(v))]

    assert checks.attention_update(with_lists).ok is True


def test_sink_share_mistakes():
    x = (1.0, 3.0, 2.0, 5.0, 0.5, 4.0)
    s5 = sum(math.exp(v - 5) for v in x)  # the keys' sum, relative to their max 5
    s7 = s5 * math.exp(5 - 7) + 1.0  # the sink (z = 7) is the new max
    assert checks.sink_share(1.0 / s7).ok is True  # about 0.824
    assert checks.sink_share(math.exp(7) / (sum(math.exp(v) for v in x) + math.exp(7))).ok is True
    assert_wrong(checks.sink_share(1.0 / (s5 + 1.0)), "forgot to rescale l")
    assert_wrong(checks.sink_share(math.exp(7 - 5) / s5), "joins the denominator")
    assert_wrong(checks.sink_share(1.0), "over the new l")
    assert_wrong(checks.sink_share(1 - 1.0 / s7), "keys' share")
    assert_wrong(checks.sink_share(100 / s7), "percentage")
    assert_wrong(checks.sink_share(math.exp(7) / s5), "reference points")


# ------------------------------------------------------------------ notebook 03

def test_tiled_reads_mistakes():
    n, d, b = 100, 8, 16
    assert checks.tiled_reads(12000).ok is True  # 800 + 7 x 1600
    assert checks.tiled_reads(np.int64(12000)).ok is True
    assert_wrong(checks.tiled_reads(n * d + (n // b) * 2 * n * d), "ceil", "not floor")
    assert_wrong(checks.tiled_reads(n * d + n / b * 2 * n * d), "not the fraction")
    assert_wrong(checks.tiled_reads(7 * 2 * n * d), "add the queries")
    assert_wrong(checks.tiled_reads(n * d + 7 * n * d), "2 x d")
    assert_wrong(checks.tiled_reads(12000 + n * d), "writes")
    assert_wrong(checks.tiled_reads(2 * n * d + 2 * n * n + n * d), "naive")
    assert_wrong(checks.tiled_reads(n * d + 49 * 2 * b * d), "real rows")
    assert_wrong(checks.tiled_reads(11999), "ceil(n / B)")


def test_causal_skipped_blocks_mistakes():
    right = {(i, j) for i in range(5) for j in range(5) if j > i}  # n = 300, B = 64: 5 blocks
    assert len(right) == 10
    assert checks.causal_skipped_blocks(right).ok is True
    assert checks.causal_skipped_blocks(sorted(right)).ok is True  # a list of pairs is fine
    assert checks.causal_skipped_blocks([np.array(p) for p in right]).ok is True
    assert_wrong(checks.causal_skipped_blocks(set()), "causal mask")
    assert_wrong(checks.causal_skipped_blocks(right | {(i, i) for i in range(5)}), "diagonal")
    assert_wrong(checks.causal_skipped_blocks({(j, i) for i, j in right}), "before the diagonal")
    floor_blocks = {(i, j) for i in range(4) for j in range(4) if j > i}  # 300 // 64 = 4
    assert_wrong(checks.causal_skipped_blocks(floor_blocks), "ceil(n / B) = 5", "partial")
    assert_wrong(checks.causal_skipped_blocks(10), "right count")
    assert_wrong(checks.causal_skipped_blocks(6), "not the count")
    assert_wrong(checks.causal_skipped_blocks("upper"), "pairs")
    assert_wrong(checks.causal_skipped_blocks(right | {(0, 5)}), "do not exist")
    verdict = checks.causal_skipped_blocks(right - {(0, 3)} | {(2, 1)})
    assert_wrong(verdict, "[(2, 1)]", "1 hidden tile(s) are missing")


def test_small_block_ratio_mistakes():
    n, d, b = 4096, 128, 32
    naive = 4 * n * n + 4 * n * d
    tiled = 2 * n * d + (n // b) * 2 * n * d
    assert checks.small_block_ratio(naive / tiled).ok is True
    assert naive / tiled < 1  # the point of the exercise: small blocks lose
    assert_wrong(checks.small_block_ratio(0.5), "estimate")
    assert_wrong(checks.small_block_ratio(tiled / naive), "upside down")
    assert_wrong(checks.small_block_ratio(naive / (tiled - 2 * n * d)), "reads q once")
    assert_wrong(checks.small_block_ratio(4 * n * n / tiled), "q, k, v and o")



# ------------------------------------------------------------------ answers in every form

torch = optional("torch")


def _f32(update):
    """update computed in float32 throughout, as torch or a float32 numpy pipeline would."""
    def wrapped(*args):
        args = [np.asarray(a, dtype=np.float32) if not np.isscalar(a) else np.float32(a)
                for a in args]
        with np.errstate(all="ignore"):
            return update(*args)
    return wrapped


def _np_softmax(rescale=True, upside_down=False):
    def update(m, l, x):
        m_new = np.maximum(m, x)
        if m_new == -np.inf:  # only masked keys so far
            return m_new, l
        alpha = np.exp(m_new - m) if upside_down else np.exp(m - m_new)
        return m_new, (l * alpha if rescale else l) + np.exp(x - m_new)
    return update


def test_a_float32_update_is_correct_and_float32_slips_keep_their_hints():
    assert checks.online_softmax_update(_f32(_np_softmax())).ok is True
    assert_wrong(checks.online_softmax_update(_f32(_np_softmax(rescale=False))),
                 "forgot to rescale l")
    assert_wrong(checks.online_softmax_update(_f32(_np_softmax(upside_down=True))),
                 "upside down")

    def acc32(m, l, acc, x, v):
        m_new = np.maximum(m, x)
        if m_new == -np.inf:
            return m_new, l, acc
        alpha, w = np.exp(m - m_new), np.exp(x - m_new)
        return m_new, l * alpha + w, acc * alpha + w * v

    def acc32_no_rescale(m, l, acc, x, v):
        m_new = np.maximum(m, x)
        alpha, w = np.exp(m - m_new), np.exp(x - m_new)
        return m_new, l * alpha + w, acc + w * v

    assert checks.attention_update(_f32(acc32)).ok is True
    assert_wrong(checks.attention_update(_f32(acc32_no_rescale)), "but not acc")


@needs("torch")
def test_a_torch_update_is_correct():
    def update(m, l, x):
        m, l, x = (torch.tensor(float(v)) for v in (m, l, x))  # float32 tensors
        m_new = torch.maximum(m, x)
        if m_new == -math.inf:
            return m_new, l
        return m_new, l * torch.exp(m - m_new) + torch.exp(x - m_new)

    assert checks.online_softmax_update(update).ok is True


def test_a_mismatch_shows_numbers_that_visibly_differ():
    def slightly_off(m, l, x):
        m_new, l_new = S2.online_softmax_update(m, l, x)
        return m_new, l_new * (1 + 3e-5)

    verdict = checks.online_softmax_update(slightly_off)
    got, want = re.findall(r"returned \(5, ([\d.]+)\).*= ([\d.]+)\.$", verdict.message)[0]
    assert verdict.ok is False and got != want, verdict


def test_an_update_returning_an_iterator_is_read_once():
    assert checks.online_softmax_update(lambda *a: map(float, S2.online_softmax_update(*a))).ok
    assert checks.attention_update(lambda *a: iter(S2.attention_update(*a))).ok


def test_a_function_writing_into_its_inputs_cannot_corrupt_the_reference():
    def scribbles_v(m, l, acc, x, v):
        out = S2.attention_update(m, l, acc, x, v)
        v *= 2  # after computing: the check's own values must not change
        acc *= 0
        return out

    assert checks.attention_update(scribbles_v).ok is True

    def wrong_plain(m, l, acc, x, v):
        m_new, l_new, acc_new = S2.attention_update(m, l, acc, x, v)
        return m_new, l_new, acc_new * (1.0 if m == -math.inf or x < 4 else 1.5)

    def wrong_scribbling(m, l, acc, x, v):
        out = wrong_plain(m, l, acc, x, v)
        v *= 2
        return out

    assert checks.attention_update(wrong_plain).message == \
        checks.attention_update(wrong_scribbling).message


def test_function_stubs_are_not_attempted_and_a_missing_return_is_wrong():
    def stub(m, l, x):
        return None  # your code

    def not_implemented(m, l, acc, x, v):
        raise NotImplementedError

    assert checks.online_softmax_update(stub).message == NOT_ATTEMPTED
    assert checks.attention_update(not_implemented).message == NOT_ATTEMPTED
    assert_wrong(checks.online_softmax_update(lambda m, s, x: None if x > 4 else (x, 1.0)),
                 "returned None")


@pytest.mark.parametrize("name", ["score_matrix_gib", "unfused_scores_mib", "attention_share",
                                  "sink_share", "small_block_ratio", "tiled_reads"])
def test_numeric_answers_as_arrays_tensors_and_complex(name):
    check, ref = getattr(checks, name), ALL[name]
    assert check(np.array(ref)).ok is True
    assert check(np.float32(ref)).ok is True
    assert check(complex(ref, 0)).ok is True
    assert_wrong(check(complex(ref, 1e-9)), "complex number")
    assert_wrong(check(str(ref)), "without quotes")
    if torch is not None:
        assert check(torch.tensor(ref)).ok is True  # a 0-d float32 tensor


def test_counts_must_be_whole():
    assert checks.tiled_reads(12000.0).ok is True
    assert_wrong(checks.tiled_reads(12000.5), "not a whole number", "//")
    right = {(i, j) for i in range(5) for j in range(5) if j > i}
    assert checks.causal_skipped_blocks({(float(i), float(j)) for i, j in right}).ok is True
    assert_wrong(checks.causal_skipped_blocks({(i + 0.25, j) for i, j in right}),
                 "not a whole number", "//")
    assert_wrong(checks.causal_skipped_blocks({(str(i), str(j)) for i, j in right}),
                 "without quotes")
    assert_wrong(checks.causal_skipped_blocks([(0, 1, 2)]), "two block indices")
    assert checks.causal_skipped_blocks(p for p in sorted(right)).ok is True


def test_close_digits_on_a_hand_typed_answer():
    assert_wrong(checks.sink_share(0.82), "close:", "more digits")
    assert_wrong(checks.sink_share(0.8), "close:")
    assert not checks.sink_share(0.83).message.startswith("Close")


# ------------------------------------------------------------------ notebook 03: the build

def _student_loop(q, k, v, B, *, visit="right", mask="right", rescale_acc=True,
                  rescale_s=True, top_left=False, scaled=True, reverse=False, floor=False):
    """A student's tiled causal loop, written apart from the check's own, with one slip chosen
    by keyword (visit "all" tiles or only those "below" the diagonal; mask "none", "strict"
    or "loose"; no rescale of acc or l; queries at 0..nq-1; no 1/sqrt(d); key blocks visited
    last first with no guard; whole blocks only)."""
    nq, nk = len(q), len(k)
    offset = 0 if top_left else nk - nq
    out, tiles = np.zeros((nq, v.shape[1])), 0
    with np.errstate(all="ignore"):
        for i0 in range(0, (nq // B) * B if floor else nq, B):
            i1 = min(i0 + B, nq)
            p = np.arange(offset + i0, offset + i1)
            qi = q[i0:i1] / (np.sqrt(q.shape[1]) if scaled else 1)
            m, l, acc = np.full(len(p), -np.inf), np.zeros(len(p)), np.zeros((len(p), v.shape[1]))
            end = (nk // B) * B if floor else nk
            starts = [j0 for j0 in range(0, end, B)
                      if visit == "all" or (visit == "right" and j0 <= p[-1])
                      or (visit == "below" and min(j0 + B, nk) - 1 <= p[0])]
            for j0 in (reversed(starts) if reverse else starts):
                j1 = min(j0 + B, nk)
                x = qi @ k[j0:j1].T
                j = np.arange(j0, j1)[None, :]
                hidden = {"right": j > p[:, None], "strict": j >= p[:, None],
                          "loose": j > p[:, None] + 1, "none": (j < 0) & (p[:, None] >= 0)}[mask]
                x[hidden] = -np.inf
                m_new = np.maximum(m, x.max(axis=1))
                a, w = np.exp(m - m_new), np.exp(x - m_new[:, None])
                l = (l * a if rescale_s else l) + w.sum(axis=1)
                acc = (acc * a[:, None] if rescale_acc else acc) + w @ v[j0:j1]
                m = m_new
                tiles += 1
            out[i0:i1] = acc / l[:, None]
    return out, tiles


def computes_every_tile(q, k, v, B):
    """Right output, no skipping: every (query block, key block) tile is computed, masked."""
    offset = len(k) - len(q)
    out, tiles = np.empty((len(q), v.shape[1])), 0
    for i0 in range(0, len(q), B):
        p = offset + np.arange(i0, min(i0 + B, len(q)))
        m, l = np.full(len(p), -np.inf), np.zeros(len(p))
        acc = np.zeros((len(p), v.shape[1]))
        for j0 in range(0, len(k), B):
            x = q[p - offset] @ k[j0:j0 + B].T / np.sqrt(q.shape[1])
            x[np.arange(j0, min(j0 + B, len(k)))[None, :] > p[:, None]] = -np.inf
            m_new = np.maximum(m, x.max(axis=1))
            m_ref = np.where(m_new == -np.inf, 0.0, m_new)
            a, w = np.exp(m - m_ref), np.exp(x - m_ref[:, None])
            l, acc, m = l * a + w.sum(axis=1), acc * a[:, None] + w @ v[j0:j0 + B], m_new
            tiles += 1
        out[p - offset] = acc / l[:, None]
    return out, tiles


def test_tiled_causal_reference_and_an_independent_loop_are_correct():
    assert checks.tiled_causal(S3.tiled_causal).ok is True
    assert checks.tiled_causal(_student_loop).ok is True

    def float32(q, k, v, B):  # computed in float32 throughout: passes at FLOAT32_RTOL
        out, tiles = S3.tiled_causal(*(a.astype(np.float32) for a in (q, k, v)), B)
        return out.astype(np.float32), tiles

    assert checks.tiled_causal(float32).ok is True
    assert checks.tiled_causal(lambda q, k, v, B: (S3.tiled_causal(q, k, v, B)[0].tolist(),
                                                   float(S3.tiled_causal(q, k, v, B)[1]))).ok
    if torch is not None:
        assert checks.tiled_causal(lambda q, k, v, B: tuple(
            torch.as_tensor(np.asarray(x)) for x in S3.tiled_causal(q, k, v, B))).ok is True


@pytest.mark.parametrize("slip, fragments", [
    (dict(visit="below"), ["skipped the diagonal tiles", "mask applied inside"]),
    (dict(visit="right", mask="none"), ["need the mask inside", "j > p"]),
    (dict(mask="strict"), ["off by one", "its own key"]),
    (dict(mask="loose"), ["off by one", "p + 1"]),
    (dict(rescale_acc=False), ["rescaled l but not acc"]),
    (dict(rescale_s=False), ["l is not"]),
    (dict(rescale_acc=False, rescale_s=False), ["neither l nor acc"]),
    (dict(top_left=True), ["last nq positions", "nk - nq + i"]),
    (dict(scaled=False), ["1/sqrt(d)"]),
    (dict(reverse=True), ["nan", "masked first key"]),
    (dict(floor=True), ["partial", "ceil(n / b)"]),
    (dict(visit="all"), ["computed every tile"]),
], ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_tiled_causal_names_each_typical_slip(slip, fragments):
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: _student_loop(q, k, v, B, **slip)),
                 *fragments)


def test_tiled_causal_counts_and_shapes():
    assert_wrong(checks.tiled_causal(computes_every_tile), "computed every tile")

    def counts_skipped(q, k, v, B):
        out, tiles = S3.tiled_causal(q, k, v, B)
        return out, -(-len(q) // B) * -(-len(k) // B) - tiles

    def one_too_many(q, k, v, B):
        out, tiles = S3.tiled_causal(q, k, v, B)
        return out, tiles + (len(q) > 10)

    assert_wrong(checks.tiled_causal(counts_skipped), "counts the tiles skipped")
    assert_wrong(checks.tiled_causal(one_too_many), "is more than")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: S3.tiled_causal(q, k, v, B)[0]),
                 "(out, tiles)", "not out alone")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: (S3.tiled_causal(q, k, v, B)[0].T, 1)),
                 "shape (nq, dv)")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: (S3.tiled_causal(q, k, v, B)[0], 2.5)),
                 "not a whole number")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: (S3.tiled_causal(q, k, v, B)[0], "3")),
                 "without quotes")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: q[:, :0].sum()), "(out, tiles)")


def test_tiled_causal_junk_and_errors_get_a_clear_verdict():
    def crashes(q, k, v, B):
        return q @ k  # (nq, d) @ (nk, d): the transpose is missing

    def wrong_somewhere(q, k, v, B):
        out, tiles = S3.tiled_causal(q, k, v, B)
        return out * (1.5 if len(q) == 7 else 1.0), tiles

    assert_wrong(checks.tiled_causal(crashes), "raised ValueError")
    assert_wrong(checks.tiled_causal(wrong_somewhere), "nq = 7", "naive attention gives")
    assert_wrong(checks.tiled_causal(lambda q, k, v, B: "out"), "(out, tiles)")
    assert checks.tiled_causal(lambda q, k, v, B: None).message == NOT_ATTEMPTED


def test_tiled_causal_inputs_cover_the_edge_cases():
    cases = checks._tiled_cases()
    assert len(cases) >= 30
    shapes = [(len(q), len(k), b) for q, k, _, b in cases]
    assert any(b == 1 for _, _, b in shapes) and any(n < b for n, _, b in shapes)
    assert any(nq == nk == 1 for nq, nk, _ in shapes)
    assert any(nq < nk and (nk - nq) % b for nq, nk, b in shapes)  # blocks off the diagonal
    assert any(nq % b for nq, _, b in shapes)
    assert any(v.shape[1] != q.shape[1] for q, _, v, _ in cases)


# ------------------------------------------------------------------ notebook 01: the build

def _buffer(slip=None):
    return lambda cfg, n_ctx, ub, fa: checks._buffer_variant(cfg, n_ctx, ub, fa, slip)


def test_compute_buffer_reference_and_an_independent_one_are_correct():
    assert checks.compute_buffer(S1.compute_buffer).ok is True

    def written_apart(config, n_ctx, ub, flash_attn):  # from llama.cpp's tensors, in MiB first
        heads = config["num_attention_heads"]
        peaks = [ub * config["vocab_size"] * 4 / 2**20]
        if not flash_attn:
            peaks.append((ub * n_ctx * heads + ub * n_ctx) * 4 / 2**20)
        return max(peaks) * 2**20

    assert checks.compute_buffer(written_apart).ok is True
    assert checks.compute_buffer(lambda *a: np.int64(S1.compute_buffer(*a))).ok is True
    if torch is not None:
        assert checks.compute_buffer(lambda *a: torch.tensor(S1.compute_buffer(*a))).ok  # int64


def test_the_buffer_variants_agree_with_lessonlib_and_each_slip_shows_somewhere():
    from lessonlib.kv_cache import llamacpp_compute_buffer
    cases = checks._buffer_cases()
    assert len(cases) == 32
    for cfg, n_ctx, ub, fa in cases:
        want = llamacpp_compute_buffer(cfg, n_ctx, ub, flash_attn=fa).estimate_bytes
        assert checks._buffer_variant(cfg, n_ctx, ub, fa) == want == S1.compute_buffer(
            cfg, n_ctx, ub, fa)
    for slip, _ in checks._BUFFER_SLIPS:
        assert any(checks._buffer_variant(*c, slip) != checks._buffer_variant(*c) for c in cases)
    # the edge cases hold both orders of the peaks, and one where the mask decides
    unfused = [llamacpp_compute_buffer(c, n, ub, flash_attn=False) for c, n, ub, fa in cases
               if not fa]
    assert any(b.logits_bytes > b.scores_bytes + b.mask_bytes for b in unfused)
    assert any(b.logits_bytes < b.scores_bytes + b.mask_bytes for b in unfused)
    assert any(b.scores_bytes < b.logits_bytes < b.scores_bytes + b.mask_bytes for b in unfused)


@pytest.mark.parametrize("slip, fragments", [
    ("sum", ["larger peak, not the sum"]),
    ("no_mask", ["mask", "ub x n_ctx"]),
    ("kv_heads", ["kv heads", "not scores"]),
    ("mask_per_head", ["not one per head"]),
    ("fa_ignored", ["flash attention on", "logits are all"]),
    ("no_logits", ["larger peak"]),
    ("fp16", ["4 bytes each"]),
    ("n_squared", ["ub queries"]),
])
def test_compute_buffer_names_each_typical_slip(slip, fragments):
    assert_wrong(checks.compute_buffer(_buffer(slip)), *fragments)


def test_compute_buffer_units_junk_and_a_lookup_table():
    assert_wrong(checks.compute_buffer(lambda *a: S1.compute_buffer(*a) / 2**20), "in MiB")
    assert_wrong(checks.compute_buffer(lambda *a: "1024"), "one number")
    assert_wrong(checks.compute_buffer(lambda c, n, ub, fa: c["hidden"]), "raised KeyError")
    assert checks.compute_buffer(lambda *a: None).message == NOT_ATTEMPTED
    cases = checks._buffer_cases()
    edges = {(n, ub, fa): S1.compute_buffer(c, n, ub, fa) for c, n, ub, fa in cases[:8]}
    assert_wrong(checks.compute_buffer(lambda c, n, ub, fa: edges.get((n, ub, fa), 0)),
                 "it gave 0 bytes")
    # A table of every input the check uses passes the check, and fails the graded version's
    # hidden test (scripts/assignments.py: the same settings at three times the micro-batch).
    table = {(n, ub, fa, c["vocab_size"]): S1.compute_buffer(c, n, ub, fa)
             for c, n, ub, fa in cases}

    def lookup(c, n, ub, fa):
        return table.get((n, ub, fa, c["vocab_size"]), 0)

    assert checks.compute_buffer(lookup).ok is True
    import importlib.util
    spec = importlib.util.spec_from_file_location("assignments_", os.path.join(
        ROOT, "scripts", "assignments.py"))
    A = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(A)
    for f, ok in ((lookup, False), (S1.compute_buffer, True)):
        env = {"np": np, "f": f}
        exec(A.HIDDEN["compute_buffer"].format(f="f"), env)
        assert checks.compute_buffer(env["_unseen"]).ok is ok


# ------------------------------------------------------------ notebook 03: Algorithm 1's count

def test_flash_io_floats_right_and_mistakes():
    q = checks.QUESTIONS["flash_io_floats"]
    assert checks.flash_io_floats(S3.flash_io_floats).ok is True
    n, d, sram = q["n"], q["d"], q["sram"]
    bc = math.ceil(sram / (4 * d))
    first, kv, row = n * d + 2 * n, 2 * n * d, 3 * d + 4
    passes = math.ceil(n / bc)
    assert S3.flash_io_floats == first + kv + passes * row * n == 156_780_000
    assert checks.flash_io_floats(float(S3.flash_io_floats)).ok is True
    assert_wrong(checks.flash_io_floats(first + kv + (n // bc) * row * n), "ceil(n / b_c)")
    assert_wrong(checks.flash_io_floats(first + kv + math.ceil(n / 64) * row * n),
                 "not once per block of b_r")
    assert_wrong(checks.flash_io_floats(first + kv + math.ceil(n / (sram // d)) * row * n),
                 "four blocks")
    assert_wrong(checks.flash_io_floats(first + kv + passes * 3 * d * n), "not 3d")
    assert_wrong(checks.flash_io_floats(kv + passes * row * n), "first write of o = 0")
    assert_wrong(checks.flash_io_floats(first + passes * row * n), "loads of k and v")
    assert_wrong(checks.flash_io_floats(4 * n * d + 4 * n * n), "standard attention")
    assert_wrong(checks.flash_io_floats(n * n * d * d / sram), "order of growth")
    assert_wrong(checks.flash_io_floats(S3.flash_io_floats + 0.5), "not a whole number")
    assert_wrong(checks.flash_io_floats(S3.flash_io_floats + 1), "b_c = ceil(m / 4d)")
