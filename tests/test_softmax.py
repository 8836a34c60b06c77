import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib.softmax import (online_attention_row, online_attention_trace, online_softmax,
                               online_softmax_trace, sink_share, two_pass_softmax)

EXAMPLE_X = [1.0, 3.0, 2.0, 5.0, 0.5, 4.0]
EXAMPLE_V = [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2], [1, -1]]


def ref_softmax(x):
    """Independent float64 reference: math.exp, shifted by the max, summed with fsum."""
    finite = [v for v in x if v != -math.inf]
    m = max(finite)
    e = [0.0 if v == -math.inf else math.exp(v - m) for v in x]
    total = math.fsum(e)
    return np.array([v / total for v in e])


def test_example2_step_table():
    """Notebook 02's table: m and l after each of 1, 3, 2, 5, 0.5, 4."""
    steps = online_softmax_trace(EXAMPLE_X)
    assert [st.m for st in steps] == [1.0, 3.0, 3.0, 5.0, 5.0, 5.0]
    # Each l is the sum of exp(x_j - m) over the scores seen so far: recompute it directly.
    for k, step in enumerate(steps):
        expect = math.fsum(math.exp(x - step.m) for x in EXAMPLE_X[: k + 1])
        assert step.l == pytest.approx(expect, rel=1e-14)
    assert [round(st.l, 6) for st in steps] == [1.0, 1.135335, 1.503215, 1.203438, 1.214547,
                                                1.582426]


def test_example2_probabilities_match_two_pass():
    p = online_softmax(EXAMPLE_X)
    np.testing.assert_allclose(p, ref_softmax(EXAMPLE_X), rtol=1e-14)
    assert np.round(p, 6).tolist() == [0.011574, 0.085524, 0.031462, 0.631941, 0.00702, 0.232478]


def test_without_max_subtraction_exp_overflows_but_online_does_not():
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float64(1000.0)))
    p = online_softmax([1000.0, 999.0])
    np.testing.assert_allclose(p, [1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])


@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=40))
def test_online_equals_two_pass_for_finite_input(x):
    np.testing.assert_allclose(online_softmax(x), ref_softmax(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(online_softmax(x), two_pass_softmax(x), rtol=1e-12, atol=1e-300)


@given(st.lists(st.one_of(st.floats(-1e4, 1e4, allow_nan=False), st.just(-math.inf)),
                min_size=1, max_size=40).filter(lambda x: any(v != -math.inf for v in x)))
def test_online_equals_two_pass_with_minus_inf(x):
    p = online_softmax(x)
    np.testing.assert_allclose(p, ref_softmax(x), rtol=1e-12, atol=1e-300)
    assert all(p[i] == 0.0 for i, v in enumerate(x) if v == -math.inf)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)


def test_leading_minus_inf_does_not_make_nan():
    p = online_softmax([-math.inf, -math.inf, 2.0, 1.0])
    np.testing.assert_allclose(p, ref_softmax([-math.inf, -math.inf, 2.0, 1.0]))


@pytest.mark.parametrize("bad, match", [
    ([], "x"), ([[1.0, 2.0]], "x"), ([1.0, float("nan")], "NaN"), ([1.0, math.inf], r"\+inf"),
    ([-math.inf, -math.inf], "-inf"),
])
def test_bad_softmax_input_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        online_softmax(bad)


def ref_attention_row(scores, values, sink=None):
    values = np.asarray(values, dtype=np.float64)
    logits = list(scores) + ([sink] if sink is not None else [])
    p = ref_softmax(logits)[: len(scores)]  # the sink's probability has no value vector
    return p @ values


def test_example3_accumulator_table():
    trace = online_attention_trace(EXAMPLE_X, EXAMPLE_V)
    table = [(st.m, round(st.l, 4), round(st.acc[0], 4), round(st.acc[1], 4)) for st in trace]
    assert table == [(1.0, 1.0, 1.0, 0.0), (3.0, 1.1353, 0.1353, 1.0), (3.0, 1.5032, 0.5032, 1.3679),
                     (5.0, 1.2034, 2.0681, 0.1851), (5.0, 1.2145, 2.0681, 0.2073),
                     (5.0, 1.5824, 2.436, -0.1605)]
    # acc after each key is sum_j exp(x_j - m) v_j: recompute independently.
    for k, step in enumerate(trace):
        w = np.exp(np.array(EXAMPLE_X[: k + 1]) - step.m)
        np.testing.assert_allclose(step.acc, w @ np.array(EXAMPLE_V[: k + 1]), rtol=1e-13)
    out = online_attention_row(EXAMPLE_X, EXAMPLE_V)
    np.testing.assert_allclose(out, ref_attention_row(EXAMPLE_X, EXAMPLE_V), rtol=1e-13)
    assert np.round(out, 6).tolist() == [1.539397, -0.101451]


def test_sink_logit_joins_the_denominator_only():
    out = online_attention_row(EXAMPLE_X, EXAMPLE_V, sink_logit=4.5)
    np.testing.assert_allclose(out, ref_attention_row(EXAMPLE_X, EXAMPLE_V, sink=4.5), rtol=1e-13)
    trace = online_attention_trace(EXAMPLE_X, EXAMPLE_V, sink_logit=4.5)
    assert trace[-1].key == "sink"
    assert trace[-1].l == pytest.approx(1.582426428 + math.exp(4.5 - 5.0), rel=1e-9)
    # The weights now sum to less than one: the output shrinks towards zero.
    assert np.linalg.norm(out) < np.linalg.norm(online_attention_row(EXAMPLE_X, EXAMPLE_V))


def test_sink_above_every_score_rescales_the_accumulator():
    out = online_attention_row([0.0, 1.0], [[1.0], [3.0]], sink_logit=10.0)
    np.testing.assert_allclose(out, ref_attention_row([0.0, 1.0], [[1.0], [3.0]], sink=10.0))


@given(st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=20),
       st.one_of(st.none(), st.floats(-1e4, 1e4)), st.integers(0, 2**31 - 1))
def test_online_row_equals_reference(scores, sink, seed):
    values = np.random.default_rng(seed).standard_normal((len(scores), 3))
    np.testing.assert_allclose(online_attention_row(scores, values, sink),
                               ref_attention_row(scores, values, sink), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(scores=[1.0, 2.0], values=[[1.0]]), "values"),
    (dict(scores=[1.0], values=[1.0]), "values"),
    (dict(scores=[1.0], values=[[1.0]], sink_logit=math.nan), "sink_logit"),
    (dict(scores=[-math.inf], values=[[1.0]]), "scores"),
])
def test_bad_row_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        online_attention_row(**kwargs)


# --------------------------------------------------------------------------- issue 31: compute owns
# the rescale factor and the sink's share (notebook 02's widget and check read them from here)

def ref_rescales(x):
    """exp(m_old - m_new) of each step, from the running max recomputed with max(): None while
    every score so far is -inf (nothing carried)."""
    out, m_old = [], -math.inf
    for k in range(len(x)):
        m_new = max(x[: k + 1])
        out.append(None if m_old == -math.inf else math.exp(m_old - m_new))
        m_old = m_new
    return out


def test_example2_rescale_factors():
    """Notebook 02's step table: the max rises at keys 1 (1 -> 3) and 3 (3 -> 5)."""
    steps = online_softmax_trace(EXAMPLE_X)
    assert [st.rescale for st in steps] == [None, math.exp(-2), 1.0, math.exp(-2), 1.0, 1.0]
    assert [st.rescale for st in online_attention_trace(EXAMPLE_X, EXAMPLE_V)] == \
        [st.rescale for st in steps]


@given(st.lists(st.one_of(st.floats(-1e4, 1e4, allow_nan=False), st.just(-math.inf)),
                min_size=1, max_size=30))
def test_each_step_carries_l_times_its_rescale(x):
    """l after a step is the carried l times the step's rescale plus the new term; the factor is
    exp(m_old - m_new) of the running max (None while nothing was carried)."""
    steps = online_softmax_trace(x)
    expected = ref_rescales(x)
    for k, step in enumerate(steps):
        if expected[k] is None:
            assert step.rescale is None
        else:
            assert step.rescale == pytest.approx(expected[k], rel=1e-15, abs=0.0)
            term = 0.0 if x[k] == -math.inf else math.exp(x[k] - step.m)
            assert step.l == pytest.approx(steps[k - 1].l * step.rescale + term, rel=1e-14)
    attention = online_attention_trace(x, np.ones((len(x), 1))) if max(x) > -math.inf else []
    assert [a.rescale for a in attention] == [s.rescale for s in steps][:len(attention)]


def test_the_sink_step_rescales_by_the_keys_max_against_the_sinks():
    keys = online_attention_trace(EXAMPLE_X, EXAMPLE_V)[-1]
    for z, factor in [(4.5, 1.0), (7.0, math.exp(5.0 - 7.0))]:
        last = online_attention_trace(EXAMPLE_X, EXAMPLE_V, sink_logit=z)[-1]
        assert last.key == "sink" and last.rescale == pytest.approx(factor, rel=1e-15)
        np.testing.assert_allclose(last.acc, np.asarray(keys.acc) * factor, rtol=1e-15)
    alone = online_attention_trace([-math.inf], [[1.0]], sink_logit=2.0)[-1]
    assert alone.rescale is None and alone.l == 1.0  # only the sink: nothing was carried


def ref_sink_share(scores, z):
    """exp(z) / (sum_j exp(x_j) + exp(z)), every term shifted by the largest logit, fsum-med."""
    logits = [v for v in list(scores) + [z] if v != -math.inf]
    top = max(logits)
    return math.exp(z - top) / math.fsum(math.exp(v - top) for v in logits)


def test_example2_sink_share():
    """Notebook 02: z = 4.5 below the max 5 takes 27.7%; exercise 2's z = 7 takes 82.3%."""
    assert sink_share(EXAMPLE_X, 4.5) == pytest.approx(ref_sink_share(EXAMPLE_X, 4.5), rel=1e-14)
    assert round(sink_share(EXAMPLE_X, 4.5), 4) == 0.2771
    assert round(sink_share(EXAMPLE_X, 7.0), 4) == 0.8236
    assert sink_share([-math.inf, -math.inf], 0.0) == 1.0  # every key masked: all to the sink


@given(st.lists(st.one_of(st.floats(-1e4, 1e4, allow_nan=False), st.just(-math.inf)),
                min_size=1, max_size=20), st.floats(-1e4, 1e4))
def test_sink_share_equals_the_naive_softmax_and_one_minus_the_keys(scores, z):
    share = sink_share(scores, z)
    assert share == pytest.approx(ref_sink_share(scores, z), rel=1e-12, abs=1e-300)
    if max(scores) > -math.inf:  # the keys' weights (one-hot values) take the rest
        keys = online_attention_row(scores, np.eye(len(scores)), sink_logit=z)
        assert share + math.fsum(keys) == pytest.approx(1.0, rel=1e-12)


# --------------------------------------------------------------------------- issue 13's examples

@pytest.mark.parametrize("f", [online_softmax, two_pass_softmax, online_softmax_trace])
@pytest.mark.parametrize("bad, says", [
    ([1.0, math.nan, 2.0], r"^x must not contain NaN or \+inf: it holds NaN at index 1"),
    ([1.0, 2.0, math.inf], r"^x must not contain NaN or \+inf: it holds \+inf at index 2"),
    (["a", "b"], r"^x must hold real numbers"),  # was numpy's "could not convert string"
    ([True, False], r"^x must hold real numbers"),  # was read as 1.0, 0.0
    ([1 + 2j], r"^x must hold real numbers"),  # was a ComplexWarning and the real part
    ([[1.0], [2.0, 3.0]], r"^x must be a rectangular array"), (None, r"^x must be an array")])
def test_scores_that_have_no_softmax_are_named(f, bad, says):
    with pytest.raises(ValueError, match=says):
        f(bad)


def test_non_finite_values_and_sinks_are_named():
    """NaN in values came back as a NaN output; a string sink_logit was float()-ed."""
    with pytest.raises(ValueError, match=r"^values holds non-finite values \(1 of 2"):
        online_attention_row([1.0, 2.0], [[1.0], [np.nan]])
    with pytest.raises(ValueError, match=r"^values holds non-finite"):
        online_attention_trace([1.0], [[np.inf]])
    for sink in ("2", True, math.inf, -math.inf, 1j, [1.0]):
        with pytest.raises(ValueError, match=r"^sink_logit must be"):
            online_attention_row([1.0], [[1.0]], sink_logit=sink)
    np.testing.assert_allclose(online_attention_row([1.0], [[1.0]], sink_logit=np.float32(0.5)),
                               ref_attention_row([1.0], [[1.0]], sink=0.5))


@pytest.mark.parametrize("scores, values", [
    ([1.0, 2.0], [[1.0]]), ([1.0, 2.0], [[1.0], [2.0], [3.0]]), ([1.0], [[]]),
    ([1.0, 2.0], [1.0, 2.0]), ([1.0], [[[1.0]]])])
def test_values_must_be_one_row_per_score(scores, values):
    with pytest.raises(ValueError, match=r"^values must"):
        online_attention_row(scores, values)


def test_finite_values_that_overflow_are_named():
    with pytest.raises(ValueError, match="values: finite values overflowed"):
        online_attention_row([0.0, 0.0], [[1e308], [1e308]])


def test_float32_and_integer_inputs_give_what_they_gave():
    x32 = np.array(EXAMPLE_X, dtype=np.float32)
    np.testing.assert_array_equal(online_softmax(x32), online_softmax(x32.astype(np.float64)))
    np.testing.assert_array_equal(online_softmax([1, 3, 2]), online_softmax([1.0, 3.0, 2.0]))
    np.testing.assert_array_equal(online_attention_row(EXAMPLE_X, np.array(EXAMPLE_V)),
                                  online_attention_row(EXAMPLE_X, np.array(EXAMPLE_V, float)))


# --------------------------------------------------------------------------- bad inputs
from _bad import Case, arrays_with, bad_input_tests, reals  # noqa: E402


def _no_softmax(a):
    """The drawn array is bad for scores unless it is a finite-or--inf 1-D float array."""
    return not (isinstance(a, np.ndarray) and a.ndim == 1 and a.size and a.dtype.kind == "f"
                and not np.isnan(a).any() and not np.isposinf(a).any())


_X = np.array(EXAMPLE_X)
_SCORES = (arrays_with(_X, kind="real", ranks=(1,)).filter(_no_softmax)  # -inf is a valid score
           | st.sampled_from([[], np.full(6, np.nan), [np.inf] * 6]))
_VALS = np.array(EXAMPLE_V, dtype=float)
_ROW = dict(scores=_SCORES, values=arrays_with(_VALS, kind="real", ranks=(2,))
            | st.sampled_from([_VALS[:5], np.zeros((6, 0))]), sink_logit=reals(none_ok=True))

BAD_INPUTS = [
    Case(two_pass_softmax, args=(_X,), bad=dict(x=_SCORES)),
    Case(online_softmax, args=(_X,), bad=dict(x=_SCORES | st.just([-np.inf] * 3))),
    Case(online_softmax_trace, args=(_X,), bad=dict(x=_SCORES)),
    Case(online_attention_trace, args=(_X, _VALS), kwargs=dict(sink_logit=4.5), bad=_ROW),
    Case(online_attention_row, args=(_X, _VALS), kwargs=dict(sink_logit=4.5), bad=_ROW),
    Case(sink_share, args=(_X, 4.5), bad=dict(scores=_SCORES, sink_logit=reals())),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
