"""Reference solutions for notebooks/02_online_softmax.ipynb (for instructors, not students).

Exercises 1 and 2 are functions: the notebook's cell passes the function itself to its check
(``checks.attention.online_softmax_update(update)``); the stub, which returns None, is "not
attempted". A version computed in float32 (numpy or torch) is accepted too.

Both updates must survive a masked key (score -inf) while every key so far is masked: then
m_new = max(-inf, -inf) = -inf and exp(m - m_new) = exp(-inf - (-inf)) = exp(NaN), so the step
returns the state unchanged (the masked key's term exp(-inf) is 0 anyway).
"""
import math

import numpy as np


def online_softmax_update(m, s, x):
    """Exercise 1: one step of the one-pass softmax; start from m = -inf, s = 0."""
    m_new = max(m, x)
    if m_new == -math.inf:  # only masked keys so far: nothing to add, and -inf - -inf is NaN
        return m_new, s
    s_new = s * math.exp(m - m_new) + math.exp(x - m_new)  # rescale the old sum, add the new term
    return m_new, s_new


def attention_update(m, s, acc, x, v):
    """Exercise 2: the same step with the value accumulator acc (divide by s only at the end)."""
    m_new = max(m, x)
    if m_new == -math.inf:  # only masked keys so far: the state stays (m, s, acc) = (-inf, 0, 0)
        return m_new, s, np.asarray(acc)
    alpha, w = math.exp(m - m_new), math.exp(x - m_new)
    return m_new, s * alpha + w, np.asarray(acc) * alpha + w * np.asarray(v)


# Exercise 3: a learned sink of logit 6 after the notebook's six scores. The sink is the new max:
# s = 1.582426 (relative to 5) is rescaled by exp(5 - 6), then exp(6 - 6) = 1 is added.
_s_keys = sum(math.exp(x - 5.0) for x in (1.0, 3.0, 2.0, 5.0, 0.5, 4.0))
sink_share = 1.0 / (_s_keys * math.exp(5.0 - 6.0) + 1.0)   # about 0.6321
