"""lessonlib.checks.tinylm: each check accepts the right answer (computed here independently)
and rejects the typical wrong ones with a useful message."""
import numpy as np
import pytest

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


# --------------------------------------------------------------------------- exercise 2

def test_uniform_bos_weight_accepts_the_mean_of_one_over_keys_seen():
    total = 0.0
    for p in range(32, 256):  # the query at p sees keys 0..p
        total += 1.0 / len(range(0, p + 1))
    assert C.uniform_bos_weight(total / (256 - 32))
    assert C.uniform_bos_weight(np.float32(total / 224))


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
