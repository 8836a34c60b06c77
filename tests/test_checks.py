"""Every exercise in every notebook: its check says "not attempted" on the stub and "correct" on
the instructors' reference solution (instructors/solutions/<notebook>.py defines the answer under
the check's name). Topic files (test_checks_<topic>.py) test the hints for wrong answers.

Also here: the one way checks read an answer (lessonlib.checks: number, whole, items, vector,
wholes, call, the "close: give more digits" rule), the reference answer of every check in each
accepted form, and a property test over a zoo of answers a student might give, for every check:
a Verdict always comes back, never an exception or a warning. Last, the preamble every check
shares (checks/_preamble.py): every public check goes through it, nothing writes it again, and
its "not attempted" message is what the notebooks show."""
import ast
import decimal
import fractions
import glob
import importlib
import inspect
import itertools
import json
import math
import numbers
import os
import pkgutil
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from _support import ROOT, needs, optional, solutions

from lessonlib import checks
from lessonlib.checks import (NOT_ATTEMPTED, Unreadable, Verdict, call, check_number, items,
                              number, rounded_hint, shown, significant_digits, unfilled, vector,
                              whole, wholes)
from lessonlib.checks._preamble import Preamble, preamble

torch = optional("torch")

CALL = re.compile(r"^checks\.(\w+)\.(\w+)\(", re.M)


def exercise_cells():
    for path in sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb"))):
        nb = json.load(open(path))
        stem = os.path.basename(path)[:-6]
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                for topic, name in CALL.findall(source):
                    yield stem, topic, name, source


def exercises():
    for stem, topic, name, _ in exercise_cells():
        yield pytest.param(stem, topic, name, id=f"{stem}:{name}")


def check_of(topic, name):
    return getattr(getattr(checks, topic), name)


EXERCISES = list(exercises())
CHECKS = [pytest.param(check_of(topic, name), solutions(stem).__dict__[name], id=name)
          for stem, topic, name in (p.values for p in EXERCISES)]


@pytest.mark.parametrize("stem, topic, name", EXERCISES)
def test_exercise_stub_and_reference_solution(stem, topic, name):
    check = check_of(topic, name)
    verdict = check(None)
    assert isinstance(verdict, Verdict) and verdict.ok is None
    assert verdict.message == NOT_ATTEMPTED
    assert repr(verdict).startswith(f"[{name}: not attempted]")
    answer = getattr(solutions(stem), name)
    verdict = check(answer)
    assert verdict.ok is True and bool(verdict), verdict


@pytest.mark.parametrize("stem, topic, name, source",
                         [pytest.param(*c, id=f"{c[0]}:{c[2]}") for c in exercise_cells()])
def test_committed_stub_cell_is_not_attempted(stem, topic, name, source):
    """The exercise cell as committed (a value stub, or a function stub that returns None and
    is passed to the check itself) gives exactly the "not attempted" message."""
    tree = ast.parse(source)
    *body, last = tree.body
    assert isinstance(last, ast.Expr), "the cell ends with the check call"
    namespace = {"checks": checks, "np": np}
    exec(compile(ast.Module(body=body, type_ignores=[]), stem, "exec"), namespace)
    verdict = eval(compile(ast.Expression(last.value), stem, "eval"), namespace)
    assert verdict.ok is None and verdict.message == NOT_ATTEMPTED, verdict


def test_every_notebook_has_exercises():
    assert len({p.values[0] for p in exercises()}) == len(
        glob.glob(os.path.join(ROOT, "notebooks", "[0-9]*.ipynb")))


def test_check_number_verdicts():
    mistakes = [(20.0, "doubled"), (5.0, "halved")]
    assert check_number("x", None, 10.0, mistakes).ok is None
    assert check_number("x", 10.01, 10.0, mistakes, unit="GiB").message == "Correct: 10 GiB."
    assert check_number("x", 20.0, 10.0, mistakes).message == "doubled"
    assert check_number("x", 5.0, 10.0, mistakes).message == "halved"
    assert check_number("x", 7.0, 10.0, mistakes, generic="Hint.").message == "Not 7. Hint."
    for bad in ("10", True, float("nan"), [10.0]):
        v = check_number("x", bad, 10.0, mistakes)
        assert v.ok is False and "one finite number" in v.message
    assert check_number("x", 10.4, 10.0, [], rtol=0, atol=0.5, fmt=".1f").message == \
        "Correct: 10.0."


# ------------------------------------------------------------------ reading an answer

def number_forms(x):
    """A number as a student may give it: Python, numpy, 0-d arrays and tensors, complex + 0j."""
    forms = [float(x), np.float64(x), np.array(x), np.array(x, dtype=np.float32)[()],
             np.array(float(x)), complex(x, 0), np.complex128(x)]
    if float(x) == int(x):
        forms += [int(x), np.int64(x), np.array(int(x)), fractions.Fraction(int(x))]
    if torch is not None:
        forms += [torch.tensor(float(x), dtype=torch.float64), torch.tensor(float(x))]
        if float(x) == int(x):
            forms.append(torch.tensor(int(x)))
    return forms


@pytest.mark.parametrize("form", number_forms(3), ids=lambda f: type(f).__name__)
def test_number_and_whole_accept_every_numeric_form(form):
    assert number(form) == 3.0
    assert whole(form) == 3 and type(whole(form)) is int


@needs("torch")
def test_number_reads_tensors_without_importing_torch_here():
    import lessonlib.checks as module
    assert "torch" not in vars(module)
    assert number(torch.tensor(2.5, requires_grad=True)) == 2.5
    assert number(torch.tensor(2.5, dtype=torch.bfloat16)) == 2.5
    with pytest.raises(Unreadable, match="True and False"):
        number(torch.tensor(True))
    with pytest.raises(Unreadable, match="one number itself"):
        number(torch.tensor([2.5]))


@pytest.mark.parametrize("bad, says", [
    ("128", "the string '128'"), (True, "True and False"), (np.True_, "True and False"),
    (float("nan"), "NaN and inf"), (-math.inf, "NaN and inf"), (np.float32("inf"), "NaN and inf"),
    (1 + 2j, "complex number"), (np.complex64(1 + 1j), "complex number"), ([3.0], "one number"),
    ({"a": 1}, "dict"), (lambda: 3, "call it"), (10 ** 400, "not a finite float"),
    (decimal.Decimal("NaN"), "NaN"), (None, "None"), (object(), "object"),
])
def test_number_refuses_with_a_hint_never_a_warning(bad, says):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning or any other would fail here
        with pytest.raises(Unreadable, match=re.escape(says)):
            number(bad)


@pytest.mark.parametrize("x, hint", [(0.25, "use //"), (29.4, "not a whole number"),
                                     (np.float32(1.5), "not a whole number"),
                                     ("3", "the string")])
def test_whole_never_truncates(x, hint):
    with pytest.raises(Unreadable, match=re.escape(hint)):
        whole(x)


def test_whole_reads_integral_floats_and_float_round_off():
    assert whole(3.0) == 3 and whole(np.float32(29.0)) == 29
    assert whole(0.1 * 3 * 10) == 3  # 3.0000000000000004: round-off in a right count
    assert whole(10 ** 400) == 10 ** 400  # a Python int stays exact
    with pytest.raises(Unreadable):
        whole(3.000001)


def test_items_reads_an_iterator_once_and_refuses_strings_dicts_and_unordered_sets():
    assert items(map(int, "123")) == [1, 2, 3]
    assert items(x for x in (1, 2)) == [1, 2]
    assert sorted(items({2, 1})) == [1, 2]
    for bad in ("12", b"12", {"a": 1}, 3, None):
        with pytest.raises(Unreadable):
            items(bad)
    with pytest.raises(Unreadable, match="no order"):
        items({1, 2}, ordered=True)
    with pytest.raises(Unreadable, match="more than"):
        items(itertools.count())

    def broken():
        yield 1
        raise RuntimeError("half way")

    with pytest.raises(Unreadable, match="RuntimeError: half way"):
        items(broken())


def test_vector_and_wholes():
    np.testing.assert_array_equal(vector([[1, 2], [3, 4]]), [1.0, 2.0, 3.0, 4.0])
    assert vector([[1, 2], [3, 4]], flatten=False).shape == (2, 2)
    np.testing.assert_array_equal(vector(np.array([1 + 0j, 2])), [1.0, 2.0])
    assert wholes([0.0, 1, np.int8(2)]) == [0, 1, 2]
    for bad, says in [([[1, 2], [3]], "different lengths"), (["1", 2], "element 0"),
                      ([1, None], "element 1"), (np.array([1 + 1j]), "complex"),
                      (np.array([True]), "True/False"), (np.array(["a"]), "strings"),
                      ([1.0, math.nan], "NaN"), (np.array([0.0, np.inf]), "element 1")]:
        with pytest.raises(Unreadable, match=re.escape(says)):
            vector(bad)
    with pytest.raises(Unreadable, match="element 1 is 0.25.*use //"):
        wholes(np.arange(4) / 4)
    with pytest.raises(Unreadable, match="3 values, got 2"):
        vector([1, 2], size=3)


def test_call_gives_copies_reads_iterators_and_turns_errors_into_hints():
    x = np.ones(3)

    def scribbles(a):
        a *= 2
        return map(float, a)

    result, error = call(scribbles, x)
    assert error is None and result == (2.0, 2.0, 2.0) and (x == 1).all()
    assert call(lambda: 1 / 0)[1] == "Calling it raised ZeroDivisionError: division by zero"
    assert call(lambda: math.exp(1000), overflow="subtract the max")[1] == "subtract the max"
    assert call(lambda: 1 / 0, label="f(1)")[1].startswith("f(1) raised ZeroDivisionError")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert call(lambda: np.float64(1) / 0)[0] == np.inf  # no RuntimeWarning escapes


def test_unfilled_is_a_function_that_returns_none_everywhere():
    probes = [(1,), (2,), (3,)]
    assert unfilled(lambda x: None, probes)
    assert unfilled(lambda x: (_ for _ in ()).throw(NotImplementedError()), probes)
    assert not unfilled(lambda x: None if x < 3 else 0, probes)  # a path without return
    assert not unfilled(lambda x: 1 / 0, probes)  # a bug, not a stub


def test_shown_and_significant_digits_are_the_students_own():
    assert shown(4134231.5) == "4,134,231.5" and shown(12000.0) == "12,000"
    assert shown(np.float32(0.1)) == "0.1" and shown(-1234.5) == "-1,234.5"
    assert shown(1.5e-7) == "1.5e-07"
    assert significant_digits(0.009) == 1 and significant_digits(0.0090) == 1
    assert significant_digits(np.float32(0.009)) == 1  # not 0.008999999612569809
    assert significant_digits(4_100_000) == 2 and significant_digits(0.0092225) == 5
    assert significant_digits(0) is None and significant_digits("0.009") is None
    if torch is not None:
        assert significant_digits(torch.tensor(0.009)) == 1


# ------------------------------------------------------------------ close: give more digits

def test_an_answer_rounded_to_its_own_digits_is_close():
    expected = 0.0092225
    for answer in (0.009, np.float32(0.009), 0.0092, 0.00922):
        v = check_number("x", answer, expected, [], rtol=1e-6)
        assert v.ok is False and v.message.startswith("Close:"), (answer, v)
    assert "at least 6" in check_number("x", 0.009, 0.00922252, [], rtol=1e-6).message
    assert "1 significant digit;" in check_number("x", 0.009, expected, [], rtol=1e-6).message


@pytest.mark.parametrize("answer, expected", [
    (0.01, 0.0092225),     # 0.0092 to one digit is 0.009, not 0.01
    (0.0093, 0.0092225),   # two digits: 0.0092
    (0.0091, 0.0092225),   # truncated, not rounded
    (2, 1.8133),           # one digit below 5 resolves only 25%: as likely another value
    (1, 1.3),
    (0.003, 0.0032),
    (0.00922251, 0.0092225),  # more digits than the expected has: simply wrong
])
def test_a_wrong_answer_that_happens_to_be_near_is_not_called_close(answer, expected):
    v = check_number("x", answer, expected, [], rtol=1e-6)
    assert v.ok is False and not v.message.startswith("Close"), v


def test_close_says_when_a_typical_slip_rounds_the_same():
    v = check_number("x", 0.009, 0.0092225, [(0.0092835, "off by one")], rtol=1e-6)
    assert v.message.startswith("Close:") and "so is a typical slip" in v.message
    # a slip matched at full precision still wins
    assert check_number("x", 0.0092835, 0.0092225, [(0.0092835, "off by one")],
                        rtol=1e-6).message == "off by one"


def test_counts_are_exact_never_close_and_never_truncated():
    assert check_number("n", 29.0, 29, [], integer=True).ok is True
    assert check_number("n", np.float32(29), 29, [], integer=True).ok is True
    v = check_number("n", 29.4, 29, [], integer=True)
    assert v.ok is False and "not a whole number" in v.message and "//" in v.message
    assert check_number("n", 10_000, 12_000, [], integer=True).message == "Not 10,000."
    assert rounded_hint(1e4, 1e4, 12_000.0, [], lambda a, b: a == b) is None  # 1 digit, 1e4


# ------------------------------------------------------------------ every check, every form

def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def answer_forms(ref):
    """The reference answer in each form a student may give it."""
    if _is_number(ref):
        return number_forms(ref)
    if isinstance(ref, dict):
        return [ref, dict(ref)]
    if isinstance(ref, set):
        ordered = sorted(ref)
        forms = [ref, frozenset(ref), ordered, tuple(ordered), (x for x in ordered),
                 np.array(ordered)]
        if torch is not None:
            forms.append(torch.tensor(ordered))
        return forms
    if isinstance(ref, tuple) and len(ref) == 2 and np.ndim(ref[0]) == 1:  # (positions, slot)
        held, slot = ref
        forms = [(list(held), int(slot)), (np.array(held), np.int64(slot)),
                 [tuple(held), float(slot)], (set(held), np.array(slot)), iter((held, slot))]
        if torch is not None:
            forms.append((torch.tensor(held), torch.tensor(int(slot))))
        return forms
    if isinstance(ref, list) and all(isinstance(x, str) for x in ref):  # names (vLLM backends)
        return [list(ref), tuple(ref), iter(ref), np.array(ref), [x.lower() for x in ref]]
    arr = np.asarray(ref)
    forms = [list(ref), tuple(ref), arr, arr.tolist(), (x for x in arr.tolist()),
             map(float, arr.tolist()), arr.astype(np.float32)]
    if torch is not None:
        forms += [torch.tensor(arr.tolist()), torch.tensor(arr.tolist(), dtype=torch.float64)]
    return forms


def function_forms(ref):
    """The reference function, and versions that return the same answer another way."""
    def as_map(*a):
        out = ref(*a)
        return map(lambda v: v, out) if isinstance(out, (tuple, list, np.ndarray)) else out

    def as_numpy(*a):
        out = ref(*a)
        if isinstance(out, dict):  # a dict of results (10's sweep reach): no array form
            return out
        if isinstance(out, (bool, np.bool_)):
            return np.bool_(out)
        return tuple(np.asarray(v) for v in out) if isinstance(out, tuple) else np.asarray(out)

    def scribbles(*a):  # writes into every array it is given, after computing its answer
        out = ref(*a)
        out = tuple(np.array(v) for v in out) if isinstance(out, tuple) else np.array(out)
        for x in a:
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                x *= 2.0
        return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out

    forms = [ref, as_map, as_numpy, scribbles]
    if torch is not None:
        def as_tensors(*a):
            out = ref(*a)
            if isinstance(out, dict):
                return out
            if isinstance(out, tuple):
                return tuple(torch.as_tensor(np.asarray(v)) for v in out)
            return torch.as_tensor(np.asarray(out))
        forms.append(as_tensors)
    return forms


def reference_forms():
    for param in CHECKS:
        check, ref = param.values
        forms = function_forms(ref) if callable(ref) else answer_forms(ref)
        for i, form in enumerate(forms):
            yield pytest.param(check, form, id=f"{param.id}-{i}")


@pytest.mark.parametrize("check, answer", list(reference_forms()))
def test_reference_answer_in_every_accepted_form_is_correct(check, answer):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict = check(answer)
    assert verdict.ok is True, verdict


@pytest.mark.parametrize("check, ref", CHECKS)
def test_numeric_strings_and_complex_answers_are_wrong_with_a_hint(check, ref):
    if callable(ref) or isinstance(ref, dict):
        return
    if isinstance(ref, list) and all(isinstance(x, str) for x in ref):
        return  # the answer is names (vLLM's backends): strings are right there
    if _is_number(ref):
        forms = [str(ref), complex(ref, 1.0), np.complex128(complex(ref, 0.5))]
    elif isinstance(ref, tuple) and np.ndim(ref[0]) == 1:
        forms = [(list(map(str, ref[0])), ref[1]), (ref[0], str(ref[1])), (ref[0], ref[1] + 1j)]
    else:
        flat = list(ref)
        forms = [str(flat), [str(v) for v in flat], [complex(v, 1) if _is_number(v) else v
                                                     for v in flat]]
        if flat and isinstance(flat[0], tuple):
            forms[2] = [(complex(i, 1), j) for i, j in flat]
    for answer in forms:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            verdict = check(answer)
        assert verdict.ok is False, (answer, verdict)
        assert re.search(r"string|without quotes|complex|imaginary|number", verdict.message), \
            (answer, verdict)


# ------------------------------------------------------------------ the zoo

def _raise(exc):
    def f(*args):
        raise exc
    return f


def _scribble(*args):
    for x in args:
        if isinstance(x, np.ndarray):
            x *= 2
    return args


def _loop(*args):
    total = 0
    for i in range(2000):
        total += i
    return total


def _half_generator(*args):
    yield 1
    raise RuntimeError("half way")


class _Hostile:
    """An object whose every probe fails."""
    make = classmethod(lambda cls: cls())
    shape = property(lambda self: 1 / 0)

    def __repr__(self):
        raise RuntimeError("no repr")

    def __float__(self):
        raise RuntimeError("no float")

    def __iter__(self):
        raise RuntimeError("no iter")


class _Callable:
    def __call__(self, *args):
        return 0


FUNCTIONS = st.sampled_from([
    lambda *a: None, _raise(ValueError("bad")), _raise(NotImplementedError()),
    _raise(KeyError("k")), _raise(OverflowError("big")), _raise(RecursionError()),
    lambda *a: "garbage", lambda *a: {"m": 1}, lambda *a: [[1, 2], [3]], lambda *a: object(),
    lambda *a: (1, 2, 3, 4), lambda *a: np.array([np.nan, 1.0]), lambda *a: 1j,
    lambda *a: (np.inf, np.nan), lambda *a: True, lambda *a: 2, lambda *a: a,
    lambda *a: a[0] if a else None, lambda *a: map(float, a), lambda *a: iter([]),
    lambda *a: (x for x in a), lambda *a: itertools.count(), _half_generator, _scribble, _loop,
    lambda: 1, lambda x: x, _Callable(), lambda *a: _Hostile.make(), lambda *a: (1j, 2),
    lambda *a: ("1", "2"), lambda *a: np.float32(1.0), lambda *a: np.zeros((2, 2)),
])
DTYPES = [np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float16, np.float32, np.float64,
          np.complex64, np.complex128, np.bool_]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.sampled_from([np.True_, np.False_]),
    st.integers(), st.sampled_from([10 ** 400, -(10 ** 30), 2 ** 63]),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(width=32).map(np.float32),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "128", "0.0092", "1e3", "nan", "True", "{0, 1}", "(10, 23)", "linear"]),
    st.text(max_size=5), st.binary(max_size=3),
    st.sampled_from(DTYPES).flatmap(lambda dt: hnp.from_dtype(np.dtype(dt))),
    hnp.arrays(st.sampled_from(DTYPES), ()),
    st.sampled_from([fractions.Fraction(1, 3), decimal.Decimal("0.0092"),
                     decimal.Decimal("NaN"), decimal.Decimal("1e400"), Ellipsis, int, object(),
                     np.array(None, dtype=object), np.datetime64("2024-01-01")]),
    st.builds(lambda: _Hostile()),  # built when drawn: hypothesis reprs what it samples from
)
COLLECTIONS = st.one_of(
    hnp.arrays(st.sampled_from(DTYPES + [np.dtype("U3")]),
               st.sampled_from([(0,), (1,), (2,), (3,), (8,), (32,), (10, 2), (2, 2), (256,),
                                (2, 3, 1)])),
    st.lists(st.integers(-5, 1100) | st.floats(-10, 2000), max_size=40),
    st.lists(st.integers(-5, 1100), min_size=250, max_size=260),
    st.lists(st.integers(-5, 300), max_size=12).map(tuple),
    st.sets(st.integers(-2, 40), max_size=20), st.frozensets(st.integers(0, 12)),
    st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 6)), max_size=12).map(set),
    st.lists(st.tuples(st.floats(-1, 6), st.integers(0, 6)), max_size=4),
    st.lists(SCALARS, max_size=4), st.lists(SCALARS, max_size=3).map(tuple),
    st.tuples(st.lists(st.integers(0, 1001), max_size=300), SCALARS),
    st.sampled_from([[[1, 2], [3]], [[0.5, 1]], [None], [[]], [(0, 1, 2)], ["01", "03"],
                     [[1, 2], 3], [lambda: 1]]),
    st.builds(range, st.integers(0, 40)),
    st.lists(st.integers(0, 40), max_size=20).map(lambda xs: (x for x in xs)),
    st.lists(st.floats(-2, 2), min_size=2, max_size=2).map(lambda xs: map(float, xs)),
)
DICTS = st.one_of(
    st.dictionaries(st.text(max_size=3), SCALARS, max_size=3),
    st.fixed_dictionaries(
        {"rope_type": st.sampled_from(["linear", "dynamic", "ntk", "yarn", "llama3", "longrope",
                                       "default", "bogus", 3, None]),
         "factor": st.one_of(SCALARS, st.floats(0.5, 16))},
        optional={"partial_rotary_factor": st.one_of(SCALARS, st.floats(0.1, 1.0)),
                  "original_max_position_embeddings": st.one_of(SCALARS, st.integers(1, 1024)),
                  "rope_theta": st.one_of(SCALARS, st.floats(2, 1e6)),
                  "type": st.sampled_from(["linear", "yarn"]),
                  "rope_scaling": st.just({"rope_type": "linear", "factor": 4.0})}),
)
ZOO = [SCALARS, COLLECTIONS, DICTS, FUNCTIONS]
if torch is not None:
    TORCH_DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16,
                    torch.complex64, torch.float16]
    ZOO.append(st.one_of(
        st.tuples(st.sampled_from(TORCH_DTYPES), st.floats(-1e3, 1e3)).map(
            lambda t: torch.tensor(t[1]).to(t[0])),
        st.tuples(st.sampled_from(TORCH_DTYPES), st.lists(st.floats(-2, 300), max_size=40)).map(
            lambda t: torch.tensor(t[1]).to(t[0])),
        st.floats(-5, 5).map(lambda x: torch.tensor(x, requires_grad=True)),
    ))


def near_reference(ref):
    """Answers built from the reference: perturbed, rounded, partly broken."""
    if callable(ref):
        def post(transform):
            def f(*a):
                return transform(ref(*a))
            return f
        return st.sampled_from([
            post(lambda out: None), post(lambda out: [out]),
            post(lambda out: tuple(out)[::-1] if isinstance(out, tuple) else out),
            post(lambda out: np.float32(out) if isinstance(out, (bool, float)) else out),
            post(lambda out: not out if isinstance(out, bool) else out),
            post(lambda out: map(str, out) if isinstance(out, tuple) else str(out)),
        ])
    if _is_number(ref):
        return st.one_of(
            st.floats(-0.05, 0.05).map(lambda e: ref * (1 + e)),
            st.integers(1, 8).map(lambda k: float(f"{float(ref):.{k - 1}e}")),
            st.sampled_from([-ref, 2 * ref, ref / 2, ref + 0.5, int(ref), math.floor(ref)]))
    if isinstance(ref, dict):
        return st.dictionaries(st.sampled_from(["rope_type", "factor", "type",
                                                "partial_rotary_factor"]),
                               st.one_of(SCALARS, st.sampled_from(["linear", 4.0, 4, 0.5])))
    listed = list(ref)

    @st.composite
    def broken(draw):
        if not listed:
            return listed
        out = list(listed)
        at = draw(st.integers(0, len(out) - 1))
        out[at] = draw(SCALARS)
        return out if draw(st.booleans()) else out[:-1]
    return broken()


@pytest.mark.parametrize("check, ref", CHECKS)
@settings(max_examples=int(os.environ.get("ZOO_EXAMPLES", 40)))  # more: ZOO_EXAMPLES=1000
@given(data=st.data())
def test_every_check_returns_a_verdict_for_anything_a_student_gives(check, ref, data):
    answer = data.draw(st.one_of(*ZOO, near_reference(ref)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="raise"):  # a numpy floating-point error would surface too
            verdict = check(answer)
    assert not caught, [str(w.message) for w in caught]
    assert isinstance(verdict, Verdict)
    assert verdict.ok in (True, False, None)
    assert isinstance(verdict.message, str) and verdict.message.strip()
    if verdict.ok is None:
        assert verdict.message == NOT_ATTEMPTED


@pytest.mark.parametrize("check, ref", CHECKS)
def test_no_check_writes_into_the_students_arrays(check, ref):
    if callable(ref) or isinstance(ref, dict):
        return
    if isinstance(ref, list) and all(isinstance(x, str) for x in ref):
        return  # names (vLLM's backends): no array to write into
    if isinstance(ref, tuple) and np.ndim(ref[0]) == 1:
        answer = (np.array(ref[0]), np.array(ref[1]))
    elif isinstance(ref, set):
        answer = np.array(sorted(ref))
    else:
        answer = np.array(ref, dtype=float)
    before = [np.array(a, copy=True) for a in (answer if isinstance(answer, tuple) else [answer])]
    check(answer)
    after = answer if isinstance(answer, tuple) else [answer]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ the shared preamble

def _topic_modules():
    """Every topic module of lessonlib.checks (checks/<topic>.py), found on disk."""
    folder = os.path.dirname(checks.__file__)
    return [importlib.import_module(f"lessonlib.checks.{info.name}")
            for info in pkgutil.iter_modules([folder]) if not info.name.startswith("_")]


TOPIC_MODULES = _topic_modules()
PUBLIC_CHECKS = [pytest.param(module, name, id=f"{module.__name__.rsplit('.', 1)[1]}.{name}")
                 for module in TOPIC_MODULES for name in module.__all__
                 if inspect.isfunction(getattr(module, name))]

# The hints of the kind gates, as the checks gave them before they shared the preamble (for an
# answer of 42): a function exercise given a value, the dict exercise given a value.
GATE_HINTS = {
    "prefix_hit": "Give a function prefix_hit(token_ids, cached, block_size) that returns a number "
                  "of tokens.",
    "merge_splits": "Give a function merge_splits(states) that returns the output, an array of "
                    "shape (dv,).",
    "online_softmax_update": "Give a function update(m, l, x) that returns (m_new, l_new).",
    "attention_update": "Give a function update(m, l, acc, x, v) returning "
                        "(m_new, l_new, acc_new).",
    "program_heads": "Give a function program_heads(pid_bh, hq, hkv) returning (b, h, h_kv).",
    "program_tiles": "Give a function tiles(pid_m, n, B, causal, W, sinks) returning (masked, "
                     "full).",
    "compute_buffer": "Give a function compute_buffer(config, n_ctx, ub, flash_attn) that "
                      "returns a number of bytes.",
    "tiled_causal": "Give a function tiled_causal(q, k, v, B) returning (out, tiles).",
    "bytes_per_token": "Give a function bytes_per_token(config) that returns a number of bytes.",
    "streaming_cache": "Give a function streaming_cache(n_sink, n_recent, n) returning "
                       "(positions, rope_positions).",
    "context_shift": "Give a function context_shift(n, n_ctx, n_keep) returning the tokens held, "
                     "a list.",
    "rotate_pairs": "Give a function rotate(x, m, theta, layout), got int.",
    "yarn_inv_freq": "Give a function yarn_inv_freq(config) that returns the speeds, got int.",
    "needle_grid": "Give a function run_grid(model, lengths, depths) that returns the found "
                   "matrix.",
    "needle_found": "Give a function found(length, depth) that returns True or False.",
    "pi_config": "give a dict such as {'rope_type': ..., 'factor': ...}, got int",
    "sweep_reach": "Give a function reach(extension, threshold) that returns a dict, label -> "
                   "length.",
}


def _not_implemented(*args):
    raise NotImplementedError


def test_every_topic_module_is_found_and_every_notebook_check_is_public():
    assert len(TOPIC_MODULES) >= 7 and len(PUBLIC_CHECKS) >= 33
    public = {(m.__name__.rsplit(".", 1)[1], n) for m, n in (p.values for p in PUBLIC_CHECKS)}
    assert {(topic, name) for _, topic, name in (p.values for p in EXERCISES)} <= public


@pytest.mark.parametrize("module, name", PUBLIC_CHECKS)
def test_every_public_check_goes_through_the_shared_preamble(module, name):
    """Every function in a topic module's __all__ is a check decorated with ``preamble``: None
    is "not attempted" with the notebooks' message, a function exercise given a value or the
    dict exercise given a value gets its hint, and a function stub is "not attempted"."""
    check = getattr(module, name)
    assert isinstance(getattr(check, "preamble", None), Preamble), f"{name}: no @preamble"
    assert check.__name__ == name
    assert repr(check(None)) == f"[{name}: not attempted] {NOT_ATTEMPTED}"
    gates = check.preamble
    if gates.function is None and gates.mapping is None:
        assert name not in GATE_HINTS
        return
    verdict = check(42)
    assert verdict.ok is False and verdict.message == GATE_HINTS[name], verdict
    if gates.function is not None:
        assert gates.probes is not None, "a function exercise tries the stub on probes"
        for stub in (lambda *args: None, _not_implemented):
            assert repr(check(stub)) == f"[{name}: not attempted] {NOT_ATTEMPTED}"


def test_every_gate_hint_belongs_to_a_gated_check():
    gated = {n for m, n in (p.values for p in PUBLIC_CHECKS)
             if getattr(m, n).preamble.function or getattr(m, n).preamble.mapping}
    assert gated == set(GATE_HINTS)


_PREAMBLE_CALLS = {"callable", "unfilled", "not_attempted", "exercise"}


@pytest.mark.parametrize("module", TOPIC_MODULES, ids=lambda m: m.__name__)
def test_no_check_writes_the_preamble_again(module):
    """The preamble lives in checks/_preamble.py only: no check tests ``answer is None``, calls
    callable / unfilled / not_attempted or tests isinstance(answer, Mapping) itself."""
    tree = ast.parse(inspect.getsource(module))
    found = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in module.__all__):
        arg = fn.args.args[0].arg
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called = node.func.id
                if called in _PREAMBLE_CALLS or (
                        called == "isinstance" and ast.unparse(node.args[0]) == arg
                        and "Mapping" in ast.unparse(node.args[1])):
                    found.append(f"{fn.name}:{node.lineno}: {ast.unparse(node)}")
            if (isinstance(node, ast.Compare) and ast.unparse(node.left) == arg
                    and any(isinstance(c, ast.Constant) and c.value is None
                            for c in node.comparators)):
                found.append(f"{fn.name}:{node.lineno}: {ast.unparse(node)}")
        decorators = [ast.unparse(d).split("(")[0] for d in fn.decorator_list]
        if decorators != ["preamble"]:
            found.append(f"{fn.name}:{fn.lineno}: decorated {decorators}, not preamble")
    assert not found, found


def _committed_output(stem, source):
    nb = json.load(open(os.path.join(ROOT, "notebooks", f"{stem}.ipynb")))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code"
                and "".join(c["source"]) == source)
    texts = [o["data"]["text/plain"] for o in cell["outputs"]
             if o["output_type"] == "execute_result"]
    return "".join(t if isinstance(t, str) else "".join(t) for t in texts)


@pytest.mark.parametrize("stem, topic, name, source",
                         [pytest.param(*c, id=f"{c[0]}:{c[2]}") for c in exercise_cells()])
def test_the_preambles_message_is_what_the_notebook_shows(stem, topic, name, source):
    """The committed stub cell's output is the preamble's "not attempted" verdict, byte for
    byte, and running the committed cell gives that verdict again."""
    tree = ast.parse(source)
    *body, last = tree.body
    namespace = {"checks": checks, "np": np}
    exec(compile(ast.Module(body=body, type_ignores=[]), stem, "exec"), namespace)
    verdict = eval(compile(ast.Expression(last.value), stem, "eval"), namespace)
    shown_text = _committed_output(stem, source)
    assert shown_text == f"[{name}: not attempted] {NOT_ATTEMPTED}"
    assert repr(verdict) == shown_text


@pytest.mark.parametrize("stem, topic, name", EXERCISES)
def test_every_verdict_carries_its_checks_name(stem, topic, name):
    """The name a check writes into its verdicts (the "[name: ...]" a student reads) is its
    own, for the reference answer and a wrong one alike."""
    check = check_of(topic, name)
    answer = getattr(solutions(stem), name)
    assert check(answer).name == name
    assert check(-1).name == name


def test_preamble_order_and_silence():
    """On a toy check: None before the kind gate, the kind gate before the probes, the probes
    before the body; the body's Unreadable is "not yet"; numpy overflow stays silent."""
    tried = []

    def probes():
        tried.append(True)
        return [(1,), (2,)]

    @preamble(function="Give a function f(x), got {type}.", probes=probes)
    def toy(f):
        if f(1) == "unreadable":
            raise Unreadable("Give something readable.")
        np.float32(3e38) * np.float32(10)  # an overflow: silent under the preamble
        return checks.correct("toy")

    assert toy(None).ok is None and not tried
    assert toy(3).message == "Give a function f(x), got int." and not tried
    assert toy(lambda x: None).ok is None and tried
    assert toy(lambda x: "unreadable").message == "Give something readable."
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            assert toy(lambda x: x).ok is True
    assert toy.preamble == Preamble(function="Give a function f(x), got {type}.", probes=probes)

    @preamble(mapping="give a dict, got {type}")
    def toy_dict(d):
        return checks.correct("toy_dict")

    assert toy_dict([1]).message == "give a dict, got list" and toy_dict({}).ok is True
    with pytest.raises(TypeError):
        preamble(probes=[(1,)])
    with pytest.raises(TypeError):
        preamble(function="f", mapping="d")
