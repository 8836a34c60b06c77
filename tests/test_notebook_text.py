"""The notebooks' prose says what their code computes: each test here holds one sentence (or
one printed claim) to the number or rule it states, and once caught a wrong one."""
import json
import math
import os
import re

import numpy as np

from _support import ROOT


def cells(stem):
    with open(os.path.join(ROOT, "notebooks", f"{stem}.ipynb")) as f:
        return json.load(f)["cells"]


def text(cell):
    return "".join(cell["source"])


def markdown(stem):
    return "\n".join(text(c) for c in cells(stem) if c["cell_type"] == "markdown")


def outputs(stem):
    return "\n".join("".join(o.get("text", "")) for c in cells(stem) if c["cell_type"] == "code"
                     for o in c.get("outputs", []))


def sentences(prose):
    return re.split(r"(?<=[.!?])\s+(?=[A-Z*$])", " ".join(prose.split()))


# ------------------------------------------------------------------ 02

def test_02_says_a_leading_masked_key_needs_the_guard():
    """It said the first step's factor e^-inf "does no harm" and stopped there: with a masked
    first key the formula computes -inf - (-inf) = NaN. The text names the case and the guard,
    the code cell prints the NaN and the guarded trace."""
    prose = markdown("02_online_softmax")
    rule = next(c for c in cells("02_online_softmax") if text(c).startswith("## The one-pass"))
    assert "NaN" in text(rule) and "masked" in text(rule), text(rule)
    assert "two masked keys first: [(-inf, 0.0), (-inf, 0.0), (1.0, 1.0)]" in \
        outputs("02_online_softmax")
    assert "masked keys" in prose.split("## Exercises")[1].split("**2.**")[0]


# ------------------------------------------------------------------ 03

def test_03_by_hand_traffic_counts_hold_when_n_is_not_a_multiple_of_b():
    """The counting cell's own asserts, run again where B does not divide n: with n // B they
    held at n = 64, B = 16 only by luck (the text and the summary count ceil(n / B) blocks)."""
    from lessonlib.traffic import naive_traffic, tiled_traffic
    cell = next(text(c) for c in cells("03_tiled_attention")
                if c["cell_type"] == "code" and "tiled_traffic(n, d, B)" in text(c))
    lines = [ln for ln in cell.splitlines() if not ln.startswith("print")]
    for n, d, B in [(64, 8, 16), (100, 8, 16), (300, 16, 64), (17, 4, 32)]:
        exec("\n".join(lines), {"naive_traffic": naive_traffic, "tiled_traffic": tiled_traffic,
                                "n": n, "d": d, "B": B})
