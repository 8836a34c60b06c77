"""lessonlib.checks.kv_cache: the reference solutions pass, typical mistakes get their hint."""

import numpy as np
import pytest
from _support import optional, solutions

from lessonlib.checks import kv_cache as checks

SOLUTIONS = vars(solutions("05_kv_cache"))
GIB = 2 ** 30
NAMES = ["kv_cache_gib", "mla_cache_gib", "kv_head_map"]


# Qwen2.5-7B: 28 layers, 28 query heads, 4 KV heads, head_dim 128; 32,768 tokens, F16.
QWEN = dict(layers=28, hq=28, hkv=4, d=128, n=32768)


@pytest.mark.parametrize("answer, hint", [
    (2 * 28 * 4 * 128 * 2 * 32768 / GIB, None),
    (28 * 4 * 128 * 2 * 32768 / GIB, "key AND a value"),          # forgot the factor 2
    (2 * 28 * 28 * 128 * 2 * 32768 / GIB, "query heads"),          # query heads, not KV heads
    (28 * 4 * 128 * 32768 / GIB, "Both factors of 2"),
    (2 * 4 * 128 * 2 * 32768 / GIB, "one layer"),
    (2 * 28 * 4 * 128 * 2 * 32768 / 1e9, "2**30"),
    (3.0, "Not 3"),
    ("1.75", "one finite number"),
])
def test_kv_cache_gib_hints(answer, hint):
    verdict = checks.kv_cache_gib(answer)
    if hint is None:
        assert verdict.ok is True
    else:
        assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("answer, hint", [
    (2 * 576 * 61 * 2 * 163840 / GIB, "no separate V"),               # doubled like K and V
    (512 * 61 * 2 * 163840 / GIB, "RoPE key"),                         # forgot the rope part
    (576 * 61 * 2 * 163840 * 128 / GIB, "shared by all heads"),
    (576 * 2 * 163840 / GIB, "one layer"),
    (61 * 128 * (192 + 128) * 2 * 163840 / GIB, "without MLA"),
    (576 * 61 * 163840 / GIB, "bytes"),
])
def test_mla_cache_gib_hints(answer, hint):
    verdict = checks.mla_cache_gib(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("answer, hint", [
    ([h % 8 for h in range(32)], "round-robin"),
    ([h // 8 for h in range(32)], "group size"),
    (list(range(32)), "MHA"),
    ([0, 1, 2, 3, 4, 5, 6, 7], "one entry per query head"),
    ([h // 4 + 1 for h in range(32)], "numbered 0..7"),
    ([h // 4 for h in range(31)] + [6], "check head 31"),
    ("0000", "list of 32 integers"),
])
def test_kv_head_map_hints(answer, hint):
    verdict = checks.kv_head_map(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_kv_head_map_accepts_arrays():
    import numpy as np
    assert checks.kv_head_map(np.arange(32) // 4).ok is True


# ------------------------------------------------------------------ answers in every form


torch = optional("torch")


def test_kv_head_map_computed_with_slash_is_wrong_with_the_floor_division_hint():
    verdict = checks.kv_head_map([h / 4 for h in range(32)])  # 0, 0.25, 0.5, ...: not truncated
    assert verdict.ok is False and "//" in verdict.message and "fractions" in verdict.message
    verdict = checks.kv_head_map(np.arange(32) / 8)  # another division, still not whole
    assert verdict.ok is False and "not a whole number" in verdict.message
    assert "//" in verdict.message


@pytest.mark.parametrize("answer", [
    np.floor(np.arange(32) / 4),               # whole floats: the right indices
    tuple(h // 4 for h in range(32)),
    map(lambda h: h // 4, range(32)),
    [np.int64(h // 4) for h in range(32)],
])
def test_kv_head_map_accepts_whole_numbers_in_any_container(answer):
    assert checks.kv_head_map(answer).ok is True


@pytest.mark.parametrize("answer, hint", [
    ([str(h // 4) for h in range(32)], "without quotes"),
    ({h // 4 for h in range(32)}, "no order"),
    ([complex(h // 4, 1) for h in range(32)], "complex number"),
    ([True] * 32, "True and False"),
])
def test_kv_head_map_refuses_what_is_not_a_list_of_integers(answer, hint):
    verdict = checks.kv_head_map(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("check", [checks.kv_cache_gib, checks.mla_cache_gib])
def test_cache_sizes_accept_arrays_and_tensors(check):
    ref = SOLUTIONS[check.__name__]
    assert check(np.array(ref)).ok and check(np.float32(ref)).ok
    if torch is not None:
        assert check(torch.tensor(ref)).ok
    assert check(complex(ref, 1)).ok is False
