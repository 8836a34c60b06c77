"""lessonlib.checks.long_context: the reference solutions pass, typical mistakes get a hint."""
import math

import numpy as np
import pytest
from _support import needs, optional, solutions

from lessonlib.checks import NOT_ATTEMPTED
from lessonlib.checks import long_context as checks

SOLUTIONS = vars(solutions("09_long_context_cost_and_needles"))
NAMES = ["crossover_tokens", "prompt_cost_ratio", "needle_found"]
P, L, Q = 8.03e9, 32, 4096


@pytest.mark.parametrize("answer, hint", [
    (P / (2 * Q * L), "causal mask"),
    (P / Q, "every one of the 32 layers"),
    (P / (1024 * L), "every query head"),      # KV dim 8 x 128 instead of q_dim
    (math.sqrt(P / (Q * L)), "not a square root"),
    (1e5, "solve for n"),
])
def test_crossover_hints(answer, hint):
    verdict = checks.crossover_tokens(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def total(n, causal=True):
    return 2 * P * n + (2 if causal else 4) * n * n * Q * L


@pytest.mark.parametrize("answer, hint", [
    (32, "weights alone"),
    (1024, "attention alone"),
    (total(131072, False) / total(4096, False), "causal mask"),
    (total(4096) / total(131072), "Upside down"),
    (2 * 131072 ** 2 * Q * L / total(4096), "use its total"),
])
def test_prompt_cost_ratio_hints(answer, hint):
    verdict = checks.prompt_cost_ratio(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def _found(count_needle=True, first_inclusive=False, first=64, recent=3000, from_end=False):
    def found(length, depth):
        at = math.floor(length * (100 - depth if from_end else depth) / 100)
        to_end = length - at + (1 if count_needle else 0)
        return to_end <= recent or (at <= first if first_inclusive else at < first)
    return found


@pytest.mark.parametrize("answer, hint", [
    (_found(count_needle=False), "The needle is a word too"),          # the off-by-one
    (_found(first_inclusive=True), "indexes 0..63"),
    (_found(first=0), "first 64 words"),
    (_found(recent=0), "last 3,000 words"),
    (_found(from_end=True), "Depth counts from the start"),
    (lambda n, d: True, "At length 4,000, depth 25%"),
    (lambda n, d: "yes", "return True or False"),
    (lambda n, d: 1 / 0, "ZeroDivisionError"),
    (True, "Give a function"),
])
def test_needle_found_hints(answer, hint):
    verdict = checks.needle_found(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


# ------------------------------------------------------------------ answers in every form



torch = optional("torch")
RIGHT = SOLUTIONS["needle_found"]


@pytest.mark.parametrize("wrap", [
    lambda b: int(b),                 # 0/1, e.g. int(at < 64 or ...)
    lambda b: np.bool_(b),
    lambda b: np.array(b),            # a 0-d bool array
    lambda b: np.int64(b),
    lambda b: np.array(int(b)),
], ids=["int", "np.bool_", "0-d bool", "np.int64", "0-d int"])
def test_needle_found_accepts_bools_and_zero_one(wrap):
    assert checks.needle_found(lambda n, d: wrap(RIGHT(n, d))).ok is True


@needs("torch")
def test_needle_found_accepts_a_bool_tensor():
    assert checks.needle_found(lambda n, d: torch.tensor(RIGHT(n, d))).ok is True


@pytest.mark.parametrize("answer, hint", [
    (lambda n, d: 2 * RIGHT(n, d), "return True or False"),     # 2 is not a truth value
    (lambda n, d: float(RIGHT(n, d)), "return True or False"),  # 1.0: a probability?
    (lambda n, d: None if d > 50 else RIGHT(n, d), "returned None"),
    (lambda n, d: str(RIGHT(n, d)), "return True or False"),
])
def test_needle_found_refuses_other_values(answer, hint):
    verdict = checks.needle_found(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_needle_found_stub_is_not_attempted():
    def found(length, depth):
        return None  # your code

    assert checks.needle_found(found).message == NOT_ATTEMPTED


@pytest.mark.parametrize("check", [checks.crossover_tokens, checks.prompt_cost_ratio])
def test_cost_answers_accept_arrays_and_tensors(check):
    ref = SOLUTIONS[check.__name__]
    assert check(np.array(ref)).ok and check(np.float32(ref)).ok and check(complex(ref, 0)).ok
    if torch is not None:
        assert check(torch.tensor(ref)).ok
    assert check(str(ref)).ok is False and check(complex(ref, 1)).ok is False
