"""Every numeric warm-up says the precision it wants, and its check's tolerance is that
precision: the answer rounded as asked passes, an answer off by more than the asked digit does
not. (A student once had 1.8 rejected for 1.75 with no word on the digits wanted.)"""
import json
import math
import os
import re

import pytest

from _support import ROOT, solutions
from lessonlib import checks
from lessonlib.checks import SIGNIFICANT_DIGITS, digits_tolerance

# (notebook, check): "digits" (a number, SIGNIFICANT_DIGITS significant digits) or "whole" (a
# count, exact). Every value exercise of these notebooks whose answer is one number is here.
NUMERIC = {
    ("01_attention_memory", "attention", "score_matrix_gib"): "digits",
    ("01_attention_memory", "attention", "unfused_scores_mib"): "digits",
    ("01_attention_memory", "attention", "attention_share"): "digits",
    ("02_online_softmax", "attention", "sink_share"): "digits",
    ("03_tiled_attention", "attention", "tiled_reads"): "whole",
    ("03_tiled_attention", "attention", "small_block_ratio"): "digits",
    ("03_tiled_attention", "attention", "flash_io_floats"): "whole",
    ("04_flash_attention_triton", "triton", "grid_programs"): "whole",
    ("04_flash_attention_triton", "triton", "nan_guard_rows"): "whole",
    ("07_rope", "rope", "never_turning"): "whole",
    ("07_rope", "rope", "chunk_position"): "whole",
    ("07_rope", "rope", "product_rounding"): "digits",
    ("08_rope_scaling", "rope", "ntk_base"): "digits",
    ("08_rope_scaling", "rope", "vllm_length"): "whole",
    ("08_rope_scaling", "rope", "yarn_score_factor"): "digits",
    ("08_rope_scaling", "rope", "pi_overshoot"): "digits",
    ("09_long_context_cost_and_needles", "long_context", "crossover_tokens"): "digits",
    ("09_long_context_cost_and_needles", "long_context", "prompt_cost_ratio"): "digits",
    ("10_real_model_long_context", "tinylm", "uniform_bos_weight"): "digits",
    ("10_real_model_long_context", "tinylm", "floor_perplexity"): "digits",
    ("10_real_model_long_context", "tinylm", "export_row"): "whole",
}
PHRASE = {"digits": f"{SIGNIFICANT_DIGITS} significant digits", "whole": "whole number"}


def _cell(stem, name):
    with open(os.path.join(ROOT, "notebooks", f"{stem}.ipynb")) as f:
        nb = json.load(f)
    return next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"
                and re.search(rf"^checks\.\w+\.{name}\(", "".join(c["source"]), re.M))


def test_every_numeric_warm_up_of_these_notebooks_is_listed():
    for stem in {s for s, _, _ in NUMERIC}:
        mod = solutions(stem)
        for name, value in vars(mod).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and any(callable(getattr(getattr(checks, t), name, None)) for t in
                            ("attention", "triton", "rope", "long_context", "tinylm")):
                assert any(n == name for s, _, n in NUMERIC if s == stem), (stem, name)


@pytest.mark.parametrize("stem, topic, name", sorted(NUMERIC), ids=lambda v: str(v))
def test_the_exercise_cell_states_its_precision(stem, topic, name):
    cell = _cell(stem, name)
    stub = next(line for line in cell.splitlines() if line.startswith("answer = None"))
    assert PHRASE[NUMERIC[stem, topic, name]] in stub, stub


@pytest.mark.parametrize("stem, topic, name", sorted(NUMERIC), ids=lambda v: str(v))
def test_the_tolerance_is_the_stated_precision(stem, topic, name):
    check = getattr(getattr(checks, topic), name)
    expected = float(getattr(solutions(stem), name))
    if NUMERIC[stem, topic, name] == "whole":
        assert check(int(round(expected))).ok is True
        for off in (-1, 1):
            assert check(int(round(expected)) + off).ok is False
        return
    rounded = float(f"{expected:.{SIGNIFICANT_DIGITS - 1}e}")
    assert check(rounded).ok is True, (rounded, check(rounded))
    unit = 2 * digits_tolerance(expected, SIGNIFICANT_DIGITS)  # one unit in the asked digit
    for off in (-1.5, 1.5):
        assert check(expected + off * unit).ok is False, expected + off * unit
    coarse = float(f"{expected:.{SIGNIFICANT_DIGITS - 2}e}")
    if abs(coarse - expected) > unit / 2:  # rounded to fewer digits than asked: close
        verdict = check(coarse)
        assert verdict.ok is False and "more digits" in verdict.message, verdict


def test_digits_tolerance_is_half_a_unit_in_the_last_asked_digit():
    assert math.isclose(digits_tolerance(0.63212, 3), 0.0005, rel_tol=1e-6)
    assert math.isclose(digits_tolerance(37713.8, 3), 50, rel_tol=1e-6)
    assert math.isclose(digits_tolerance(1.75, 3), 0.005, rel_tol=1e-6)
    assert digits_tolerance(0.0, 3) == 0.0
