"""One validation vocabulary for every public function: fail loud, and name the argument.

Each function takes the argument's name first (or a config key's dotted path, such as
``rope_scaling.factor``), returns the value in its plain Python or numpy form, and raises
``ValueError`` whose message begins with that name, says what was expected and shows what came::

    integer(name, v, minimum=, maximum=)    an int: Python, numpy, or a 0-d integer array/tensor;
                                            never a bool, never a float (not even 2.0)
    real(name, v, minimum=, above=, maximum=, below=)
                                            a finite real number (ints, floats, numpy, 0-d
                                            arrays/tensors); never a bool, a complex, a string
    flag(name, v)                           True or False (Python or numpy bool); never "no",
                                            "false", 0, 1 or None
    choice(name, v, choices)                one of a fixed set, compared exactly (no "NEOX")
    array(name, a, kind=, ndim=, finite=)   a rectangular numeric array: floating, real or
                                            integer; NaN and inf reported with the first index
    known_keys(where, mapping, allowed)     every key is one the reader uses; a near miss is
                                            named ("did you mean 'factor'?")
    text(name, v), function(name, f)        a str; a callable

None is never a valid value here: a caller whose argument may be None tests for it first
(``None if window is None else integer("window", window, minimum=1)``).
Nothing here copies or writes into the caller's arrays.
"""
import difflib
import math
import operator

import numpy as np

__all__ = ["integer", "real", "flag", "choice", "array", "known_keys", "text", "function",
           "describe", "describe_bytes", "int_at_least", "positive_int", "non_negative_int"]


def describe(value, limit=60):
    """``value`` for a message: its repr (shortened) and its type, e.g. ``'no' (a str)``."""
    shown = _short(value, limit)
    kind = type(value).__name__
    ndim = getattr(value, "ndim", 0)
    if isinstance(ndim, int) and ndim > 0:  # an array (np.float16, the type, has a descriptor)
        kind = f"{kind} of shape {tuple(value.shape)}, dtype {value.dtype}"
    return f"{shown} (a {kind})"


def _short(value, limit=60):
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _scalar(value):
    """A 0-d numpy array, numpy scalar or 0-d tensor as the Python number it holds; anything
    else unchanged (torch's bool tensor becomes a bool, so it is refused as one)."""
    if getattr(value, "shape", None) == () and hasattr(value, "item") \
            and not isinstance(value, (str, bytes)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def _bounds(minimum=None, above=None, maximum=None, below=None):
    parts = []
    if minimum is not None:
        parts.append(f">= {minimum}")
    if above is not None:
        parts.append(f"> {above}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    if below is not None:
        parts.append(f"< {below}")
    return " and ".join(parts)


def _check_bounds(name, what, x, value, minimum, above, maximum, below):
    if (minimum is not None and x < minimum) or (above is not None and x <= above) \
            or (maximum is not None and x > maximum) or (below is not None and x >= below):
        raise ValueError(f"{name} must be {what} {_bounds(minimum, above, maximum, below)}, "
                         f"got {_short(value)}")


def integer(name, value, *, minimum=None, maximum=None):
    """``value`` as an ``int``: an integer that is not a bool and not a float (2.0 included: a
    count or an index written as a float usually comes from ``/`` where ``//`` was meant)."""
    v = _scalar(value)
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got {describe(value)}")
    if isinstance(v, (float, np.floating)):
        hint = " (use // for whole-number division)" if math.isfinite(v) and v == int(v) else ""
        raise ValueError(f"{name} must be an integer, got the float {value!r}{hint}")
    try:
        x = operator.index(v)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {describe(value)}") from None
    _check_bounds(name, "an integer", x, value, minimum, None, maximum, None)
    return x


def real(name, value, *, minimum=None, above=None, maximum=None, below=None):
    """``value`` as a finite ``float``: an int or float (Python or numpy, or a 0-d array or
    tensor), not a bool, a complex number, a string or None."""
    v = _scalar(value)
    if isinstance(v, (bool, np.bool_)) or isinstance(v, (complex, np.complexfloating)) \
            or not isinstance(v, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {describe(value)}")
    try:
        x = float(v)
    except OverflowError:  # an int past float's range, such as 10**400
        x = math.inf
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {_short(value)}")
    _check_bounds(name, "a number", x, value, minimum, above, maximum, below)
    return x


def flag(name, value):
    """``value`` as a ``bool``: True or False only. A string ("no", "false", "off") or a number
    would be read by ``if`` as its truth value, silently the opposite of what was meant."""
    v = _scalar(value)
    if not isinstance(v, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {describe(value)}")
    return bool(v)


def choice(name, value, choices):
    """``value`` when it is exactly one of ``choices`` (same type: "neox", not "NEOX" or 1)."""
    choices = tuple(choices)
    if not any(type(value) is type(c) and value == c for c in choices):
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {describe(value)}")
    return value


_KINDS = {
    "float": ("floating-point numbers", lambda dt: np.issubdtype(dt, np.floating)),
    "real": ("real numbers", lambda dt: np.issubdtype(dt, np.integer)
             or np.issubdtype(dt, np.floating)),
    "int": ("integers", lambda dt: np.issubdtype(dt, np.integer)),
}


def array(name, a, *, kind="real", ndim=None, finite=True):
    """``a`` as a numpy array (no copy when it already is one) of the given ``kind``:
    ``"float"`` (floating dtypes), ``"real"`` (integers or floats) or ``"int"``. Never bools,
    complex numbers, strings or objects. ``ndim`` is an int or a tuple of allowed ranks.
    With ``finite`` (the default) NaN or inf is an error naming the count and the first index.
    """
    if isinstance(a, (str, bytes)) or a is None:
        raise ValueError(f"{name} must be an array of numbers, got {describe(a)}")
    try:
        out = np.asarray(a)
    except (TypeError, ValueError, RuntimeError) as err:  # ragged lists, GPU tensors
        raise ValueError(f"{name} must be a rectangular array of numbers: {err}") from None
    what, ok = _KINDS[kind]
    if out.dtype == np.bool_ or not ok(out.dtype):
        raise ValueError(f"{name} must hold {what}, got dtype {out.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if out.ndim not in allowed:
            ranks = " or ".join(f"{r}-D" for r in allowed)
            raise ValueError(f"{name} must be {ranks}, got shape {out.shape}")
    if finite and kind != "int" and out.size and not np.isfinite(out).all():
        bad = ~np.isfinite(out)
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} holds non-finite values ({int(bad.sum())} of {out.size}; the "
                         f"first, {out[at]}, at index {at}): NaN or inf would come back as a "
                         f"result that looks like numbers")
    return out


def known_keys(where, mapping, allowed, *, ignore=()):
    """Every key of ``mapping`` is in ``allowed`` (or ``ignore``), else ValueError naming the
    first unknown key as ``where.key``, the keys that are read, and a near miss if there is one.
    A key no reader uses is dropped by every engine: a typo there silently changes nothing."""
    allowed = set(allowed)
    unknown = sorted((str(k) for k in mapping if k not in allowed and k not in ignore), key=str)
    if unknown:
        key = unknown[0]
        near = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise ValueError(f"{where}.{key} is not a key this reads (it reads "
                         f"{', '.join(sorted(allowed))}){hint}")


def text(name, value):
    """``value`` when it is a str."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {describe(value)}")
    return value


def function(name, value):
    """``value`` when it is callable."""
    if not callable(value):
        raise ValueError(f"{name} must be callable (a function or a model), got {describe(value)}")
    return value


# The forms the modules used before this vocabulary, kept as short names.
def int_at_least(name, value, minimum):
    """``integer(name, value, minimum=minimum)``."""
    return integer(name, value, minimum=minimum)


def positive_int(name, value):
    return integer(name, value, minimum=1)


def non_negative_int(name, value):
    return integer(name, value, minimum=0)


def describe_bytes(nbytes):
    """A byte count for an error message, one decimal in the largest binary unit it reaches
    (``931.3 GiB``, ``232.8 TiB``; past a million of the largest unit, ``1.2e+30 bytes``): the
    size a refused allocation would have needed."""
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                       ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:,.1f} {unit}" if nbytes < 10**6 * size else f"{nbytes:.3g} bytes"
    return f"{nbytes} bytes"
