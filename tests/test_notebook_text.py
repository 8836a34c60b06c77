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


# ------------------------------------------------------------------ 10

TEN = "10_real_model_long_context"


def test_10_names_the_converter_that_permutes_neox_to_adjacent_pairs():
    """NeoX halves to adjacent pairs is llama.cpp's GGUF converter; HuggingFace's converter goes
    the other way (Meta's adjacent pairs to NeoX). The text and the docstring once said HF."""
    said = [s for s in sentences(markdown(TEN)) if "neox_to_adjacent_pairs" in s]
    assert said and all("llama.cpp's own GGUF converter" in s for s in said), said
    assert not re.search(r"HuggingFace's (GGUF )?converter does", markdown(TEN))
    with open(os.path.join(ROOT, "lessonlib", "tinylm.py")) as f:
        source = " ".join(f.read().split())
    assert "HuggingFace's GGUF converter does" not in source
    assert "what llama.cpp's GGUF converter" in source


def test_10_stream_text_counts_the_needles_the_streams_hold():
    """4,096 = 1 + 7 x 512 + 511: seven needles per stream and a last block of filler, not "each
    512-token block has its own needle"."""
    from lessonlib import kvtask, tinylm_results
    streaming = tinylm_results.load_results("streaming")
    counts = {len(kvtask.stream_document((streaming["seed"], i), streaming["length"]).needle_at)
              for i in range(streaming["n_streams"])}
    assert counts == {7} and (streaming["length"] - 1) // 512 == 7
    prose = " ".join(markdown(TEN).split())
    assert "seven blocks, each with its own needle" in prose
    assert "511 tokens of plain filler and no needle" in prose
    assert "Each 512-token block of a stream has its own needle" not in prose
    assert "8 streams of 4,096 tokens: 7 needles each; positions 3,585 to 4,095 are filler only" \
        in outputs(TEN)


def test_10_says_the_live_and_the_sweep_tables_differ_by_sampling_noise():
    """The live table runs 16 documents, the sweep 64 (PI s = 8 at 2,048: 0.69 against 0.50),
    and nothing said why they differ."""
    prose = " ".join(markdown(TEN).split())
    assert "sampling noise" in prose and "16 held-out" in prose and "64 per cell" in prose
    se16, se64 = math.sqrt(0.25 / 16), math.sqrt(0.25 / 64)
    assert f"about {se16:.3f} with 16 documents, {se64:.4f} with 64" in outputs(TEN)
