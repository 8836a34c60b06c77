"""lessonlib.checks.long_context: the reference solutions pass, typical mistakes get a hint."""
import math

import pytest
from _support import solutions

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
