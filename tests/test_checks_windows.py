"""lessonlib.checks.windows: the reference solutions pass, typical mistakes get their hint."""

import numpy as np
import pytest
from _support import solutions

from lessonlib.checks import windows as checks

SOLUTIONS = vars(solutions("06_sliding_windows_and_sinks"))
MIB = 2 ** 20
NAMES = ["receptive_field_tokens", "swa_cells", "sliding_layers_mib", "streaming_cache",
         "context_shift"]


@pytest.mark.parametrize("answer, hint", [
    (32 * 4096, "W instead of W - 1"),
    (4095, "one layer"),
    (4096, "one layer's window"),
    (31 * 4095, "not 31"),
    (32 * 4095 + 1, "distance back"),
    (1000, "Not 1,000"),
    ("131040", "whole number"),
])
def test_receptive_field_hints(answer, hint):
    verdict = checks.receptive_field_tokens(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


@pytest.mark.parametrize("answer, hint", [
    (128 * 2 + 800, "multiple of 256"),      # forgot the 256 padding
    (1024, "own window"),                     # forgot n_seq: pad(128 + 800)
    (928, "Two slips"),
    (256, "micro-batch"),                     # forgot n_ubatch
    (128, "window alone"),
    (32768, "global layer"),
    (2048, "added once"),                     # pad(2 x (128 + 800))
    (700, "pad(min(n_ctx"),
])
def test_swa_cells_hints(answer, hint):
    verdict = checks.swa_cells(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


SLOT = 2 * 8 * 64 * 2  # gpt-oss-20b: K and V, 8 KV heads x 64, BF16


@pytest.mark.parametrize("answer, hint", [
    (12 * 128 * SLOT / MIB, "plus one"),                 # exact window, no block rounding
    (12 * 8192 * 16 * SLOT / MIB, "hybrid manager disabled"),
    (12 * 144 * 2 * 64 * 64 * 2 / MIB, "KV heads"),      # 64 query heads
    (12 * 144 * 8 * 64 * 2 / MIB, "key AND a value"),
    (24 * 144 * SLOT / MIB, "Only the 12 sliding layers"),
    (144 * SLOT / MIB, "one layer"),
])
def test_sliding_layers_mib_hints(answer, hint):
    verdict = checks.sliding_layers_mib(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_sliding_layers_mib_asks_for_three_significant_digits():
    for answer in (3.375, 3.38, 3.37):
        assert checks.sliding_layers_mib(answer).ok is True, answer
    verdict = checks.sliding_layers_mib(3.4)
    assert verdict.ok is False and "give more digits" in verdict.message, verdict
    assert checks.sliding_layers_mib(3.36).ok is False


# ------------------------------------------------------------------ answers in every form



def test_counts_accept_whole_floats_and_refuse_fractions():
    assert checks.receptive_field_tokens(131040.0).ok is True
    assert checks.receptive_field_tokens(np.array(131040)).ok is True
    verdict = checks.receptive_field_tokens(131040.5)
    assert verdict.ok is False and "not a whole number" in verdict.message
    assert checks.swa_cells(1280.0).ok is True
    verdict = checks.swa_cells(1280.4)
    assert verdict.ok is False and "not a whole number" in verdict.message
    assert checks.receptive_field_tokens(131040 + 1j).ok is False


# ------------------------------------------------------------------ the build: StreamingLLM

def _cache(n_sink, n_recent, n, *, recent=None, sinks=True, rope="slots", clamp=True,
           evict=True):
    """A student's streaming_cache(n_sink, n_recent, n), with one slip chosen by keyword."""
    recent = n_recent if recent is None else recent
    if not evict:
        held = list(range(n))
    elif not sinks:
        held = list(range(max(0, n - n_sink - n_recent), n))
    elif clamp:
        held = list(range(min(n_sink, n))) + list(range(max(n_sink, n - recent), n))
    else:
        held = list(range(n_sink)) + list(range(n - recent, n))
    return held, {"slots": list(range(len(held))), "original": held,
                  "from_one": list(range(1, len(held) + 1))}[rope]


def test_streaming_cache_reference_and_forms_are_correct():
    ref = SOLUTIONS["streaming_cache"]
    assert checks.streaming_cache(ref).ok is True
    assert checks.streaming_cache(_cache).ok is True
    assert checks.streaming_cache(lambda s, r, n: tuple(np.array(x, dtype=float)
                                                        for x in ref(s, r, n))).ok is True
    assert checks.streaming_cache(lambda s, r, n: [iter(x) for x in ref(s, r, n)]).ok is True


@pytest.mark.parametrize("slip, hint", [
    (dict(sinks=False), "plain window"),
    (dict(rope="original"), "slot indices 0 .. size - 1"),
    (dict(rope="from_one"), "count from 0"),
    (dict(evict=False), "Nothing was evicted"),
    (dict(recent="plus"), "too many"),
    (dict(recent="minus"), "too few"),
    (dict(clamp=False), "nothing is evicted, and the cache holds tokens 0 .. n - 1"),
], ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_streaming_cache_names_each_typical_slip(slip, hint):
    if slip.get("recent") in ("plus", "minus"):
        step = 1 if slip["recent"] == "plus" else -1
        fn = lambda s, r, n: _cache(s, r, n, recent=r + step)  # noqa: E731
    else:
        fn = lambda s, r, n: _cache(s, r, n, **slip)  # noqa: E731
    verdict = checks.streaming_cache(fn)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_streaming_cache_junk_and_other_errors():
    def window_for_all(n_sink, n_recent, n):  # no sinks ever: a plain window of n_sink + n_recent
        held = list(range(max(0, n - n_sink - n_recent), n))
        return held, list(range(len(held)))

    verdict = checks.streaming_cache(window_for_all)
    assert verdict.ok is False and "plain window" in verdict.message
    for junk, hint in [(lambda s, r, n: list(range(n)), "two lists"),
                       (lambda s, r, n: (["0"], [0]), "without quotes"),
                       (lambda s, r, n: ([0.5], [0]), "not a whole number"),
                       (lambda s, r, n: 1 / 0, "ZeroDivisionError"),
                       (lambda s, r, n: ([1, 2], [0, 1]), "returned positions")]:
        verdict = checks.streaming_cache(junk)
        assert verdict.ok is False and hint in verdict.message, (hint, verdict.message)
    assert checks.streaming_cache(lambda s, r, n: None).ok is None


def test_streaming_cache_cases_cover_the_edges():
    shapes = [c[:3] for c in checks._stream_cases()]
    assert any(n == 0 for _, _, n in shapes) and any(0 < n < s for s, _, n in shapes)
    assert any(s == 0 for s, _, _ in shapes) and any(n == s + r for s, r, n in shapes)
    assert any(n == s + r + 1 for s, r, n in shapes) and len(shapes) >= 25


# ------------------------------------------------------------------ going deeper: context shift

def test_context_shift_reference_and_forms_are_correct():
    ref = SOLUTIONS["context_shift"]
    assert checks.context_shift(ref).ok is True
    assert checks.context_shift(lambda n, c, k: np.array(ref(n, c, k), dtype=float)).ok is True
    assert checks.context_shift(lambda n, c, k: iter(ref(n, c, k))).ok is True
    assert checks.context_shift(lambda n, c, k: None).ok is None


def _shift(n, n_ctx, n_keep, *, bos=1, cap=True, full=None, drop=None, one=False):
    """A student's context_shift with one slip chosen by keyword."""
    keep = n_keep + bos
    keep = min(n_ctx - 4, keep) if cap else keep
    n_left = n_ctx - 1 - keep
    drop = n_left // 2 if drop is None else drop(n_left)
    held = []
    for token in range(n):
        if len(held) >= (n_ctx - 1 if full is None else full(n_ctx)):
            del held[keep:keep + (1 if one else max(drop, 0))]
        held.append(token)
    return held


@pytest.mark.parametrize("slip, hint", [
    (dict(bos=0), "BOS token is kept too"),
    (dict(full=lambda c: c), "one token earlier"),
    (dict(drop=lambda m: (m + 1) // 2), "rounded down"),
    (dict(cap=False), "n_ctx - 4"),
    (dict(one=True), "one token per step"),
    (dict(full=lambda c: 10 ** 9), "Nothing was dropped"),
], ids=["bos-dropped", "shift-late", "drop-rounded-down", "no-cap", "one-per-step",
        "nothing-dropped"])
def test_context_shift_names_each_typical_slip(slip, hint):
    verdict = checks.context_shift(lambda n, c, k: _shift(n, c, k, **slip))
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_context_shift_lookup_table_and_junk_fail():
    table = {case[:3]: case[3] for case in checks._shift_cases()[:3]}  # the probes the check shows
    verdict = checks.context_shift(lambda n, c, k: table.get((n, c, k), list(range(n))))
    assert verdict.ok is False and "Right until the first shift" in verdict.message, verdict
    for junk, hint in [(lambda n, c, k: 1 / 0, "ZeroDivisionError"),
                       (lambda n, c, k: "0 1 2", "list of whole numbers"),
                       (lambda n, c, k: [0.5] * n, "not a whole number"),
                       (lambda n, c, k: list(range(n))[::-1], "in order")]:
        verdict = checks.context_shift(junk)
        assert verdict.ok is False and hint in verdict.message, (hint, verdict.message)


def test_context_shift_cases_cover_the_edges():
    shapes = [c[:3] for c in checks._shift_cases()]
    assert any(n == 0 for n, _, _ in shapes) and any(n == c - 1 for n, c, _ in shapes)
    assert any(n == c for n, c, _ in shapes) and any(k == 0 and n > c for n, c, k in shapes)
    assert any(k + 1 > c - 4 and n > c for n, c, k in shapes)
    assert any(c == 5 for _, c, _ in shapes) and len(shapes) >= 25
