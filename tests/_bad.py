"""Bad-input property tests: a table of cases per module, one hypothesis test per argument.

A test module lists its public functions' cases and binds the two generated tests::

    BAD_INPUTS = [
        Case(rope.ntk_base, args=(10_000.0, 8.0, 128),
             bad={"b": reals(above=1.0), "s": reals(minimum=1.0), "r": ints(minimum=4)},
             names={"b": "rope_theta", "s": "factor", "r": "rotary_dim"}),
        Case(kv_cache.kv_bytes_per_token, args=(cfg,),
             bad={"config.num_key_value_heads": ints(minimum=1) | st.just(3)}),
    ]
    test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)

``test_bad_input`` draws each argument's bad values (every other argument valid) and asserts a
``ValueError`` whose message names the argument: the key of ``bad``, or ``names[key]``. A key
``"arg.a.b"`` edits a copy of a dict argument at ``arg["a"]["b"]`` (``DELETE`` removes the key);
its default name in the message is the path after the argument, ``a.b`` (a config key as the
reader names it). ``test_valid_call`` is the control: the valid call returns, and writes
nothing into its array arguments. ``tests/test_validate.py`` checks that the cases of all test
modules together cover every public function of lessonlib.

The strategies (``ints``, ``reals``, ``flags``, ``choices``, ``arrays_with``) generate what the
matching ``lessonlib._validate`` check rejects: bools, floats for ints (integral ones too),
strings (numeric ones too), complex numbers, None, NaN and inf, lists, values past the bounds.
"""
import copy
import inspect
import re
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

__all__ = ["Case", "DELETE", "bad_input_tests", "ints", "reals", "flags", "choices", "texts",
           "arrays_with", "not_callable", "names_argument"]

DELETE = object()  # for a "arg.key" entry: remove the key from the copy
BAD_EXAMPLES = 25  # per (function, argument); most bad values fail at the first check

_JUNK = st.one_of(st.just(None), st.lists(st.integers(0, 3), min_size=1, max_size=2),
                  st.just({}), st.just(object()))
_STRINGS = st.one_of(st.sampled_from(["", "1", "3", "2.5", "1e3", "true", "no", "none"]),
                     st.text(max_size=4))
_COMPLEX = st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e3).filter(
    lambda z: z.imag != 0)
_BOOLS = st.one_of(st.booleans(), st.sampled_from([np.True_, np.False_]))


def _or_none(strategy, none):
    return strategy if none else st.one_of(strategy, st.none())


def ints(minimum=None, maximum=None, *, none_ok=False):
    """Values ``_validate.integer`` rejects for these bounds (None too unless ``none_ok``)."""
    parts = [_BOOLS, _STRINGS, _COMPLEX, _JUNK.filter(lambda v: v is not None),
             st.floats(allow_nan=True, allow_infinity=True),  # integral floats (2.0) included
             st.sampled_from([2.0, 1.5, np.float64(3.0), np.float32(0.5)])]
    if minimum is not None:
        parts.append(st.integers(max_value=minimum - 1))
    if maximum is not None:
        parts.append(st.integers(min_value=maximum + 1))
    return _or_none(st.one_of(parts), none_ok)


def reals(minimum=None, above=None, maximum=None, below=None, *, none_ok=False):
    """Values ``_validate.real`` rejects for these bounds (None too unless ``none_ok``)."""
    parts = [_BOOLS, _STRINGS, _COMPLEX, _JUNK.filter(lambda v: v is not None),
             st.sampled_from([float("nan"), float("inf"), -float("inf"), np.float32("nan")])]
    if minimum is not None:
        parts.append(st.floats(max_value=minimum, exclude_max=True, allow_nan=False,
                               allow_infinity=False))
    if above is not None:
        parts.append(st.floats(max_value=above, allow_nan=False, allow_infinity=False))
    if maximum is not None:
        parts.append(st.floats(min_value=maximum, exclude_min=True, allow_nan=False,
                               allow_infinity=False))
    if below is not None:
        parts.append(st.floats(min_value=below, allow_nan=False, allow_infinity=False))
    return _or_none(st.one_of(parts), none_ok)


def flags(*, none_ok=False):
    """Values ``_validate.flag`` rejects: strings ("no", "false"), numbers (0, 1), junk."""
    return _or_none(st.one_of(_STRINGS, st.sampled_from(["False", "off", "0"]),
                              st.integers(-1, 2), st.floats(allow_nan=True), _COMPLEX,
                              _JUNK.filter(lambda v: v is not None)), none_ok)


def choices(allowed, *, none_ok=False):
    """Values that are not exactly one of ``allowed`` (case variants and padding included)."""
    allowed = list(allowed)
    variants = [v.upper() for v in allowed if isinstance(v, str) and v.upper() != v]
    variants += [f" {v}" for v in allowed if isinstance(v, str)]
    parts = [st.text(max_size=6).filter(lambda s: s not in allowed), st.integers(-1, 3),
             _BOOLS, _JUNK.filter(lambda v: v is not None)]
    if variants:
        parts.append(st.sampled_from(variants))
    return _or_none(st.one_of(parts), none_ok)


def texts(*, none_ok=False):
    """Values that are not strings."""
    return _or_none(st.one_of(st.integers(), st.floats(), _BOOLS, _JUNK.filter(
        lambda v: v is not None), st.just(b"bytes")), none_ok)


def not_callable():
    return st.one_of(st.none(), st.integers(), _STRINGS, st.just([lambda t: t]))


def arrays_with(valid, *, kind="float", ranks=None, none_ok=False):
    """Bad versions of the array ``valid``: a NaN or inf at a drawn index (float kinds), the
    wrong rank (``ranks``: the allowed ones), strings, complex, bools, ragged lists, None."""
    valid = np.asarray(valid)

    @st.composite
    def non_finite(draw):
        a = valid.astype(np.float64 if kind == "real" else valid.dtype, copy=True)
        at = tuple(draw(st.integers(0, n - 1)) for n in a.shape)
        a[at] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
        return a

    parts = [st.just(valid.astype(str)), st.just(valid.astype(np.complex128) + 1j),
             st.just(valid != 0), st.just("array")]
    if not none_ok:
        parts.append(st.none())
    if valid.ndim >= 2:
        parts.append(st.just([[1.0, 2.0], [1.0]]))  # ragged
    if kind in ("float", "real") and valid.size:
        parts.append(non_finite())
    if kind == "float":
        parts.append(st.just(np.arange(valid.size).reshape(valid.shape)))  # integers
    if ranks is not None:
        wrong = [r for r in range(0, 5) if r not in ranks]
        parts.append(st.sampled_from(wrong).map(lambda r: np.ones((2,) * r)))
    return st.one_of(parts)


@dataclass
class Case:
    """One public function (``target``, for coverage), a valid call, and bad values per argument.

    ``call`` defaults to ``target``; give it when the target is a method or needs a setup
    (``call=lambda W, k: RingBuffer(W).append(k)``). ``id`` names the case in test ids.
    """
    target: object
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    bad: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)
    call: object = None
    id: str = ""

    def __post_init__(self):
        self.call = self.target if self.call is None else self.call
        if not self.id:
            self.id = getattr(self.target, "__qualname__", repr(self.target))
        signature = inspect.signature(self.call)
        signature.bind(*self.args, **self.kwargs)  # a typo in a case fails at import
        for key in self.bad:
            arg = key.split(".")[0]
            if arg not in signature.parameters:
                raise TypeError(f"{self.id}: {arg!r} is not a parameter of {self.call}")

    def bound(self, key=None, value=None):
        """The call's arguments (deep copies), with ``key`` set to ``value``."""
        signature = inspect.signature(self.call)
        ba = signature.bind(*copy.deepcopy(self.args), **copy.deepcopy(self.kwargs))
        ba.apply_defaults()
        if key is not None:
            arg, *path = key.split(".")
            if not path:
                ba.arguments[arg] = value
            else:
                node = ba.arguments[arg]
                for part in path[:-1]:
                    if not isinstance(node.get(part), dict):
                        node[part] = {}
                    node = node[part]
                if value is DELETE:
                    node.pop(path[-1], None)
                else:
                    node[path[-1]] = value
        return ba

    def __repr__(self):
        return f"Case({self.id})"

    def expected_name(self, key):
        if key in self.names:
            return self.names[key]
        arg, *path = key.split(".")
        return ".".join(path) if path else arg


def names_argument(message, name):
    """True when ``name`` appears in ``message`` as a whole word (dots allowed inside)."""
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", message) is not None


def _arrays_in(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _arrays_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays_in(v)


def bad_input_tests(cases):
    """(test_valid_call, test_bad_input) for a module's list of ``Case``s."""
    controls = [pytest.param(c, id=c.id) for c in cases]
    pairs = [pytest.param(c, key, id=f"{c.id}:{key}") for c in cases for key in c.bad]

    @pytest.mark.parametrize("case", controls)
    def test_valid_call(case):
        ba = case.bound()
        arrays = list(_arrays_in(dict(ba.arguments)))
        before = [a.copy() for a in arrays]
        case.call(*ba.args, **ba.kwargs)
        for a, b in zip(arrays, before):
            np.testing.assert_array_equal(a, b, err_msg=f"{case.id} wrote into its input")

    @pytest.mark.parametrize("case,key", pairs)
    @settings(max_examples=BAD_EXAMPLES, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.filter_too_much])
    @given(data=st.data())
    def test_bad_input(case, key, data):
        value = data.draw(case.bad[key], label=key)
        ba = case.bound(key, value)
        with pytest.raises(ValueError) as err:
            case.call(*ba.args, **ba.kwargs)
        name = case.expected_name(key)
        assert names_argument(str(err.value), name), (
            f"{case.id}({key}={value!r}): the error does not name {name!r}: {err.value}")

    return test_valid_call, test_bad_input
