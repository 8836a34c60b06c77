"""lessonlib.checks.tinylm: each check accepts the right answer (computed here independently)
and rejects the typical wrong ones with a useful message."""
import os
import re
from fractions import Fraction

import numpy as np
import pytest
from _support import ROOT, optional, solutions

from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import tinylm as C

CHECKS = [C.pi_config, C.uniform_bos_weight, C.streaming_positions]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_stub_says_not_attempted(check):
    v = check(None)
    assert v.ok is None and NOT_ATTEMPTED in repr(v) and "not attempted" in repr(v)


# --------------------------------------------------------------------------- exercise 1

@pytest.mark.parametrize("answer", [{"rope_type": "linear", "factor": 4.0},
                                    {"type": "linear", "factor": 4}])
def test_pi_config_accepts_linear_4(answer):
    assert C.pi_config(answer)


@pytest.mark.parametrize("answer,hint", [
    ({"rope_type": "linear", "factor": 2.0}, "beyond the trained"),
    ({"rope_type": "linear", "factor": 8.0}, "squeezes"),
    ({"rope_type": "linear", "factor": 1.0}, "nothing changes"),
    ({"rope_type": "linear", "factor": 0.25}, "rejects"),
    ({"rope_type": "ntk", "factor": 4.0}, "same factor"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}, "same factor"),
    ({"rope_type": "linear"}, "rejects"),
    ("linear", "dict"),
    (4.0, "dict"),
])
def test_pi_config_rejects(answer, hint):
    v = C.pi_config(answer)
    assert v.ok is False and hint in v.message, v


@pytest.mark.parametrize("kind", ["yarn", "llama3", "longrope", "dynamic", "ntk"])
@pytest.mark.parametrize("key", ["rope_type", "type"])
def test_pi_config_names_pi_as_linear_before_the_library_asks_for_other_keys(kind, key):
    """A bare {"rope_type": "yarn", "factor": 4} once got lessonlib.rope's "original_max_
    position_embeddings is required" (a key PI does not need): the hint is that PI is linear."""
    v = C.pi_config({key: kind, "factor": 4.0})
    assert v.ok is False and "same factor" in v.message and "'linear'" in v.message, v
    assert "rejects" not in v.message and "required" not in v.message, v


def test_pi_config_default_rope_is_not_pi():
    v = C.pi_config({"rope_type": "default"})
    assert v.ok is False and "no scaling" in v.message and "'linear'" in v.message, v


# --------------------------------------------------------------------------- exercise 2

def test_uniform_bos_weight_accepts_the_mean_of_one_over_keys_seen():
    total = 0.0
    for p in range(32, 256):  # the query at p sees keys 0..p
        total += 1.0 / len(range(0, p + 1))
    assert C.uniform_bos_weight(total / (256 - 32))
    assert C.uniform_bos_weight(np.float32(total / 224))


def test_the_reference_answer_and_its_comment_are_exact():
    """instructors/solutions/10: the mean of 1/(p + 1) over p = 32..255 is 0.0092225..., and
    the comment beside it rounds that value (it once said 0.0078)."""
    exact = float(sum(Fraction(1, p + 1) for p in range(32, 256)) / 224)
    assert solutions("10_real_model_long_context").uniform_bos_weight == pytest.approx(
        exact, rel=1e-12)
    with open(os.path.join(ROOT, "instructors", "solutions",
                           "10_real_model_long_context.py")) as f:
        comment = re.search(r"^uniform_bos_weight = .*# about (0\.\d+)$", f.read(), re.M)
    digits = len(comment.group(1)) - 2
    assert f"{exact:.{digits}f}" == comment.group(1) and digits >= 4


@pytest.mark.parametrize("answer,hint", [
    (np.mean(1.0 / np.arange(32, 256)), "off by one"),
    (1 / 256, "all 256 keys"),
    (1.0 / (np.mean(np.arange(32, 256)) + 1), "mean of 1/x"),
    (0.5, "not yet"),
    ([0.1, 0.2], "one number"),
])
def test_uniform_bos_weight_rejects(answer, hint):
    v = C.uniform_bos_weight(answer)
    assert v.ok is False and hint in v.message, v


# --------------------------------------------------------------------------- exercise 3

RIGHT_HELD = [0, 1, 2, 3] + list(range(1000 - 251, 1001))


def test_streaming_positions_accepts_sinks_plus_recent_and_slot_255():
    assert len(RIGHT_HELD) == 256
    assert C.streaming_positions((RIGHT_HELD, 255))
    assert C.streaming_positions((np.array(RIGHT_HELD[::-1]), np.int64(255)))


@pytest.mark.parametrize("answer,hint", [
    ((RIGHT_HELD, 1000), "original position"),
    ((RIGHT_HELD, 0), "last slot"),
    ((list(range(1000 - 255, 1001)), 255), "sinks"),
    (([0, 1, 2, 3] + list(range(1000 - 252, 1001)), 255), "off by one"),
    (([0, 1, 2, 3] + list(range(1000 - 250, 1001)), 255), "off by one"),
    (([0, 1, 2, 3] + list(range(500, 1001)), 255), "the latest"),
    (42, "pair"),
    ((RIGHT_HELD, "slot"), "one number"),
])
def test_streaming_positions_rejects(answer, hint):
    v = C.streaming_positions(answer)
    assert v.ok is False and hint in v.message, v


@pytest.mark.parametrize("start", [1000 - 252, 1000 - 250])
def test_streaming_positions_off_by_one_hint_does_not_give_the_answer(start):
    """It once said "the last 252 being 749..1000": the answer itself."""
    v = C.streaming_positions(([0, 1, 2, 3] + list(range(start, 1001)), 255))
    assert v.ok is False and "off by one" in v.message, v
    assert "749" not in v.message and not re.search(r"\.\.\s*1,?000", v.message), v


# --------------------------------------------------------------------------- answers in every form


torch = optional("torch")


@pytest.mark.parametrize("answer", [
    {"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 1.0},
    {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},  # transformers 5 layout
    {"rope_type": "linear", "factor": np.float32(4.0)},
])
def test_pi_config_accepts_legal_keys_with_the_models_values(answer):
    assert C.pi_config(answer), C.pi_config(answer)


@pytest.mark.parametrize("answer,hint", [
    ({"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 0.5}, "16 of the head's 32"),
    ({"rope_type": "linear", "factor": 4.0, "partial_rotary_factor": 0.3}, "rejects"),
    ({"rope_type": "linear", "factor": 4.0, "rope_theta": 40000.0}, "keeps the base"),
    ({"rope_scaling": {"rope_type": "linear", "factor": 4.0}}, "dict itself"),
    ({"rope_type": "linear", "factor": "4"}, "rejects"),
    ({"rope_type": "linear", "factor": 4 + 1j}, "rejects"),
])
def test_pi_config_judges_what_it_is_given(answer, hint):
    v = C.pi_config(answer)
    assert v.ok is False and hint in v.message, v


def test_uniform_bos_weight_forms_and_close_digits():
    ref = float(np.mean(1.0 / np.arange(33, 257)))
    assert C.uniform_bos_weight(np.array(ref)) and C.uniform_bos_weight(complex(ref, 0))
    if torch is not None:
        assert C.uniform_bos_weight(torch.tensor(ref))  # float32: within 1e-6
    v = C.uniform_bos_weight(0.0092)  # 0.00922254... typed with two digits
    assert v.ok is False and v.message.startswith("Close:") and "more digits" in v.message
    v = C.uniform_bos_weight(0.009)  # one digit: the off-by-one 0.00934 rounds the same
    assert v.ok is False and "so is a typical slip" in v.message
    assert not C.uniform_bos_weight(0.0093).message.startswith("Close")
    for bad in ("0.0092", 0.0092 + 1j, True):
        v = C.uniform_bos_weight(bad)
        assert v.ok is False and "number" in v.message


def test_streaming_positions_reads_whole_numbers_only():
    assert C.streaming_positions((RIGHT_HELD, 255.0))
    assert C.streaming_positions(iter((np.array(RIGHT_HELD, dtype=float), np.array(255))))
    v = C.streaming_positions((RIGHT_HELD, "255"))
    assert v.ok is False and "without quotes" in v.message
    v = C.streaming_positions((RIGHT_HELD, 254.5))
    assert v.ok is False and "not a whole number" in v.message
    v = C.streaming_positions((RIGHT_HELD[:-1] + [999.5], 255))
    assert v.ok is False and "not a whole number" in v.message
