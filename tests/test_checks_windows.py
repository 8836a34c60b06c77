"""lessonlib.checks.windows: the reference solutions pass, typical mistakes get their hint."""

import numpy as np
import pytest
from _support import solutions

from lessonlib.checks import windows as checks

SOLUTIONS = vars(solutions("06_sliding_windows_and_sinks"))
MIB = 2 ** 20
NAMES = ["receptive_field_tokens", "swa_cells", "sliding_layers_mib", "streaming_positions"]


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


@pytest.mark.parametrize("answer, hint", [
    (list(range(19, 31)), "sinks"),
    (list(range(12)), "RoPE positions"),
    ([0, 1, 2, 3] + list(range(22, 30)), "newest token"),
    ([0, 1, 2, 3] + list(range(22, 31)), "exactly 8 recent"),
    (list(range(31)), "Nothing was evicted"),
    ([5, 6], "Keep positions 0..3"),
    (30, "list of original positions"),
])
def test_streaming_positions_hints(answer, hint):
    verdict = checks.streaming_positions(answer)
    assert verdict.ok is False and hint in verdict.message, verdict.message


def test_streaming_positions_accepts_any_order():
    assert checks.streaming_positions(list(range(30, 22, -1)) + [3, 2, 1, 0]).ok is True


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


def test_streaming_positions_forms():
    right = [0, 1, 2, 3] + list(range(23, 31))
    assert checks.streaming_positions(set(right)).ok is True
    assert checks.streaming_positions(np.array(right, dtype=float)).ok is True
    assert checks.streaming_positions(p for p in right).ok is True
    verdict = checks.streaming_positions(right[:-1] + [29.5])
    assert verdict.ok is False and "not a whole number" in verdict.message
    verdict = checks.streaming_positions([str(p) for p in right])
    assert verdict.ok is False and "without quotes" in verdict.message
