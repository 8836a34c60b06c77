"""Exercise checks: each returns a Verdict that says right, or what is wrong with a hint.

A notebook's exercise cell holds a stub the student fills (``answer = None  # your code``) and
ends with ``checks.<topic>.<name>(answer)``. The committed notebook runs the check on the
unfilled stub, so it shows the deterministic "not attempted yet" message. A Verdict displays
itself (its ``repr`` is the message), so the cell prints nothing by side effect.

Topic modules live beside this file (``checks.attention``, ``checks.rope``, ...); reference
solutions are kept for instructors in ``instructors/solutions/``, out of the students' way.
"""
import math
from dataclasses import dataclass
from numbers import Number

import numpy as np

from .._lazy import topic_modules

__all__ = ["Verdict", "NOT_ATTEMPTED", "correct", "wrong", "not_attempted", "close_to", "as_number",
           "format_value", "check_number"]

NOT_ATTEMPTED = "Not attempted yet: fill in the stub above and run this cell again."


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: ``ok`` (True/False, None when not attempted) and a message."""
    name: str
    ok: object
    message: str

    def __bool__(self):
        return self.ok is True

    def __repr__(self):
        mark = {True: "correct", False: "not yet", None: "not attempted"}[self.ok]
        return f"[{self.name}: {mark}] {self.message}"

    __str__ = __repr__


def correct(name, message="Correct."):
    return Verdict(name, True, message)


def wrong(name, message):
    return Verdict(name, False, message)


def not_attempted(name):
    return Verdict(name, None, NOT_ATTEMPTED)


def close_to(answer, expected, *, rtol=1e-6, atol=0.0):
    """True when ``answer`` has ``expected``'s shape and matches it within tolerance."""
    try:
        a = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    e = np.asarray(expected, dtype=np.float64)
    return a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=False))


def as_number(answer):
    """``answer`` as a finite float when it is one number (not a bool), else None."""
    if isinstance(answer, np.ndarray) and answer.ndim == 0:  # e.g. the result of np.sum
        answer = answer.item()
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (Number, np.number)):
        return None
    value = float(answer)
    return value if math.isfinite(value) else None


def format_value(value, unit="", fmt=None):
    """``value`` for a message: a format spec, or whole numbers with commas, else 4 digits."""
    if fmt is None:
        whole = (value == int(value) and abs(value) >= 1) or abs(value) >= 1000
        fmt = ",.0f" if whole else ",.4g"
    text = f"{value:{fmt}}"
    return f"{text} {unit}" if unit else text


def check_number(name, answer, expected, mistakes, *, unit="", rtol=2e-3, atol=0.0, fmt=None,
                 generic=""):
    """A numeric exercise: correct within tolerance; else the hint of the first typical mistake
    it matches; else a generic nudge. ``mistakes`` lists (value that mistake gives, hint)."""
    if answer is None:
        return not_attempted(name)
    value = as_number(answer)
    if value is None:
        return wrong(name, f"Give one finite number{f' (in {unit})' if unit else ''}, "
                           f"got {answer!r}.")
    if math.isclose(value, expected, rel_tol=rtol, abs_tol=atol):
        return correct(name, f"Correct: {format_value(expected, unit, fmt)}.")
    for candidate, hint in mistakes:
        if math.isclose(value, candidate, rel_tol=rtol, abs_tol=atol):
            return wrong(name, hint)
    return wrong(name, f"Not {format_value(value, unit, fmt)}. {generic}".strip())


__getattr__ = topic_modules(__name__)  # checks.<topic>: imported on first use
