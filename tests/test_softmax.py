import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from lessonlib.softmax import (online_attention_row, online_attention_trace, online_softmax,
                               online_softmax_trace, two_pass_softmax)

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
    """The lesson's table: m and s after each of 1, 3, 2, 5, 0.5, 4."""
    steps = online_softmax_trace(EXAMPLE_X)
    assert [st.m for st in steps] == [1.0, 3.0, 3.0, 5.0, 5.0, 5.0]
    # Each s is the sum of exp(x_j - m) over the scores seen so far: recompute it directly.
    for k, step in enumerate(steps):
        expect = math.fsum(math.exp(x - step.m) for x in EXAMPLE_X[: k + 1])
        assert step.s == pytest.approx(expect, rel=1e-14)
    assert [round(st.s, 6) for st in steps] == [1.0, 1.135335, 1.503215, 1.203438, 1.214547,
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
    table = [(st.m, round(st.s, 4), round(st.acc[0], 4), round(st.acc[1], 4)) for st in trace]
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
    assert trace[-1].s == pytest.approx(1.582426428 + math.exp(4.5 - 5.0), rel=1e-9)
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
