"""Drive the notebook 07-08 widgets headlessly: move a control, then the readout and the
plotted data must be what lessonlib.rope computes for the new value."""
import math
import time

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from lessonlib import rope as R
from lessonlib.configs import load_config
from lessonlib.widgets import rope as W


def head(b, r=128):
    return R.rope_frequencies({"head_dim": r, "rope_theta": float(b)})[0]


def test_pair_ranges():
    assert W.pair_ranges([]) == "none"
    assert W.pair_ranges([3]) == "3"
    assert W.pair_ranges([0, 3, 4, 5, 9]) == "0, 3-5, 9"


# ------------------------------------------------------------------ notebook 07

def test_clock_explorer_starts_at_example_12():
    w = W.clock_explorer()
    assert w.values == {"m": 16383, "b": 10_000, "n_train": 4096}
    assert "18 of 64 (pairs 46-63)" in w.readout  # notebook 07's head
    assert "pair 0: 16,383.00 rad = 2.74 rad after whole turns" in w.readout
    assert "turned 651.9 times" in w.readout
    assert "slowest pair 63: 1.89 rad at m; training reached 0.47 rad" in w.readout
    outside = np.flatnonzero(R.outside_trained_arc(head(1e4), 16383, 4096))
    assert f"never seen in training: {outside.size} (pairs {W.pair_ranges(outside)})" in w.readout
    theta = head(1e4)
    np.testing.assert_allclose(w.artists["coverage"]["dots"].get_ydata(),
                               np.mod(16383 * theta, 2 * np.pi))


def test_clock_explorer_follows_position_base_and_length():
    w = W.clock_explorer()
    hand = w.artists["clock"]["hands"][0]
    w.controls["m"].value = 100
    assert "inside the trained range" in w.readout
    x, y = hand.get_data()
    assert math.atan2(y[1], x[1]) % (2 * math.pi) == pytest.approx(100 % (2 * math.pi))
    assert w.artists["clock"]["hands"][0] is hand  # updated in place, not redrawn
    assert len(w.artists["coverage"]["outside"].get_xdata()) == 0

    w.controls["b"].value = 500_000
    w.controls["n_train"].value = 8192
    w.controls["m"].value = 32768
    theta = head(5e5)
    never = R.pairs_never_turning(theta, 8192)
    assert f"{never.size} of 64 (pairs {W.pair_ranges(never)})" in w.readout
    assert never.size == 29
    out = np.flatnonzero(R.outside_trained_arc(theta, 32768, 8192))
    np.testing.assert_array_equal(w.artists["coverage"]["outside"].get_xdata(), out)
    np.testing.assert_allclose(w.artists["coverage"]["trained"].get_data().values,
                               np.minimum(8191 * theta, 2 * np.pi))
    np.testing.assert_array_equal(w.data["never"], never)
    assert f"{32768 * theta[63]:.2f} rad at m" in w.readout


def test_clock_explorer_rejects_pairs_outside_the_head():
    with pytest.raises(ValueError, match="pairs must be in 0..63"):
        W.clock_explorer(pairs=(0, 64))


# ------------------------------------------------------------------ notebook 08

def band_text(band):
    return f"YaRN band (low, high) = ({band[0]}, {band[1]})"


def test_scaling_explorer_starts_at_examples_13_to_15():
    w = W.scaling_explorer()
    assert w.values == {"factor": 4.0, "b": 10_000, "L0": 4096}
    # The browser test presses ArrowRight on the first slider handle: it must be the factor.
    assert list(w.controls) == ["factor", "b", "L0"] and w.ui.children[0].children[0] is \
        w.controls["factor"]
    assert isinstance(w.controls["factor"], ipywidgets.FloatSlider)
    assert w.controls["factor"].description == "factor" and w.controls["factor"].step == 0.5
    assert band_text((20, 46)) in w.readout  # notebook 08's YaRN band
    assert "kept pairs 0-20 (≥ 32 turns in L0)" in w.readout
    assert "ramp pairs 21-45" in w.readout and "divided by s pairs 46-63" in w.readout
    assert "factor s = 4 " in w.readout and "target s·L0 = 16,384" in w.readout
    assert "mscale = 1 + 0.1·ln s = 1.1386" in w.readout and "mscale² = 1.2965" in w.readout
    assert "base 10,000 → 40,890" in w.readout  # notebook 08's NTK base
    assert "pair 0 now turns 0.250 rad per token" in w.readout  # notebook 08's PI step
    assert "18 of 64 pairs never turn in L0" in w.readout
    assert "NTK-aware 2.48 rad" in w.readout and "pair 46" in w.readout  # 7.94 - 5.46


def test_scaling_explorer_factor_moves_the_curves_and_states_the_band():
    w = W.scaling_explorer()
    pi_line = w.artists["ratios"]["lines"]["PI (linear)"]
    before = {k: v.get_ydata().copy() for k, v in w.artists["ratios"]["lines"].items()}
    w.controls["factor"].value = 4.5  # one ArrowRight step
    assert w.artists["ratios"]["lines"]["PI (linear)"] is pi_line
    assert "factor s = 4.5 " in w.readout
    assert band_text(R.yarn_correction_range(32, 1, 128, 10_000, 4096)) in w.readout
    for name, line in w.artists["ratios"]["lines"].items():
        assert not np.allclose(line.get_ydata(), before[name]), name  # every method moved

    w.controls["factor"].value = 8.0
    theta = head(1e4)
    yarn = R.rope_frequencies({"head_dim": 128, "rope_theta": 1e4, "rope_scaling": {
        "rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 4096}})
    np.testing.assert_allclose(w.artists["ratios"]["lines"]["YaRN"].get_ydata(), yarn[0] / theta)
    np.testing.assert_allclose(w.artists["ratios"]["lines"]["PI (linear)"].get_ydata(), 1 / 8)
    ntk = head(R.ntk_base(1e4, 8.0, 128))
    np.testing.assert_allclose(w.artists["wavelengths"]["lines"]["NTK-aware"].get_ydata(),
                               R.wavelengths(ntk))
    assert list(w.artists["wavelengths"]["target"].get_ydata()) == [32768, 32768]
    assert f"mscale = 1 + 0.1·ln s = {R.yarn_mscale(8):.4f}" in w.readout  # 1.2079
    assert "mscale² = 1.4591" in w.readout


def test_scaling_explorer_band_follows_base_and_trained_length():
    w = W.scaling_explorer()
    w.controls["b"].value = 500_000
    assert band_text((14, 32)) in w.readout  # the vLLM chapter: b = 500,000, L0 = 4096
    w.controls["L0"].value = 8192
    assert band_text((18, 35)) in w.readout  # and Llama 3's L0 = 8192
    assert R.yarn_correction_range(32, 1, 128, 500_000, 8192) == (18, 35)
    band = w.artists["ratios"]["band"]
    assert (band.get_x(), band.get_x() + band.get_width()) == (18, 35)
    assert list(w.artists["ramp"]["low"].get_xdata()) == [18, 18]
    np.testing.assert_allclose(w.artists["ramp"]["ramp"].get_ydata(), R.yarn_ramp(18, 35, 64))
    assert list(w.artists["wavelengths"]["trained"].get_ydata()) == [8192, 8192]
    assert w.data["band"] == (18, 35)


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Qwen2.5-7B-Instruct", "DeepSeek-V3",
                                  "gpt-oss-20b", "Phi-3.5-mini-instruct"])
def test_scaling_explorer_starts_from_a_models_config(name):
    cfg = load_config(name)
    p = R.rope_parameters(cfg)
    r = R.rotary_dim(cfg)
    w = W.scaling_explorer(name)
    L0 = cfg.get("original_max_position_embeddings") or p.get("original_max_position_embeddings") \
        or cfg["max_position_embeddings"]
    assert w.values["b"] == int(p["rope_theta"]) and w.values["L0"] == L0
    assert len(w.artists["ratios"]["lines"]["YaRN"].get_ydata()) == r // 2
    band = R.yarn_correction_range(p.get("beta_fast") or 32, p.get("beta_slow") or 1, r,
                                   p["rope_theta"], L0, p.get("truncate", True))
    assert w.data["band"] == band
    assert f"rotary dim {r} ({r // 2} pairs)" in w.readout
    if name == "gpt-oss-20b":  # truncate: false gives a fractional band
        assert f"YaRN band (low, high) = ({band[0]:.2f}, {band[1]:.2f})" in w.readout
        assert not float(band[0]).is_integer()
    if name == "DeepSeek-V3":
        assert w.values["factor"] == 40 and band_text((10, 23)) in w.readout


def test_scaling_explorer_readout_when_no_pair_is_divided():
    w = W.scaling_explorer(L0=65536)  # d(1) = 64.3 > 63: HF clamps high to r - 1, not r/2 - 1
    band = R.yarn_correction_range(32, 1, 128, 10_000, 65536)
    assert band == (40, 65) and band_text(band) in w.readout
    assert "divided by s no pairs" in w.readout and "ramp pairs 41-63" in w.readout


def test_scaling_explorer_rejects_a_factor_off_the_slider():
    with pytest.raises(ValueError, match=r"factor must be a number >= 1.0 and <= 64.0"):
        W.scaling_explorer(factor=0.5)


def test_redraw_is_fast_relative_to_a_plain_line_plot():
    """A slider move (compute, update in place, draw) costs a small multiple of the simplest
    figure (one 64-point line on a log axis), measured side by side on this machine."""
    fig, ax = plt.subplots()
    x = np.arange(64)
    line, = ax.plot(x, np.exp(-x / 10))
    ax.set_yscale("log")
    fig.canvas.draw()

    def median_ms(step, n=5):
        times = []
        for i in range(n):
            t = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - t)
        return 1e3 * sorted(times)[n // 2]

    base = median_ms(lambda i: (line.set_ydata(np.exp(-x / (10 + i))), fig.canvas.draw()))
    w = W.scaling_explorer()
    c = W.clock_explorer()
    scaling = median_ms(lambda i: w.controls["factor"].__setattr__("value", 5.0 + i))
    clock = median_ms(lambda i: c.controls["m"].__setattr__("value", 20000 + 997 * i))
    assert scaling < 6 * base and clock < 5 * base, (base, scaling, clock)


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, bad_input_tests, flags, ints, reals  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_RS = dict(r=ints(minimum=2) | st.just(127))
BAD_INPUTS = [
    Case(W.pair_ranges, args=([0, 3, 4, 5],),
         bad=dict(indices=st.sampled_from([[1.5], [-1], [3, 2], "0-3", None, [True]]))),
    Case(W.clock_data, args=(100, 10_000, 4096),
         bad=dict(m=ints(minimum=0), b=reals(above=1.0), n_train=ints(minimum=1), **_RS)),
    Case(W.clock_explorer, kwargs=dict(m=100),
         bad=dict(m=ints(minimum=0, maximum=65535), b=reals(above=1.0) | st.just(10_000.5),
                  n_train=ints(minimum=2), pairs=st.sampled_from([(), (0, 64), (1.0,), None]),
                  max_position=ints(minimum=1), **_RS)),
    Case(W.scaling_data, args=(4.0, 10_000, 4096),
         bad=dict(s=reals(minimum=1.0), b=reals(above=1.0), L0=ints(minimum=1),
                  beta_fast=reals(above=0.0) | st.just(0.5), truncate=flags(), **_RS),
         names=dict(beta_fast="beta_fast")),
    Case(W.scaling_explorer, kwargs=dict(factor=4.0),
         bad=dict(config=st.sampled_from(["Llama-9", 3, ["x"]]),
                  factor=reals(minimum=1.0, maximum=64.0), b=reals(above=1.0) | st.just(1e4 + .5),
                  L0=ints(minimum=2), max_factor=reals(minimum=1.0), **_RS)),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_scaling_explorer_refuses_a_yarn_config_without_its_trained_length():
    # It used to show L0 = max_position_embeddings (16,384) where rope_frequencies refuses.
    cfg = {"head_dim": 128, "max_position_embeddings": 16384,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    with pytest.raises(ValueError, match="original_max_position_embeddings"):
        W.scaling_explorer(cfg)
