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


# ------------------------------------------------------------------ 07

SEVEN = "07_rope"


def test_07_float32_error_claims_name_the_model_they_hold_for():
    """"The largest error, about 0.0078 rad, falls on pair 1" was Mistral's; the notebook's first
    model, Llama-3.1-8B, prints 0.0063 rad on pair 2. Every "<x> rad ... pair <j>" claim in the
    prose names a model, and the number and pair are that model's."""
    from lessonlib import rope
    from lessonlib.models.configs import load_config
    n = 131_072
    truth = {}
    for name, key in (("Llama-3.1-8B", "Llama"), ("Mistral-7B", "Mistral")):
        inv, _ = rope.rope_frequencies(load_config(name), seq_len=n)
        err = rope.float32_angle_error(inv, n)
        j = int(err.total.argmax())
        truth[key] = (f"{err.total[j]:.4f}", j)
        assert f"the largest, {err.total[j]:.4f} rad, falls on pair {j}" in outputs(SEVEN)
    claims = [s for s in sentences(markdown(SEVEN)) if re.search(r"0\.00\d\d rad", s)]
    assert claims
    for s in claims:
        for value, pair in re.findall(r"(0\.00\d\d) rad[^.;]*?\(?pair (\d+)", s):
            models = [k for k in truth if k in s and truth[k] == (value, int(pair))]
            assert models, (value, pair, s)
        for value in re.findall(r"(0\.00\d\d) rad", s):
            assert any(k in s and truth[k][0] == value for k in truth), (value, s)


def test_07_float32_spacing_is_stated_with_its_range():
    """Float32 numbers are 1/128 apart only in [2^16, 2^17), not everywhere below 2^17."""
    assert np.spacing(np.float32(2.0 ** 16)) == 1 / 128
    assert np.spacing(np.float32(2.0 ** 16 - 1)) == 1 / 256
    prose = " ".join(markdown(SEVEN).split())
    assert "where float32 numbers are 1/128 apart" not in prose
    assert "1/128 apart from $2^{16} = 65{,}536$ to $2^{17}$" in prose
    assert "1/128 in [2^16, 2^17)" in outputs(SEVEN)


def test_07_turns_are_counted_by_one_stated_rule():
    """"652 turns" stood beside a printed 651.90: the rule (n / wavelength turns, never turning
    when the wavelength exceeds n, the largest angle (n - 1) theta) is stated, and every count
    of pair 0's turns in the prose and the prints is that rule's."""
    from lessonlib import rope
    theta, _ = rope.rope_frequencies({"head_dim": 128, "rope_theta": 10_000.0})
    turns = rope.turns_within(theta, 4096)[0]
    prose = " ".join(markdown(SEVEN).split())
    assert "How turns are counted" in prose and "$(L_0 - 1)\\theta_i$" in prose
    said = re.findall(r"pair 0 (?:turns|makes) ([\d.,]+) (?:times|turns)", prose, re.I)
    said += re.findall(r"pair 0: ([\d.,]+) turns", outputs(SEVEN))
    assert said and all(math.isclose(float(x), turns, abs_tol=0.05) for x in said), said
    never = rope.pairs_never_turning(theta, 4096)
    assert np.array_equal(never, np.flatnonzero(rope.turns_within(theta, 4096) < 1))


def test_07_off_by_one_is_relative_to_the_cached_keys():
    """"Count positions one off and every distance shifts by a token" contradicted the cell that
    shows only distances count: the slip shifts new tokens against keys already cached."""
    prose = " ".join(markdown(SEVEN).split())
    assert "count positions one off and every distance shifts" not in prose
    assert "one off from the keys already cached" in prose
    assert "keys already in the cache keep the angles" in prose


# ------------------------------------------------------------------ 01, 09

def test_01_and_09_name_the_model_whose_config_they_load():
    """Both load Llama-3.1-8B's config.json; they called it Llama 3 8B."""
    for stem in ("01_attention_memory", "09_long_context_cost_and_needles"):
        source = "\n".join(text(c) for c in cells(stem))
        assert 'load_model("Llama-3.1-8B")' in source
        assert "Llama 3 8B" not in source + outputs(stem), stem


def test_widgets_draw_the_model_their_notebook_names():
    """A widget factory has no model default: each notebook passes the model (or head) it
    built, so the figure is the model the cell names (notebooks 05 and 08 once called theirs
    with no arguments and drew defaults that merely matched)."""
    import re
    calls = {"01_attention_memory": r"memory_explorer\(llama\)",
             "05_kv_cache": r"kv_cache_explorer\(llama, mla_config=ds\)",
             "06_sliding_windows_and_sinks": r'window_explorer\("gpt-oss-20b"\)',
             "07_rope": r"clock_explorer\(HEAD, n_train=L_0, m=m\)",
             "08_rope_scaling": r"scaling_explorer\(HEAD, factor=s, n_train=n_train\)",
             "09_long_context_cost_and_needles": r"cost_explorer\(llama, params=N_param\)"}
    for stem, call in calls.items():
        source = "\n".join(text(c) for c in cells(stem))
        assert re.search(call, source), stem


def test_09_needle_heatmap_counts_words_like_its_model():
    """The stand-in model counts words (no tokenizer); the heatmap's axis said tokens."""
    source = "\n".join(text(c) for c in cells("09_long_context_cost_and_needles"))
    assert "tokenizer=" not in source.split("needle_heatmap(")[0].split("fine = ")[-1]
    from lessonlib.needles import EdgeHeavyModel, run_needle_grid
    from lessonlib.widgets.long_context import needle_heatmap
    w = needle_heatmap(run_needle_grid(EdgeHeavyModel(), [1000], [0], progress=False))
    assert w.axes[0].get_ylabel() == "context length (words)"


# ------------------------------------------------------------------ 04

def test_04_sink_exercise_does_not_call_acc_a_log_quantity():
    """acc is a weighted sum of value rows; only m (and the scale of l's terms) is in log2
    units. The exercise and its check once said "acc ... all in the kernel's log2 units"."""
    from lessonlib.checks import triton
    prose = " ".join(markdown("04_flash_attention_triton").split())
    question = prose.split("**6.**")[1].split("##")[0]  # the learned-sink exercise
    assert "all in the kernel's log2 units" not in question
    assert "not a log quantity" in question
    doc = " ".join(triton.sink_output.__doc__.split())
    assert "all in the kernel's log2 units" not in doc and "not a log quantity" in doc


# ------------------------------------------------------------------ 05, 06, 08 (issue 28's list)

def test_05_says_the_head_dim_key_wins_over_the_division():
    """05 taught d_h = hidden_size / num_attention_heads and never the `head_dim` key, which
    overrides it (gpt-oss-20b: 45 vs 64; Gemma 3 27B: 168 vs 128)."""
    from lessonlib import kv_cache
    from lessonlib.models.configs import load_config
    prose = " ".join(markdown("05_kv_cache").split())
    assert "`head_dim` key" in prose
    for name, wrong in (("gpt-oss-20b", 45), ("Gemma-3-27B", 168)):
        cfg = load_config(name)
        text = cfg.get("text_config", cfg)
        assert text["hidden_size"] / text["num_attention_heads"] == wrong
        d_h = kv_cache.model_shape(cfg).head_dim
        assert d_h == text["head_dim"] != wrong
        assert f"{name}: hidden_size / heads = {wrong}, head_dim key {d_h}, d_h read = {d_h}" \
            in outputs("05_kv_cache")


def test_06_labels_the_small_context_shift_a_model_of_the_rule():
    """`-c 13 --keep 3` read as a runnable command, but llama.cpp pads -c to 256."""
    prose = " ".join(markdown("06_sliding_windows_and_sinks").split())
    assert "The cell runs both with 12 entries: `-c 13 --keep 3`" not in prose
    assert "not a command to run" in prose and "multiple of 256" in prose
    assert "usually quoted" not in prose


def test_08_band_blend_and_arc_claims():
    """(18, 35) needs b = 500,000 and L0 = 8192 (b = 10,000 with L0 = 8192 gives (25, 50)); the
    llama3 'kept share' (L0/lambda - 1)/3 is the blend weight w, the speed kept is w + (1-w)/s;
    the slow pairs stay in their arc up to 8 x 8,191 = 65,528, not all of 64K."""
    from lessonlib import rope
    prose = " ".join(markdown("08_rope_scaling").split())
    assert rope.yarn_correction_range(32, 1, 128, 1e4, 8192) == (25, 50)
    assert rope.yarn_correction_range(32, 1, 128, 5e5, 8192) == (18, 35)
    assert "(25, 50) with $L_0 = 8192$" in prose and "(18, 35) with both" in prose
    assert "the kept share is $(L_0/\\lambda - 1)/(4 - 1)$" not in prose
    assert "$w + (1 - w)/s$" in prose
    assert "in range up to 64K" not in prose and "65{,}528" in prose
    assert "yes, by 0.9 positions" in outputs("08_rope_scaling")  # 65,536 is past the arc
