"""lessonlib._validate, the one vocabulary every public function checks its arguments with, and
the coverage of the bad-input property tests (tests/_bad.py) over the whole public API."""
import importlib
import importlib.util
import inspect
import math

import numpy as np
import pytest
from _bad import Case, arrays_with, choices, flags, ints, names_argument, reals, texts
from _support import optional
from hypothesis import given, strategies as st

from lessonlib import _validate as check

torch = optional("torch")


# --------------------------------------------------------------------------- the vocabulary

@pytest.mark.parametrize("value", [3, np.int64(3), np.int8(3), np.array(3), np.uint16(3)])
def test_integer_takes_every_form_of_an_int(value):
    assert check.integer("n", value, minimum=1) == 3
    assert type(check.integer("n", value)) is int


@pytest.mark.parametrize("value, says", [
    (True, "n must be an integer, got True (a bool)"),
    (np.True_, "a bool"),
    (2.0, "n must be an integer, got the float 2.0 (use // for whole-number division)"),
    (np.float32(1.5), "got the float"),
    ("3", "got '3' (a str)"),
    (3 + 0j, "(a complex)"),
    (None, "got None"),
    ([3], "got [3] (a list)"),
    (np.array([3]), "got array([3])"),
    (0, "n must be an integer >= 1, got 0"),
])
def test_integer_refuses_what_is_not_an_int(value, says):
    with pytest.raises(ValueError) as err:
        check.integer("n", value, minimum=1)
    assert says in str(err.value)
    assert str(err.value).startswith("n must be")


def test_integer_bounds():
    assert check.integer("h", 7, minimum=0, maximum=7) == 7
    with pytest.raises(ValueError, match=r"h must be an integer >= 0 and <= 7, got 8"):
        check.integer("h", 8, minimum=0, maximum=7)


@pytest.mark.parametrize("value", [2.5, 2, np.float32(2.5), np.float64(2.5), np.array(2.5),
                                   np.int32(2)])
def test_real_takes_ints_and_floats(value):
    assert check.real("x", value) == float(value)
    assert type(check.real("x", value)) is float


@pytest.mark.parametrize("value, says", [
    (True, "x must be a real number, got True (a bool)"),
    (1 + 2j, "a complex"), (np.complex128(1), "a complex"), ("2.5", "a str"),
    (None, "NoneType"), (math.nan, "x must be finite, got nan"), (-math.inf, "finite"),
    ([1.0], "a list"),
])
def test_real_refuses_what_is_not_a_real_number(value, says):
    with pytest.raises(ValueError) as err:
        check.real("x", value)
    assert says in str(err.value)


def test_real_bounds_are_named():
    assert check.real("s", 1.0, minimum=1.0) == 1.0
    with pytest.raises(ValueError, match=r"^s must be a number > 0.0, got 0"):
        check.real("s", 0, above=0.0)
    with pytest.raises(ValueError, match=r"^p must be a number >= 0 and <= 1, got 1.5"):
        check.real("p", 1.5, minimum=0, maximum=1)
    with pytest.raises(ValueError, match=r"< 3"):
        check.real("x", 3, below=3)


@pytest.mark.needs("torch")
def test_zero_dimensional_tensors_are_numbers_and_bool_tensors_are_not():
    assert check.integer("n", torch.tensor(4)) == 4
    assert check.real("x", torch.tensor(2.5)) == 2.5
    assert check.flag("f", torch.tensor(True)) is True
    with pytest.raises(ValueError, match="n must be an integer"):
        check.integer("n", torch.tensor(True))  # torch would index it as 1
    with pytest.raises(ValueError, match="got the float"):
        check.integer("n", torch.tensor(2.0))


@pytest.mark.parametrize("value", ["no", "false", "off", "", 0, 1, 0.0, None, [True]])
def test_flag_refuses_what_if_would_misread(value):
    with pytest.raises(ValueError, match=r"^swa_full must be True or False, got "):
        check.flag("swa_full", value)


def test_flag_takes_python_and_numpy_bools():
    assert check.flag("f", True) is True and check.flag("f", np.False_) is False


def test_choice_is_exact():
    assert check.choice("style", "neox", ("neox", "gptj")) == "neox"
    for bad in ("NEOX", " neox", 1, None, b"neox"):
        with pytest.raises(ValueError, match=r"^style must be one of 'neox', 'gptj'; got "):
            check.choice("style", bad, ("neox", "gptj"))


def test_array_kinds_ranks_and_non_finite_values():
    a = np.zeros((2, 3), dtype=np.float32)
    assert check.array("q", a, kind="float", ndim=2) is a  # no copy
    assert check.array("p", [1, 2], kind="int").dtype.kind == "i"
    with pytest.raises(ValueError, match=r"^q must hold floating-point numbers, got dtype int"):
        check.array("q", np.zeros(3, dtype=int), kind="float")
    with pytest.raises(ValueError, match=r"^q must be 2-D or 3-D, got shape \(3,\)"):
        check.array("q", np.zeros(3), ndim=(2, 3))
    for bad in (np.array([True]), np.array(["1"]), np.array([1j]), np.array([None])):
        with pytest.raises(ValueError, match=r"^x must hold real numbers"):
            check.array("x", bad)
    with pytest.raises(ValueError, match=r"^x must be a rectangular array of numbers"):
        check.array("x", [[1.0, 2.0], [1.0]])
    with pytest.raises(ValueError, match=r"^x must be an array of numbers, got 'abc'"):
        check.array("x", "abc")
    b = np.ones((2, 4))
    b[1, 2] = np.nan
    b[1, 3] = np.inf
    with pytest.raises(ValueError, match=r"^k holds non-finite values \(2 of 8; the first, "
                                         r"nan, at index \(1, 2\)\)"):
        check.array("k", b)
    assert np.isnan(check.array("k", b, finite=False)).sum() == 1


def test_known_keys_names_the_key_and_a_near_miss():
    check.known_keys("rope_scaling", {"factor": 2}, {"factor", "rope_type"})
    with pytest.raises(ValueError, match=r"^rope_scaling\.facter is not a key this reads "
                                         r"\(it reads factor, rope_type\); did you mean "
                                         r"'factor'\?"):
        check.known_keys("rope_scaling", {"facter": 2}, {"factor", "rope_type"})
    with pytest.raises(ValueError, match=r"rope_scaling\.zzz is not a key this reads .*\)$"):
        check.known_keys("rope_scaling", {"zzz": 2}, {"factor", "rope_type"})


def test_text_and_function():
    assert check.text("needle", "x") == "x"
    with pytest.raises(ValueError, match=r"^needle must be a string, got 3 \(a int\)"):
        check.text("needle", 3)
    with pytest.raises(ValueError, match=r"^model must be callable"):
        check.function("model", "gpt")


def test_describe_bytes_names_the_largest_unit_reached():
    assert check.describe_bytes(1000) == "1000 bytes"
    assert check.describe_bytes(10**12) == "931.3 GiB"
    assert check.describe_bytes(64 * 10**12 * 4) == "232.8 TiB"
    assert check.describe_bytes(2**60 * 10**7) == f"{2**60 * 10**7:.3g} bytes"


def test_describe_shortens_long_values_and_shows_array_shapes():
    assert check.describe("x" * 100).startswith("'xxxx") and "...' (a str)" not in "x"
    assert len(check.describe("x" * 100)) < 80
    assert "of shape (2, 3), dtype float64" in check.describe(np.zeros((2, 3)))


# The strategies of tests/_bad.py generate only what the vocabulary rejects (else a bad-input
# test could pass a valid value and fail for the wrong reason).

@given(ints(minimum=1, maximum=9))
def test_bad_int_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.integer("n", value, minimum=1, maximum=9)


@given(reals(minimum=1.0, below=5.0))
def test_bad_real_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.real("x", value, minimum=1.0, below=5.0)


@given(flags())
def test_bad_flag_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.flag("f", value)


@given(choices(["neox", "gptj"]))
def test_bad_choice_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.choice("style", value, ("neox", "gptj"))


@given(texts())
def test_bad_text_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.text("needle", value)


@given(arrays_with(np.ones((2, 3)), kind="float", ranks=(2,)))
def test_bad_array_strategy_is_always_rejected(value):
    with pytest.raises(ValueError):
        check.array("q", value, kind="float", ndim=2)


def test_names_argument_is_whole_words():
    assert names_argument("k's last dim must equal q's head dim", "k")
    assert not names_argument("block_k must be >= 1", "k")
    assert names_argument("rope_scaling.factor must be >= 1", "rope_scaling.factor")
    assert not names_argument("rope_scaling.factors", "rope_scaling.factor")


# --------------------------------------------------------------------------- coverage

# Every public function and class of these modules must appear as a Case target in some test
# module's BAD_INPUTS list: a new function without bad-input tests fails here.
COMPUTE = ["attention", "engines", "kernel_plan", "kv_cache", "kvtask", "needles", "paged",
           "radix_cache", "rope", "softmax", "streaming", "tinylm", "tinylm_results", "traffic",
           "triton_attention", "triton_decode", "models.configs", "runtime", "models.weights",
           "models.describe", "models.tiny", "models.rope", "models.shape", "inspect_model",
           "models.gguf", "llamacpp", "widgets.attention", "widgets.kv_cache",
           "widgets.long_context", "widgets.paged", "widgets.rope", "widgets.tinylm",
           "widgets.triton", "widgets.windows"]
# Not listed: lessonlib.plots (draw functions that take an Axes and what the compute functions
# above returned, already checked; students call them only through the widgets) and
# lessonlib.checks (their arguments are students' answers: test_checks.py feeds every check a
# zoo of wrong forms and asserts a verdict, never an exception) and lessonlib.cli (its bad input
# is a line on stderr and exit status 2, not a ValueError: test_cli.py's tables check each).
# The test modules holding the cases (a module of tests needing torch or triton is skipped
# where they are absent by design, and so are the functions it covers).
CASE_MODULES = ["test_attention", "test_engines", "test_kernel_plan", "test_kv_cache",
                "test_kvtask", "test_needles", "test_paged", "test_radix_cache", "test_rope",
                "test_softmax", "test_streaming", "test_tinylm", "test_tinylm_results",
                "test_traffic", "test_triton_attention", "test_triton_decode",
                "test_models_configs", "test_runtime", "test_models_weights",
                "test_models_describe", "test_models_tiny", "test_models_rope", "test_models_shape",
                "test_inspect_model", "test_models_gguf", "test_llamacpp", "test_widgets_attention",
                "test_widgets_kv_cache", "test_widgets_long_context", "test_widgets_paged",
                "test_widgets_rope", "test_widgets_tinylm", "test_widgets_triton",
                "test_widgets_windows"]
NEEDS = {"tinylm": "torch", "triton_attention": "triton", "test_tinylm": "torch",
         "test_triton_attention": "triton", "triton_decode": "triton",
         "test_triton_decode": "triton", "llamacpp": "llama_cpp"}


def _takes_arguments(f):
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        return True
    return any(p.name != "self" for p in params.values())


def _public_api(module):
    """(qualified name, object) of every public function, class and method taking arguments.
    Frozen dataclasses are results that the functions return (their fields are not inputs);
    nn.Module forwards are covered through their class."""
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if inspect.isfunction(obj) and _takes_arguments(obj):
            yield f"{module.__name__}.{name}", obj
        elif inspect.isclass(obj):
            params = getattr(obj, "__dataclass_params__", None)
            if params is not None and params.frozen:
                continue
            if _takes_arguments(obj.__init__) and obj.__init__ is not object.__init__:
                yield f"{module.__name__}.{name}", obj
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__call__":
                    continue
                if inspect.isfunction(member) and _takes_arguments(member):
                    yield f"{module.__name__}.{name}.{attr}", member


def _absent(module_name):
    package = NEEDS.get(module_name)
    if package == "llama_cpp":  # the engine profile (make engine runs this test there too)
        return importlib.util.find_spec("llama_cpp") is None
    return package is not None and optional(package) is None


def test_every_public_function_has_bad_input_tests():
    covered = set()
    for name in CASE_MODULES:
        if _absent(name):
            continue
        module = importlib.import_module(name)
        cases = getattr(module, "BAD_INPUTS", [])
        assert all(isinstance(c, Case) for c in cases), name
        covered |= {id(c.target) for c in cases}
    missing = [qualified for module_name in COMPUTE if not _absent(module_name)
               for qualified, obj in _public_api(importlib.import_module(f"lessonlib.{module_name}"))
               if id(obj) not in covered]
    assert not missing, f"public functions without bad-input cases: {missing}"
