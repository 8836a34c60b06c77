"""Reference solutions for notebooks/02_online_softmax.ipynb (for instructors, not students).

Exercises 1 and 3 are functions: the notebook's cell passes the function itself to its check
(``checks.attention.online_softmax_update(update)``); the stub, which returns None, is "not
attempted". A version computed in float32 (numpy or torch) is accepted too. Exercise 1 is on the
core path; exercise 3 (the value accumulator) is in the going-deeper section.

Both updates must survive a masked key (score -inf) while every key so far is masked: then
m_new = max(-inf, -inf) = -inf and exp(m - m_new) = exp(-inf - (-inf)) = exp(NaN), so the step
returns the state unchanged (the masked key's term exp(-inf) is 0 anyway).
"""
import math

import numpy as np


def online_softmax_update(m, l, x):
    """Exercise 1: one step of the one-pass softmax; start from m = -inf, l = 0."""
    m_new = max(m, x)
    if m_new == -math.inf:  # only masked keys so far: nothing to add, and -inf - -inf is NaN
        return m_new, l
    l_new = l * math.exp(m - m_new) + math.exp(x - m_new)  # rescale the old sum, add the new term
    return m_new, l_new


# Exercise 2: a learned sink of logit z = 7 after the notebook's six scores. The sink is the new
# max: l = 1.582426 (relative to 5) is rescaled by exp(5 - 7), then exp(7 - 7) = 1 is added.
_l_keys = sum(math.exp(x - 5.0) for x in (1.0, 3.0, 2.0, 5.0, 0.5, 4.0))
sink_share = 1.0 / (_l_keys * math.exp(5.0 - 7.0) + 1.0)   # about 0.8236


def attention_update(m, l, acc, x, v):
    """Exercise 3: the same step with the value accumulator acc (divide by l only at the end)."""
    m_new = max(m, x)
    if m_new == -math.inf:  # only masked keys so far: the state stays (m, l, acc) = (-inf, 0, 0)
        return m_new, l, np.asarray(acc)
    alpha, w = math.exp(m - m_new), math.exp(x - m_new)
    return m_new, l * alpha + w, np.asarray(acc) * alpha + w * np.asarray(v)
