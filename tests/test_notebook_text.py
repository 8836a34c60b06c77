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
