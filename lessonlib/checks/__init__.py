"""Exercise checks: each returns a Verdict that says right, or what is wrong with a hint.

A notebook's exercise cell holds a stub the student fills and ends with a check call: a value
(``answer = None  # your code`` then ``checks.<topic>.<name>(answer)``), or for a function
exercise the function itself (``def update(m, l, x): return None  # your code`` then
``checks.attention.online_softmax_update(update)``). The committed notebook runs the check on
the unfilled stub, so it shows the deterministic "not attempted yet" message: ``None``, and a
function that still returns None (or raises NotImplementedError) for every input tried, are not
attempted. A Verdict displays itself (its ``repr`` is the message), so the cell prints nothing
by side effect.

Every check starts the same way, through one decorator (``checks._preamble.preamble``, built
on ``exercise`` below): None is "not attempted", an answer of the wrong kind (not a function, not
a dict) is "not yet" with a hint, a function still the stub is "not attempted".

Every check reads the student's answer in one way, the functions below; an answer they cannot
read is "not yet" with a hint saying what to give, never a traceback or a warning:

    number(answer)      one finite real number: a Python or numpy int or float, a Fraction, a
                        0-d numpy array or a 0-d tensor (anything of shape () with ``.item()``;
                        torch is never imported here), a complex number whose imaginary part is
                        0. Not a bool, a string ("128"), NaN or inf, a complex number with an
                        imaginary part, a list, a dict or a function.
    whole(answer)       a count or an index: a number as above that is a whole number. An
                        integral float (3.0, np.float32(3.0), or 3.0000000000000004 from float
                        round-off, within 1e-9 relative) is that integer: the check judges the
                        value found, and 3.0 is the right count. A float that is not whole
                        (0.25 from / where // was meant, 29.4 for a count) is "not yet" with a
                        hint about // and whole numbers; it is never truncated.
    items(answer)       a collection, read once: list, tuple, set, range, a numpy array or a
                        tensor (its rows), or an iterator (``map(...)``, a generator; at most
                        ``MAX_ITEMS`` elements). Not a string, a dict or a single number; a set
                        where order matters is refused.
    vector(answer)      numbers (each as ``number``) in any of those containers, flattened to a
                        float64 array; bools, strings, objects, complex numbers with an
                        imaginary part, NaN and inf are refused with the element that is.
    wholes(answer)      whole numbers (each as ``whole``) likewise, as a list of Python ints.
    call(fn, *args)     the student's function on deep copies of the arguments (a function
                        that writes into its input cannot corrupt the check's reference),
                        warnings and numpy floating-point errors silenced; an exception becomes
                        a hint, an iterator it returns is read once.

Tolerances: numbers typed by hand are compared by ``check_number`` at each check's own tolerance
(rounded answers pass). A warm-up whose prompt asks for ``SIGNIFICANT_DIGITS`` significant
digits passes ``digits=SIGNIFICANT_DIGITS``: the tolerance is then half a unit in that digit of
the expected value (``digits_tolerance``), so the right value rounded as asked passes, and one
rounded more coarsely is "close: give more digits". Values a student's function computes are
compared at ``FLOAT32_RTOL``, which a right update or rotation computed in float32 meets (a
few units of 2**-23 per step) and every typical slip misses by far (they are off by percents
or more). Counts and indices are exact. A number that is the expected value rounded to the
answer's own significant digits, but too coarse for the tolerance, is "close: give more
digits" (``rounded_hint`` says exactly when). A message that shows the student's number and
the expected one gives them with enough digits to differ (``distinct``); the student's own
number is shown as they gave it (``shown``).

Topic modules live beside this file (``checks.attention``, ``checks.rope``, ...); reference
solutions are kept for instructors in ``instructors/solutions/``, out of the students' way.
"""
import copy
import functools
import itertools
import math
import numbers
import warnings
from collections.abc import Iterator, Mapping, Set
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

__all__ = ["SIGNIFICANT_DIGITS", "digits_tolerance", "Verdict", "NOT_ATTEMPTED", "Unreadable",
           "exercise", "correct", "wrong",
           "not_attempted", "number", "whole", "items", "vector", "wholes", "call", "unfilled",
           "quiet", "shown", "distinct", "significant_digits", "close_to", "as_number",
           "format_value", "check_number", "rounded_hint", "FLOAT32_EPS", "FLOAT32_RTOL",
           "MAX_ITEMS"]

NOT_ATTEMPTED = "Not attempted yet: fill in the stub above and run this cell again."
"""The message of a check run on the unfilled stub (``not_attempted``)."""

SIGNIFICANT_DIGITS = 3  # what every numeric warm-up's prompt asks for ("3 significant digits")
"""3, the significant digits every numeric warm-up's prompt asks for."""
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2**-23, one unit in the last place at 1.0
"""float32's machine epsilon, 2**-23: one unit in the last place at 1.0."""
FLOAT32_RTOL = 1e-5  # about 80 float32 units: float32 arithmetic passes, a typical slip does not
"""1e-5, about 80 float32 units: float32 arithmetic passes, a typical slip does not."""
MAX_ITEMS = 100_000  # an iterator longer than this is refused, not read forever
"""100,000: an iterator longer than this is refused, not read forever."""
_WHOLE_RTOL = 1e-9  # float round-off in a right count: 3.0000000000000004 is 3


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
    """A passing ``Verdict`` for check ``name`` (``ok`` True), with its message."""
    return Verdict(name, True, message)


def wrong(name, message):
    """A failing ``Verdict`` for check ``name`` (``ok`` False): ``message`` says what is wrong
    and hints."""
    return Verdict(name, False, message)


def not_attempted(name):
    """The ``Verdict`` of an exercise left at its stub (``answer = None``): neither right nor
    wrong (``ok`` None), with the ``NOT_ATTEMPTED`` message."""
    return Verdict(name, None, NOT_ATTEMPTED)


class Unreadable(ValueError):
    """An answer in a form a check cannot read; the message is the hint the student sees."""


def exercise(check):
    """Decorate a check ``check(answer) -> Verdict``: None is "not attempted", an answer the
    coercions below refuse (``Unreadable``) is "not yet" with their hint, and numpy's
    floating-point errors on a student's values (an overflow, inf - inf) stay silent whatever
    the caller's ``np.errstate``."""
    name = check.__name__

    @functools.wraps(check)
    def run(answer):
        if answer is None:
            return not_attempted(name)
        try:
            with np.errstate(all="ignore"):
                return check(answer)
        except Unreadable as why:
            return wrong(name, str(why))
    return run


# ------------------------------------------------------------------ showing values

def _short(value, limit=60):
    """repr(value), shortened; never raises (a student's object may have a broken repr)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 -- any object a student passes
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape(value):
    try:
        return getattr(value, "shape", None)
    except Exception:  # noqa: BLE001 -- a student's object with a broken property
        return None


def _clip(text, limit=200):
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _kind(value):
    shape = _shape(value)
    if isinstance(shape, tuple) or type(shape).__name__ == "Size":
        return f"a {type(value).__name__} of shape {tuple(shape)}"
    if callable(value):
        return "a function"
    return f"of type {type(value).__name__}"


def _own_precision(value):
    """``value`` as the narrowest float that holds it exactly (float32 or float64), so that
    its shortest decimal is the one the student saw."""
    if isinstance(value, (np.float16, np.float32)):
        return value
    x = float(value)
    with np.errstate(all="ignore"):
        narrow = np.float32(x)
    return narrow if math.isfinite(x) and float(narrow) == x else np.float64(x)


def shown(value):
    """A number as the student gave it: the shortest decimal that reads back as the same value
    in its own precision, with commas in the integer part (``4,134,231.5``, ``0.0092``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{int(value):,}"
    x = float(value)
    if not math.isfinite(x):
        return repr(x)
    if x == int(x) and abs(x) < 1e16:
        return f"{int(x):,}"
    if not 1e-4 <= abs(x) < 1e16:
        return np.format_float_scientific(_own_precision(value), unique=True, trim="-")
    text = np.format_float_positional(_own_precision(value), unique=True, trim="-")
    sign, text = ("-", text[1:]) if text.startswith("-") else ("", text)
    head, _, tail = text.partition(".")
    return f"{sign}{int(head):,}" + (f".{tail}" if tail else "")


def distinct(a, b, digits=6):
    """``a`` and ``b`` formatted with the fewest significant digits (at least ``digits``) at
    which they visibly differ, so a mismatch never reads as two equal numbers."""
    a, b = float(a), float(b)
    for k in range(digits, 18):
        sa, sb = f"{a:.{k}g}", f"{b:.{k}g}"
        if sa != sb:
            return sa, sb
    return f"{a:.{digits}g}", f"{b:.{digits}g}"  # equal: shown alike


def format_value(value, unit="", fmt=None):
    """``value`` for a message: a format spec, or whole numbers with commas, else 4 digits."""
    if fmt is None:
        whole_ = (value == int(value) and abs(value) >= 1) or abs(value) >= 1000
        fmt = ",.0f" if whole_ else ",.4g"
    text = f"{value:{fmt}}"
    return f"{text} {unit}" if unit else text


# ------------------------------------------------------------------ reading an answer

def _scalar(value):
    """A 0-d numpy array, numpy scalar or 0-d tensor as the Python number it holds (float32
    kept as np.float32, so its digits stay its own); anything else unchanged."""
    if isinstance(value, (str, bytes)) or _shape(value) != () or not hasattr(value, "item"):
        return value
    try:
        item = value.item()
    except Exception:  # noqa: BLE001 -- a student's object
        return value
    if isinstance(item, float) and str(getattr(value, "dtype", "")).endswith("float32"):
        return np.float32(item)
    return item


def _ask(what, unit=""):
    return f"Give {what}" + (f" (in {unit})" if unit else "")


class _Why(Exception):
    """Why one value is not what was asked: a fragment such as "the string '3': ..."."""


def _real(answer, finite=True):
    """``answer`` as a float (finite unless ``finite`` is False), else _Why (the rules are in
    the module docstring)."""
    v = _scalar(answer)
    if v is None:
        raise _Why("None.")
    if isinstance(v, (bool, np.bool_)):
        raise _Why(f"{v!r}: True and False are not numbers here.")
    if isinstance(v, (str, bytes)):
        raise _Why(f"the string {_short(v)}: write the number itself, without quotes.")
    if isinstance(v, (complex, np.complexfloating)):
        if v.imag != 0:
            raise _Why(f"the complex number {_short(v)}: the answer is real (a square root or "
                       f"a fractional power of a negative number?).")
        v = v.real
    if isinstance(v, numbers.Number):
        try:
            x = float(v)
        except (OverflowError, ValueError, TypeError):
            raise _Why(f"{_short(v)}, which is not a finite float.") from None
        if finite and not math.isfinite(x):
            raise _Why(f"{x!r}: NaN and inf come from 0/0, log(0) or an overflow; check the "
                       f"formula.")
        return x
    if callable(v):
        raise _Why("a function: call it and give its result.")
    if isinstance(v, Mapping):
        raise _Why("a dict.")
    if hasattr(v, "__iter__") or hasattr(v, "__len__"):
        raise _Why(f"{_short(v)} ({_kind(v)}): give the one number itself.")
    raise _Why(f"{_short(v)} ({_kind(v)}).")


def _nearest_whole(x):
    """The integer a finite float is (within float round-off), else None."""
    w = round(x)
    return int(w) if abs(x - w) <= _WHOLE_RTOL * max(1.0, abs(x)) else None


_SLASH = "; a count or an index is whole: if it came from /, use // (floor division) or math.ceil"


def _integer(answer, slip):
    v = _scalar(answer)
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    x = _real(answer)
    w = _nearest_whole(x)
    if w is None:
        raise _Why(f"{shown(x)}, which is not a whole number{slip}.")
    return w


def number(answer, *, what="one finite number", unit=""):
    """``answer`` as a finite float (the rules are in this module's docstring), else
    ``Unreadable`` with a hint that starts "Give <what>"."""
    try:
        return _real(answer)
    except _Why as why:
        raise Unreadable(f"{_ask(what, unit)}, got {why}") from None


def whole(answer, *, what="one whole number", unit="", slip=_SLASH):
    """``answer`` as an ``int``: an integer, or a number that is whole (module docstring);
    a float that is not whole is ``Unreadable`` with ``slip`` appended to the hint."""
    try:
        return _integer(answer, slip)
    except _Why as why:
        raise Unreadable(f"{_ask(what, unit)}, got {why}") from None


def _array(value):
    """A numpy array or a tensor (duck-typed: ``detach``, ``cpu`` and ``shape``) as a numpy
    array, else None. Nothing is written into the student's array."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach") and hasattr(value, "cpu") and _shape(value) is not None:
        try:
            t = value.detach().cpu()
            try:
                return t.numpy()
            except (TypeError, RuntimeError):  # bfloat16 and friends
                return t.double().numpy()
        except Exception:  # noqa: BLE001
            return None
    return None


def items(answer, *, what="a list of values", ordered=False):
    """``answer``'s elements as a list, read once (module docstring), else ``Unreadable``."""
    ask = _ask(what)
    if isinstance(answer, (str, bytes)):
        raise Unreadable(f"{ask}, got the string {_short(answer)}: write the values "
                         f"themselves, without quotes.")
    if isinstance(answer, Mapping):
        raise Unreadable(f"{ask}, got a dict.")
    if ordered and isinstance(answer, Set):
        raise Unreadable(f"{ask}: a set has no order, give a list.")
    arr = _array(answer)
    if arr is not None:
        if arr.ndim == 0:
            raise Unreadable(f"{ask}, got one number ({_short(answer)}).")
        return list(arr)
    if callable(answer) and not hasattr(answer, "__iter__"):
        raise Unreadable(f"{ask}, got a function: call it and give its result.")
    try:
        it = iter(answer)
    except Exception:  # noqa: BLE001 -- not iterable (or a broken __iter__)
        if isinstance(_scalar(answer), numbers.Number):
            raise Unreadable(f"{ask}, got one number ({_short(answer)}).") from None
        raise Unreadable(f"{ask}, got {_short(answer)} ({_kind(answer)}).") from None
    try:
        with quiet():
            listed = list(itertools.islice(it, MAX_ITEMS + 1))
    except Exception as err:  # noqa: BLE001 -- a student's generator
        raise Unreadable(f"{ask}; reading the answer raised {type(err).__name__}: "
                         f"{_clip(err)}") from None
    if len(listed) > MAX_ITEMS:
        raise Unreadable(f"{ask}, got more than {MAX_ITEMS:,} values.")
    return listed


def _is_row(x):
    arr = _array(x)
    return (arr is not None and arr.ndim > 0) or isinstance(x, (list, tuple))


def _flat(answer, what, ordered):
    """(flat list of scalars, shape) of a rectangular collection, else Unreadable."""
    arr = _array(answer)
    if arr is not None:
        if arr.ndim == 0:
            raise Unreadable(f"{_ask(what)}, got one number ({_short(answer)}).")
        if arr.dtype.kind == "b":
            raise Unreadable(f"{_ask(what)}, got an array of True/False values.")
        if arr.dtype.kind in "US":
            raise Unreadable(f"{_ask(what)}, got an array of strings: write the numbers "
                             f"themselves.")
        return list(arr.reshape(-1)), arr.shape
    rows = items(answer, what=what, ordered=ordered)
    if rows and any(_is_row(r) for r in rows):
        if not all(_is_row(r) for r in rows):
            raise Unreadable(f"{_ask(what)}: it mixes numbers and lists.")
        parts = [_flat(r, what, True) for r in rows]
        shapes = {s for _, s in parts}
        if len(shapes) > 1:
            raise Unreadable(f"{_ask(what)}: its rows have different lengths.")
        return [x for p, _ in parts for x in p], (len(rows),) + shapes.pop()
    return rows, (len(rows),)


def _each(read, flat, what):
    out = []
    for i, x in enumerate(flat):
        try:
            out.append(read(x))
        except _Why as why:
            raise Unreadable(f"{_ask(what)}; element {i} is {why}") from None
    return out


def _numbers(answer, what, ordered, finite=True):
    """(flat float64 array, shape) of ``answer``'s numbers, else Unreadable."""
    arr = _array(answer)
    if arr is not None and arr.ndim > 0 and arr.dtype.kind in "iuf":
        out = np.array(arr, dtype=np.float64).reshape(-1)
        bad = np.flatnonzero(~np.isfinite(out)) if finite else []
        if len(bad):
            raise Unreadable(f"{_ask(what)}; element {int(bad[0])} is {out[bad[0]]!r}: NaN and "
                             f"inf come from 0/0, log(0) or an overflow.")
        return out, arr.shape
    flat, shape = _flat(answer, what, ordered)
    return np.array(_each(lambda x: _real(x, finite), flat, what), dtype=np.float64), shape


def vector(answer, *, what="an array of numbers", size=None, ordered=True, finite=True,
           flatten=True):
    """``answer``'s numbers as a flat float64 array (module docstring), else ``Unreadable``.
    ``size``: the number of values expected (the hint says how many came). ``finite=False``
    lets NaN and inf through (a student function's result, judged by the check).
    ``flatten=False`` keeps the answer's shape (a list of lists is 2-D)."""
    out, shape = _numbers(answer, what, ordered, finite)
    if size is not None and out.size != size:
        raise Unreadable(f"{_ask(what)}: {size} values, got {out.size}.")
    return out if flatten else out.reshape(shape)


def wholes(answer, *, what="a list of whole numbers", ordered=True, slip=_SLASH):
    """``answer``'s whole numbers as a flat list of ints (module docstring), else
    ``Unreadable`` naming the first element that is not one (``slip`` appended)."""
    flat, _ = _flat(answer, what, ordered)
    return _each(lambda x: _integer(x, slip), flat, what)


# ------------------------------------------------------------------ running student code

@contextmanager
def quiet():
    """Warnings and numpy floating-point errors silenced (a student's code, or reading it)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _run(fn, args):
    """fn(*deep copies of args), quietly, an iterator result read once: (result, exception)."""
    try:
        args = copy.deepcopy(args)
    except Exception:  # noqa: BLE001 -- the check's own arguments always copy
        args = tuple(args)
    try:
        with quiet():
            result = fn(*args)
            if isinstance(result, Iterator):  # map(...), zip(...), a generator: read it once
                result = tuple(itertools.islice(result, MAX_ITEMS + 1))
        return result, None
    except Exception as err:  # noqa: BLE001 -- a student's bug: a hint, not a traceback
        return None, err


def call(fn, *args, overflow=None, label="Calling it"):
    """Run the student's function on copies of ``args``: (result, None), or (None, a hint
    "<label> raised <error>"; ``overflow`` replaces the hint for an OverflowError)."""
    result, err = _run(fn, args)
    if err is None:
        return result, None
    if isinstance(err, OverflowError) and overflow:
        return None, overflow
    return None, f"{label} raised {type(err).__name__}: {_clip(err)}"


def unfilled(fn, probes):
    """True while ``fn`` is still the notebook's stub: for every argument tuple in ``probes``
    it returns None or raises NotImplementedError (it stops at the first call that does not)."""
    for args in probes:
        result, err = _run(fn, args)
        if err is not None and not isinstance(err, NotImplementedError):
            return False
        if err is None and result is not None:
            return False
    return True


# ------------------------------------------------------------------ comparing numbers

def close_to(answer, expected, *, rtol=FLOAT32_RTOL, atol=0.0):
    """True when ``answer`` reads as numbers (``vector`` or ``number``) of ``expected``'s shape
    and matches it within tolerance; False for anything else (strings and bools included)."""
    e = np.asarray(expected, dtype=np.float64)
    try:
        if e.ndim == 0:
            a = np.asarray(_real(answer, finite=False), dtype=np.float64)
        else:
            flat, shape = _numbers(answer, "numbers", False, finite=False)
            a = flat.reshape(shape)
    except (Unreadable, _Why):
        return False
    return a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=False))


def as_number(answer):
    """``answer`` as a finite float when it is one number (``number``'s rules), else None."""
    try:
        return number(answer)
    except Unreadable:
        return None


def significant_digits(answer):
    """How many significant digits ``answer`` was given with: those of the shortest decimal
    that reads back as it in its own precision, leading and trailing zeros not counted
    (0.0090 is 0.009: one digit; 4,100,000 has two). None for 0 or a non-number."""
    try:
        x = _real(answer)
    except _Why:
        return None
    v = _scalar(answer)
    if isinstance(v, (complex, np.complexfloating)):
        v = v.real
    if isinstance(v, (int, np.integer)):
        text = str(abs(int(v))).rstrip("0")
        return len(text) or None
    if x == 0:
        return None
    if not isinstance(v, (np.float16, np.float32)):
        v = x
    mantissa = np.format_float_scientific(_own_precision(v), unique=True, trim="-")
    digits = mantissa.split("e")[0].lstrip("-").replace(".", "").strip("0")
    return max(len(digits), 1)


def _round_sig(x, k):
    return float(f"{x:.{k - 1}e}")


def rounded_hint(answer, value, expected, candidates, near):
    """The "close: give more digits" hint, or None. It is given when the answer, not within
    tolerance (``near(value, expected)`` is False), is exactly ``expected`` rounded to the
    answer's own k significant digits, and those digits resolve it to 1 part in 10 (half a unit
    in the last digit at most 10% of the value: two digits or more, or one digit of 5 to 9), so
    that 2 for 1.81 or 1 for 1.3, as likely some other wrong value, is not called close. When
    a typical mistake (``candidates``) also rounds to the answer, the hint says so."""
    k = significant_digits(answer)
    if k is None or k > 15 or value == 0:
        return None
    if f"{value:.{k - 1}e}" != f"{expected:.{k - 1}e}":
        return None
    last = 10.0 ** (math.floor(math.log10(abs(value))) - k + 1)  # one unit in the last digit
    if 0.5 * last > 0.1 * abs(value):
        return None
    needed = next((j for j in range(k + 1, 18) if near(_round_sig(expected, j), expected)), 17)
    plural = "s" if k > 1 else ""
    also = any(math.isfinite(c) and f"{c:.{k - 1}e}" == f"{value:.{k - 1}e}"
               for c in candidates)
    if also:
        return (f"Close: that is the right value rounded to {k} significant digit{plural}, but "
                f"so is a typical slip; give more digits (at least {needed}).")
    return (f"Close: that is the right value rounded to {k} significant digit{plural}; give "
            f"more digits (at least {needed}).")


def digits_tolerance(expected, digits):
    """Half a unit in the ``digits``-th significant digit of ``expected`` (a hair more, for
    binary round-off): how far ``expected`` rounded to that many digits may lie from it.
    0.63212 at 3 digits: 0.0005, so 0.632 passes and 0.63 does not."""
    if expected == 0:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(expected))) - digits + 1) * (1 + 1e-9)


def check_number(name, answer, expected, mistakes, *, unit="", rtol=2e-3, atol=0.0, fmt=None,
                 generic="", integer=False, right=None, digits=None):
    """A numeric exercise: correct within tolerance; else the hint of the first typical mistake
    it matches; else "close: give more digits" (``rounded_hint``); else a generic nudge.
    ``mistakes`` lists (value that mistake gives, hint). ``integer``: the answer is a count,
    compared exactly (``whole``'s rules; a typical mistake within float round-off), never
    "close"; a float that is not whole gets the // hint. ``digits``: the prompt asks for that
    many significant digits, and the tolerance is ``digits_tolerance`` (``rtol`` and ``atol``
    unused). ``right``: the correct message."""
    if digits is not None:
        rtol, atol = 0.0, digits_tolerance(expected, digits)
    if answer is None:
        return not_attempted(name)
    what = "one whole number" if integer else "one finite number"
    try:
        value = number(answer, what=what, unit=unit)
    except Unreadable as why:
        return wrong(name, str(why))
    if integer:
        w = _nearest_whole(value)
        ok = w is not None and w == expected

        def near(a, b):
            return math.isclose(a, b, rel_tol=_WHOLE_RTOL)
    else:
        def near(a, b):
            return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
        ok = near(value, expected)
    if ok:
        return correct(name, right or f"Correct: {format_value(expected, unit, fmt)}.")
    for candidate, hint in mistakes:
        if near(value, candidate):
            return wrong(name, hint)
    if integer and w is None:
        return wrong(name, f"{_ask(what, unit)}, got {shown(value)}, which is not a whole "
                           f"number{_SLASH}.")
    if not integer:
        hint = rounded_hint(answer, value, expected, [c for c, _ in mistakes], near)
        if hint:
            return wrong(name, hint)
    text = shown(w if integer else value) + (f" {unit}" if unit else "")
    return wrong(name, f"Not {text}. {generic}".strip())



# The topic modules, imported here (after the helpers above, which they import) so that
# dir(checks), completion and static tools see them: checks.attention, checks.rope, ...
from . import (attention, kv_cache, long_context, paged, rope, tinylm, triton,  # noqa: E402,F401
               windows)
