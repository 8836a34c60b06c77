"""Online softmax and the online attention row (notebook 02: six scores, then their values).

Symbols follow FlashAttention-2 (Dao, 2023), Algorithm 1, and Milakov & Gimelshein (2018):

    m    running maximum of the scores seen so far
    l    running denominator: sum_j exp(x_j - m) over the scores seen so far, for the current m
    acc  running numerator of the output: sum_j exp(x_j - m) * v_j

When a new score raises the maximum from m_old to m_new, everything accumulated so far was
computed relative to m_old, so it is multiplied by exp(m_old - m_new). That keeps every exponent
<= 0 (no overflow) and needs only one pass.

A learned sink logit (gpt-oss style) is one extra score with no value vector: it joins the
denominator l with the same rescaling and adds nothing to acc.
"""
from dataclasses import dataclass

import numpy as np

from . import _validate as check

__all__ = [
    "SoftmaxStep", "AttentionStep", "two_pass_softmax", "online_softmax", "online_softmax_trace",
    "online_attention_row", "online_attention_trace", "sink_share",
]


@dataclass(frozen=True)
class SoftmaxStep:
    """State after reading score number ``i``: the score x, the running max m and
    denominator l.

    ``rescale`` is the factor exp(m_old - m_new) this step multiplied the carried l by: 1.0
    when the max did not rise, None when nothing was carried yet (every earlier score -inf or
    none: l was 0, there was nothing to rescale)."""
    i: int
    x: float
    m: float
    l: float
    rescale: float = None


@dataclass(frozen=True)
class AttentionStep:
    """State after reading one key (``key`` its index, an int) or the learned sink (``key ==
    "sink"``): its ``score``, the running m and l, and ``acc``, a tuple of dv floats; ``rescale``
    as in ``SoftmaxStep``, the factor that multiplied the carried l and acc."""
    key: object
    score: float
    m: float
    l: float
    acc: tuple
    rescale: float = None


def _as_scores(x, name):
    """``x`` as float64 scores: 1-D, non-empty, real; -inf (a masked key) allowed, NaN and +inf
    not (they have no softmax), each reported with its first index."""
    x = check.array(name, x, kind="real", ndim=1, finite=False)
    if x.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of scores, got shape {x.shape}")
    x = x.astype(np.float64)
    for bad, what in ((np.isnan(x), "NaN"), (np.isposinf(x), "+inf")):
        if bad.any():
            raise ValueError(f"{name} must not contain NaN or +inf: it holds {what} at index "
                             f"{int(np.flatnonzero(bad)[0])} (-inf, a masked key, is allowed)")
    return x


def _as_values(values, n):
    """``values`` as a float64 (n, dv) array of finite numbers."""
    values = check.array("values", values, kind="real", ndim=2)
    if values.shape[0] != n or values.shape[1] == 0:
        raise ValueError(f"values must have shape (len(scores), dv) = ({n}, dv) with dv >= 1, "
                         f"got {values.shape}")
    return values.astype(np.float64)


def _check_sink(sink_logit):
    return None if sink_logit is None else check.real("sink_logit", sink_logit)


def _rescale(m_old, m_new):
    """exp(m_old - m_new), or None when nothing was carried (m_old = -inf, so l = 0 and acc = 0:
    no NaN from (-inf) - (-inf), and nothing to multiply)."""
    return None if m_old == -np.inf else float(np.exp(m_old - m_new))


def _carry(acc, l, alpha):
    """acc and l carried into a step: rescaled by alpha, or 0 when nothing was carried."""
    return (np.zeros_like(acc), 0.0) if alpha is None else (acc * alpha, l * alpha)


def _steps(x):
    """Yield (i, x_i, m, l, rescale) after each score: the one-pass recurrence itself."""
    m, l = -np.inf, 0.0  # nothing seen yet: the sum of no terms is 0 (and m = -inf is its max)
    for i, xi in enumerate(x):
        m_new = max(m, xi)
        if m_new == -np.inf:  # only -inf so far: exp(-inf) terms contribute nothing
            yield i, xi, m, l, None
            continue
        alpha = _rescale(m, m_new)
        l = (0.0 if alpha is None else l * alpha) + float(np.exp(xi - m_new))
        m = m_new
        yield i, xi, m, l, alpha


def two_pass_softmax(x):
    """Reference: pass 1 finds the max, pass 2 sums exp(x - max). ``x`` is 1-D; float64 (n,).

    Raises ValueError when every entry is -inf (and, as ``online_softmax``, for an empty ``x``,
    NaN or +inf)."""
    x = _as_scores(x, "x")
    m = x.max()
    if m == -np.inf:
        raise ValueError("x: every entry is -inf, softmax is undefined")
    e = np.exp(x - m)
    return e / e.sum()


def online_softmax(x):
    """Softmax of the 1-D scores ``x`` in one pass (running max m, running sum l): float64 (n,).

    Equal to the two-pass softmax, also for -inf entries (probability 0) and huge magnitudes.
    Raises ValueError when x is empty, holds NaN or +inf, or is all -inf.
    """
    x = _as_scores(x, "x")
    for _, _, m, l, _ in _steps(x):
        pass
    if m == -np.inf:
        raise ValueError("x: every entry is -inf, softmax is undefined")
    return np.exp(x - m) / l


def online_softmax_trace(x):
    """The one-pass recurrence step by step: a list of SoftmaxStep (notebook 02's step table)."""
    x = _as_scores(x, "x")
    return [SoftmaxStep(i, float(xi), float(m), float(l), alpha)
            for i, xi, m, l, alpha in _steps(x)]


def online_attention_trace(scores, values, sink_logit=None):
    """State (m, l, acc) after each key, then after the sink if given (notebook 02's key table).

    ``scores`` (n,) are q . k_j * scale; ``values`` (n, dv) finite, dv >= 1. A list of
    AttentionStep, one per key, then one for the sink when ``sink_logit`` (a finite real) is
    given. The output is acc / l of the last step.

    Raises ValueError when ``values`` is not (n, dv) with dv >= 1, when every score is -inf and
    there is no sink, and when the values overflow acc.
    """
    scores = _as_scores(scores, "scores")
    values = _as_values(values, scores.shape[0])
    sink = _check_sink(sink_logit)
    m, l = -np.inf, 0.0
    acc = np.zeros(values.shape[1])  # (dv,) weighted sum of values, relative to m
    trace = []
    with np.errstate(over="ignore", invalid="ignore"):  # overflow: named below
        for j, (x, v) in enumerate(zip(scores, values)):
            m_new, alpha = max(m, x), None
            if m_new > -np.inf:  # a key hidden by -inf adds nothing (no -inf - -inf)
                alpha, w = _rescale(m, m_new), float(np.exp(x - m_new))
                acc, l = _carry(acc, l, alpha)
                acc = acc + w * v
                l = l + w
                m = m_new
            trace.append(AttentionStep(j, float(x), float(m), float(l), tuple(acc), alpha))
        if sink is not None:  # one more score in the denominator, no value vector
            m_new = max(m, sink)
            alpha = _rescale(m, m_new)
            acc, l = _carry(acc, l, alpha)
            l = l + float(np.exp(sink - m_new))
            m = m_new
            trace.append(AttentionStep("sink", sink, float(m), float(l), tuple(acc), alpha))
    if l == 0.0:
        raise ValueError("scores: every entry is -inf and there is no sink, the row is undefined")
    if not np.isfinite(acc).all():
        raise ValueError("values: finite values overflowed the weighted sum acc in float64 "
                         f"(max |v| = {np.abs(values).max():.3g}); scale the values down")
    return trace


def online_attention_row(scores, values, sink_logit=None):
    """Attention output for one query, reading one key at a time: acc / l at the end, float64
    (dv,).

    With ``sink_logit`` the denominator also holds exp(sink - m): the weights sum to less than 1.
    """
    last = online_attention_trace(scores, values, sink_logit)[-1]
    return np.asarray(last.acc) / last.l


def sink_share(scores, sink_logit):
    """The fraction of one query's attention weight that a learned sink takes: exp(z - m) / l,
    with m and l over the keys' ``scores`` and the sink logit z (the last step of
    ``online_attention_trace``): a float in (0, 1]. The keys' weights sum to 1 minus this.
    ``sink_logit`` is a finite real."""
    scores = _as_scores(scores, "scores")
    sink = check.real("sink_logit", sink_logit)
    last = online_attention_trace(scores, np.zeros((scores.shape[0], 1)), sink)[-1]
    return float(np.exp(sink - last.m)) / last.l
