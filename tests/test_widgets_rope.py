"""Drive the notebook 07-08 widgets headlessly: move a control, then the readout and the
plotted data must be what lessonlib.rope computes for the new value."""
import functools
import math
import re

import ipywidgets
import numpy as np
import pytest

from lessonlib import rope as R
from lessonlib.models.configs import load_config
from lessonlib.widgets import rope as W

HEAD = {"head_dim": 128, "rope_theta": 10_000.0}  # notebooks 07 and 08: d = 128, b = 10,000


def head(b, r=128):
    return R.rope_frequencies({"head_dim": r, "rope_theta": float(b)})[0]


def test_pair_ranges():
    assert W._pair_ranges([]) == "none"
    assert W._pair_ranges([3]) == "3"
    assert W._pair_ranges([0, 3, 4, 5, 9]) == "0, 3-5, 9"


# ------------------------------------------------------------------ notebook 07

def test_clock_explorer_starts_at_example_12():
    w = W.clock_explorer(HEAD, n_train=4096)
    # m = 16,383 is the coarse stop 16,384 and one fine step back
    assert w.values == {"coarse": 16384, "fine": -1, "b": 10_000, "n_train": 4096}
    assert w.data["m"] == 16383
    assert "position m = 16,384 − 1 = 16,383 · base b = 10,000" in w.readout
    assert "trained on positions 0 to 4,095" in w.readout
    assert "18 of 64 (pairs 46-63)" in w.readout  # notebook 07's head
    assert "pair 0: 16,383.00 rad = 2.74 rad after whole turns" in w.readout
    assert "turned 651.9 times" in w.readout
    assert "slowest pair 63: 1.89 rad at m; training reached 0.47 rad" in w.readout
    outside = np.flatnonzero(R.outside_trained_arc(head(1e4), 16383, 4096))
    assert f"never seen in training: {outside.size} (pairs {W._pair_ranges(outside)})" in w.readout
    theta = head(1e4)
    np.testing.assert_allclose(w.artists["coverage"]["dots"].get_ydata(),
                               np.mod(16383 * theta, 2 * np.pi))


def test_clock_explorer_follows_position_base_and_length():
    w = W.clock_explorer(HEAD, n_train=4096)
    hand = w.artists["clock"]["hands"][0]
    w.set_position(100)
    assert w.values["coarse"] == 0 and w.values["fine"] == 100 and w.data["m"] == 100
    assert "inside the trained range" in w.readout and "position m = 0 + 100 = 100" in w.readout
    x, y = hand.get_data()
    assert math.atan2(y[1], x[1]) % (2 * math.pi) == pytest.approx(100 % (2 * math.pi))
    assert w.artists["clock"]["hands"][0] is hand  # updated in place, not redrawn
    assert len(w.artists["coverage"]["outside"].get_xdata()) == 0

    w.controls["b"].value = 500_000
    w.controls["n_train"].value = 8192
    w.set_position(32768)
    assert w.values["fine"] == 0 and "position m = 32,768 ·" in w.readout
    theta = head(5e5)
    never = R.pairs_never_turning(theta, 8192)
    assert f"{never.size} of 64 (pairs {W._pair_ranges(never)})" in w.readout
    assert never.size == 29
    out = np.flatnonzero(R.outside_trained_arc(theta, 32768, 8192))
    np.testing.assert_array_equal(w.artists["coverage"]["outside"].get_xdata(), out)
    np.testing.assert_allclose(w.artists["coverage"]["trained"].get_data().values,
                               np.minimum(8191 * theta, 2 * np.pi))
    np.testing.assert_array_equal(w.data["never"], never)
    assert f"{32768 * theta[63]:.2f} rad at m" in w.readout
    # the cached per-(b, n_train) arrays are what _clock_data computes
    for key, value in W._clock_data(32768, 500_000, 8192).items():
        np.testing.assert_array_equal(w.data[key], value)


def test_clock_data_keeps_each_settings_arrays_once_read_only():
    """A step of m reuses the arrays of its (b, n_train, r): _clock_data's own cache, no copy of
    _clock_data in the explorer; only the angles at m are new."""
    a, b = W._clock_data(100, 10_000, 4096), W._clock_data(200, 10_000, 4096)
    for key in ("theta", "trained", "never", "turns"):
        assert a[key] is b[key] and not a[key].flags.writeable, key
    assert a["angles"] is not b["angles"]
    np.testing.assert_array_equal(a["on_clock"], R.clock_angle(head(1e4), 100))
    np.testing.assert_array_equal(W._clock_data(100, 20_000, 4096)["theta"], head(2e4))
    with pytest.raises(ValueError, match="read-only"):
        a["theta"][0] = 2.0


def test_clock_explorer_reaches_the_last_trained_position_one_step_at_a_time():
    """The text asks for m = 4,095, then past it: a coarse stop and single fine steps."""
    w = W.clock_explorer(HEAD, n_train=4096)
    coarse, fine = w.controls["coarse"], w.controls["fine"]
    assert coarse.step == W._COARSE_STEP == 1024 and coarse.max == 65536
    assert fine.step == 1 and (fine.min, fine.max) == (-512, 512)
    assert coarse.description == "coarse m" and fine.description == "fine"
    coarse.value = 4096
    fine.value = -1
    assert w.data["m"] == 4095 and "position m = 4,096 − 1 = 4,095" in w.readout
    assert "inside the trained range" in w.readout
    fine.value = 0  # one ArrowRight
    assert w.data["m"] == 4096 and "never seen in training" in w.readout
    fine.value = 1
    assert w.data["m"] == 4097 and "position m = 4,096 + 1 = 4,097" in w.readout
    # every position is a coarse stop and a fine offset on the sliders
    for m in (0, 1, 511, 512, 513, 4095, 16383, 65534, 65535):
        c, f = W._split_position(m, 1024, 65536)
        assert c + f == m and c % 1024 == 0 and 0 <= c <= 65536 and -512 <= f <= 512, m
    # the ends: m stays inside 0..max_position
    coarse.value, fine.value = 0, -5
    assert w.data["m"] == 0 and "position m = 0 ·" in w.readout
    coarse.value, fine.value = 65536, 0
    assert w.data["m"] == 65535


def test_clock_explorer_sliders_leave_room_for_their_longest_readout():
    """10,000,000 at the base's end ran into the next label (and needs 74 px of a 72 px readout
    box): each slider keeps a gap after it, and the four fit a laptop's output area (about
    930 px) in one row."""
    w = W.clock_explorer(HEAD, n_train=4096)
    widths = [int(c.layout.width.rstrip("px")) for c in w.controls.values()]
    margins = [int(c.layout.margin.split()[1].rstrip("px")) for c in w.controls.values()]
    assert all(m >= 10 for m in margins)
    assert sum(widths) + sum(margins) <= 920
    # a readout box holds 72 px (about 9 characters at 13 px): compact labels fit it
    labels = [label for label, _ in w.controls["b"].options]
    assert labels == ["10k", "20k", "50k", "100k", "150k", "500k", "1M", "5M", "10M"]
    assert W.clock_explorer({"head_dim": 128, "rope_theta": 1_234_567}, n_train=4096).controls["b"].label == "1,234,567"
    assert W.clock_explorer({"head_dim": 128, "rope_theta": 1_500_000}, n_train=4096).controls["b"].label == "1.5M"
    w.controls["b"].value = 10_000_000
    assert "base b = 10,000,000 ·" in w.readout  # the readout spells the value out
    # notebook 08's base keeps full numbers (its browser test reads them): a slider wide enough
    s = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
    assert s.controls["b"].options[-1][0] == "10,000,000"
    assert int(s.controls["b"].layout.width.rstrip("px")) >= 285


def figure_fits_a_laptop(w):
    """9.3 in at most (930 px at 100 dpi, a laptop's output area) and no text under 9 pt
    (12.5 px: still 9 px scaled to 72%; 16 px at the presenter's 130 dpi)."""
    width, _ = w.fig.get_size_inches()
    assert width <= 9.3
    assert w.smallest_text_px() >= 9 * w.fig.dpi / 72 - 1e-9


def keys_off_the_data(w):
    """Every legend of the figure lies outside every axes (no data can run under it)."""
    w.fig.canvas.draw()
    legends = w.fig.legends
    assert legends
    for legend in legends:
        box = legend.get_window_extent()
        for ax in w.fig.axes:
            assert not box.overlaps(ax.get_window_extent()), (legend, ax.get_title())


def _contrast(a, b):
    """WCAG 2 contrast ratio of two matplotlib colours."""
    from matplotlib.colors import to_rgb

    def luminance(c):
        r, g, b_ = (x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in to_rgb(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("factory", [lambda: W.clock_explorer(HEAD, n_train=4096),
                                     lambda: W.scaling_explorer(HEAD, factor=4.0, n_train=4096)],
                         ids=["clock", "scaling"])
def test_every_text_reaches_wcag_aa_on_the_figure(factory):
    """Text is drawn on the white figure or axes (no label sits on a filled area): 4.5:1."""
    from matplotlib.text import Text
    w = factory()
    texts = [t for t in w.fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts and min(_contrast(t.get_color(), "white") for t in texts) >= 4.5


def test_clock_figure_fits_and_its_key_is_off_the_data():
    w = W.clock_explorer(HEAD, n_train=4096)
    figure_fits_a_laptop(w)
    keys_off_the_data(w)
    ax_clock, ax_cov = w.axes
    # the clock's face and key are the figure's (a blit's background), not redrawn per move
    assert not ax_clock.texts and len(ax_clock.lines) == 3 * len(w.pairs)
    assert [t.get_text() for t in w.artists["clock"]["face"] if hasattr(t, "get_text")
            and t.get_text().startswith("pair")] == [f"pair {p}" for p in w.pairs]


def test_clock_explorer_rejects_pairs_outside_the_head():
    with pytest.raises(ValueError, match="pairs must be in 0..63"):
        W.clock_explorer(HEAD, n_train=4096, pairs=(0, 64))


# ------------------------------------------------------------------ notebook 08

def band_text(band):
    return f"YaRN band (low, high) = ({band[0]}, {band[1]})"


def test_scaling_explorer_starts_at_examples_13_to_15():
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
    assert w.values == {"factor": 4.0, "b": 10_000, "n_train": 4096}
    # The browser test presses ArrowRight on the first slider handle: it must be the factor.
    assert list(w.controls) == ["factor", "b", "n_train"] and w.ui.children[0].children[0] is \
        w.controls["factor"]
    assert isinstance(w.controls["factor"], ipywidgets.FloatSlider)
    assert w.controls["factor"].description == "factor" and w.controls["factor"].step == 0.5
    assert band_text((20, 46)) + ":" in w.readout  # notebook 08's YaRN band
    assert "kept 0-20 (≥ 32 turns in L0)" in w.readout
    assert "ramp 21-45" in w.readout and "θ/s 46-63 (≤ 1 turn)" in w.readout
    assert "factor s = 4 " in w.readout and "target s·L0 = 16,384 positions" in w.readout
    assert "base b = 10,000 · L0 = 4,096" in w.readout and "rotary dim 128" in w.readout
    assert "μ = 1 + 0.1·ln s = 1.1386" in w.readout and "μ² = 1.2965" in w.readout
    assert "base 10,000 → 40,890" in w.readout  # notebook 08's NTK base
    assert "pair 0 turns 0.250 rad per token" in w.readout  # notebook 08's PI step
    assert "overshoot at 16,383:" in w.readout
    assert "NTK-aware 2.48 (pair 46)" in w.readout  # 7.94 - 5.46


def test_scaling_explorer_factor_moves_the_curves_and_states_the_band():
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
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
    assert f"μ = 1 + 0.1·ln s = {R.yarn_mscale(8):.4f}" in w.readout  # 1.2079
    assert "μ² = 1.4591" in w.readout


def test_scaling_data_reads_every_number_of_the_readout_from_rope():
    d = W._scaling_data(4.0, 10_000, 4096)
    yarn = R.rope_frequencies({**HEAD, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                        "original_max_position_embeddings": 4096}})
    assert d["mu"] == R.yarn_mscale(4.0) == yarn[1]  # μ is what the YaRN table carries
    assert d["score_scale"] == R.rotary_score_scale(d["mu"])
    sets = R.yarn_pair_sets(20, 46, 64)
    for name in ("kept", "ramped", "divided"):
        np.testing.assert_array_equal(getattr(d["pairs"], name), getattr(sets, name))
    assert d["target"] == R.target_length(4.0, 4096) == 16384
    for name, inv in d["inv"].items():
        assert d["largest_overshoot"][name] == R.largest_overshoot(inv, 16383, 4096,
                                                                   trained_inv_freq=d["theta"])
        np.testing.assert_array_equal(d["ratios"][name], R.frequency_ratio(inv, d["theta"]))
        np.testing.assert_array_equal(d["slowdown"][name], R.slowdown(inv, d["theta"]))
    assert d["largest_overshoot"]["NTK-aware"][1] == 46


def test_scaling_explorer_band_follows_base_and_trained_length():
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
    w.controls["b"].value = 500_000
    assert band_text((14, 32)) in w.readout  # the vLLM chapter: b = 500,000, L0 = 4096
    w.controls["n_train"].value = 8192
    assert band_text((18, 35)) in w.readout  # and Llama 3's L0 = 8192
    assert R.yarn_correction_range(32, 1, 128, 500_000, 8192) == (18, 35)
    band = w.artists["ratios"]["band"]
    assert (band.get_x(), band.get_x() + band.get_width()) == (18, 35)
    assert list(w.artists["ramp"]["low"].get_xdata()) == [18, 18]
    np.testing.assert_allclose(w.artists["ramp"]["ramp"].get_ydata(), R.yarn_ramp(18, 35, 64))
    assert list(w.artists["wavelengths"]["trained"].get_ydata()) == [8192, 8192]
    assert w.data["band"] == (18, 35)


def _band_by_hand(r, b, L0, truncate=True, beta_fast=32.0, beta_slow=1.0):
    """HF's find_correction_range written out: r ln(L0 / (2 pi beta)) / (2 ln b), clamped."""
    low, high = (r * math.log(L0 / (2 * math.pi * n)) / (2 * math.log(b)) for n in (beta_fast, beta_slow))
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, r - 1)


# name: (factor, base, L0, rotary dim, truncate), read off the shipped config.json by hand
MODEL_START = {
    "Llama-3.1-8B": (8.0, 500_000, 8192, 128, True),  # llama3: the explorer's YaRN uses 32, 1
    "Qwen2.5-7B-Instruct": (4.0, 1_000_000, 32768, 128, True),
    "DeepSeek-V3": (40.0, 10_000, 4096, 64, True),  # qk_rope_head_dim
    "gpt-oss-20b": (32.0, 150_000, 4096, 64, False),
    "Phi-3.5-mini-instruct": (32.0, 10_000, 4096, 96, True),  # no factor: 131,072 / 4,096
}


@pytest.mark.parametrize("name", sorted(MODEL_START))
def test_scaling_explorer_starts_from_a_models_config(name):
    factor, b, L0, r, truncate = MODEL_START[name]
    w = W.scaling_explorer(name)
    assert w.values == {"factor": factor, "b": b, "n_train": L0}
    assert len(w.artists["ratios"]["lines"]["YaRN"].get_ydata()) == r // 2
    band = _band_by_hand(r, b, L0, truncate)
    assert w.data["band"] == pytest.approx(band, rel=1e-12) and w.betas == (32.0, 1.0)
    assert re.search(rf"rotary dim {r}$", w.readout.splitlines()[0])
    if name == "gpt-oss-20b":  # truncate: false gives a fractional band
        assert f"YaRN band (low, high) = ({band[0]:.2f}, {band[1]:.2f})" in w.readout
        assert not float(band[0]).is_integer()
    if name == "DeepSeek-V3":
        assert w.values["factor"] == 40 and band_text((10, 23)) in w.readout


def test_scaling_explorer_readout_when_no_pair_is_divided():
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=65536)  # d(1) = 64.3 > 63: HF clamps high to r - 1, not r/2 - 1
    band = R.yarn_correction_range(32, 1, 128, 10_000, 65536)
    assert band == (40, 65) and band_text(band) in w.readout
    assert "θ/s none" in w.readout and "ramp 41-63" in w.readout
    # the high end is past the last pair: its line is off the axis, and so is its name
    labels = w.artists["ramp"]["labels"]
    assert labels["low"].get_visible() and not labels["high"].get_visible()
    w.controls["n_train"].value = 4096
    assert labels["high"].get_visible() and labels["high"].get_position()[0] == 46


def test_scaling_figure_fits_keeps_its_three_panels_and_its_key_off_the_data():
    """08's figure was 12.5 in (1,250 px, cut to 934 on a laptop: the ramp panel lost): now
    two columns in 9.2 in, the ramp under the frequency panel, one key row above both."""
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
    figure_fits_a_laptop(w)
    ax_ratio, ax_wave, ax_ramp = w.axes
    assert len(w.fig.axes) == 3
    w.fig.canvas.draw()
    r, m, p = (a.get_window_extent() for a in (ax_ratio, ax_wave, ax_ramp))
    assert p.y1 < r.y0 and abs(p.x0 - r.x0) < 1 and abs(p.x1 - r.x1) < 1  # ramp under ratios
    assert m.x0 > r.x1 and m.y1 >= r.y1 - 1 and m.y0 <= p.y0 + 1  # wavelengths beside both
    for factor in (4.0, 64.0):  # at 64 the lines ran under the old key
        w.controls["factor"].value = factor
        keys_off_the_data(w)
    # at s = 64 PI's 1/64 sits between two labelled ticks, inside the axis
    assert [t.get_text() for t in ax_ratio.get_yticklabels()] == ["0.01", "0.1", "1"]
    low, high = ax_ratio.get_ylim()
    for line in ax_ratio.lines:
        assert low < line.get_ydata().min() and line.get_ydata().max() < high
    assert [t.get_text() for t in w.fig.legends[0].get_texts()] == \
        ["original", "PI (linear)", "NTK-aware", "YaRN", "llama3", "YaRN band"]
    # the wavelength levels are named in the margin, right of the lines
    for label in w.artists["wavelengths"]["labels"].values():
        assert label.get_window_extent().x0 > m.x1


@pytest.mark.parametrize("setting", [dict(config=HEAD, factor=4.0, n_train=4096),
                                     dict(config={"head_dim": 128, "rope_theta": 1e7},
                                          factor=63.5, n_train=65536),
                                     dict(config="gpt-oss-20b"), dict(config="DeepSeek-V3")])
def test_scaling_readout_is_five_short_lines(setting):
    """Five lines of at most 104 characters: one line each on a laptop (about 108 monospace
    characters) and on a projector (about 112 at 18 px); the static how-to-read is prose."""
    w = W.scaling_explorer(**setting)
    lines = w.readout.splitlines()
    assert len(lines) == 5 and max(map(len, lines)) <= 104, [len(x) for x in lines]


@pytest.mark.parametrize("factory, moves", [
    (lambda: W.clock_explorer(HEAD, n_train=4096), [("fine", 0), ("coarse", 4096), ("b", 20_000), ("n_train", 8192)]),
    (lambda: W.scaling_explorer(HEAD, factor=4.0, n_train=4096), [("factor", 4.5), ("b", 20_000), ("n_train", 8192), ("factor", 64.0)]),
    (lambda: W.scaling_explorer("gpt-oss-20b"), [("factor", 4.5), ("b", 10_000),
                                                  ("n_train", 2048)]),
])
def test_no_slider_move_draws_the_whole_figure_again(factory, moves, monkeypatch):
    """Texts that move with a slider (08's band ends and level names) are known from the
    start: no slider's first move pays for a full draw of the background."""
    import lessonlib.widgets._base as base
    w = factory()
    full_draws = []
    monkeypatch.setattr(base.FigureCanvasAgg, "draw", lambda canvas: full_draws.append(canvas))
    for name, value in moves:
        before = w.readout
        w.controls[name].value = value
        assert w.readout != before and not full_draws, (name, value)


def test_scaling_explorer_rehearsal_leaves_it_at_its_setting():
    w = W.scaling_explorer(HEAD, factor=4.0, n_train=4096)
    assert w.values == {"factor": 4.0, "b": 10_000, "n_train": 4096} and w.data["band"] == (20, 46)
    assert w.readout.startswith("factor s = 4 · base b = 10,000 · L0 = 4,096")
    np.testing.assert_allclose(w.artists["ratios"]["lines"]["PI (linear)"].get_ydata(), 0.25)
    assert w.artists["wavelengths"]["labels"]["target"].get_position()[1] == 16384


def test_scaling_explorer_rejects_a_factor_off_the_slider():
    with pytest.raises(ValueError, match=r"factor must be a number >= 1.0 and <= 64.0"):
        W.scaling_explorer(HEAD, factor=0.5, n_train=4096)


@pytest.mark.parametrize("make, key, values", [
    (lambda: W.clock_explorer(HEAD, n_train=4096), "fine", (0, 1, 2, 3, 4)),
    (lambda: W.clock_explorer(HEAD, n_train=4096), "coarse", [20480 + 1024 * i for i in range(5)]),
    (lambda: W.scaling_explorer(HEAD, factor=4.0, n_train=4096), "factor",
     (5.0, 5.5, 6.0, 6.5, 7.0)),
])
def test_a_slider_step_draws_only_what_changes(monkeypatch, make, key, values):
    """A step's cost is mostly text: a step renders no background (no Figure.draw) and draws
    at most a tenth of the texts a full draw does. Counted, not timed (times on these machines
    are noise; benchmarks/widget_steps.py measures them side by side)."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    counts = {"figure": 0, "text": 0}

    def counting(name, draw):
        @functools.wraps(draw)
        def counted(self, *args, **kwargs):
            counts[name] += 1
            return draw(self, *args, **kwargs)
        return counted

    monkeypatch.setattr(Figure, "draw", counting("figure", Figure.draw))
    monkeypatch.setattr(Text, "draw", counting("text", Text.draw))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    w = make()
    counts.update(figure=0, text=0)
    FigureCanvasAgg.draw(w.fig.canvas)  # a full render, whatever the canvas
    full = dict(counts)
    assert full["figure"] == 1 and full["text"] > 20
    for v in values:
        counts.update(figure=0, text=0)
        w.controls[key].value = v
        assert w.values[key] == v
        assert counts["figure"] == 0, f"{key} = {v}: the whole figure was drawn again"
        assert counts["text"] <= full["text"] / 10, (key, v, counts, full)


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, bad_input_tests, flags, ints, reals  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_RS = dict(r=ints(minimum=2) | st.just(127))
BAD_INPUTS = [
    Case(W._pair_ranges, args=([0, 3, 4, 5],),
         bad=dict(indices=st.sampled_from([[1.5], [-1], [3, 2], "0-3", None, [True]]))),
    Case(W._clock_data, args=(100, 10_000, 4096),
         bad=dict(m=ints(minimum=0), b=reals(above=1.0), n_train=ints(minimum=1), **_RS)),
    Case(W.clock_explorer, args=(HEAD,), kwargs=dict(n_train=4096, m=100),
         bad=dict(m=ints(minimum=0, maximum=65535), **{"config.rope_theta": reals(above=1.0, none_ok=True)},
                  n_train=ints(minimum=2), pairs=st.sampled_from([(), (0, 64), (1.0,), None]),
                  max_position=ints(minimum=1), coarse_step=ints(minimum=2),
                  **{"config.head_dim": ints(minimum=2)}),
         names={"config.rope_theta": "rope_theta", "config.head_dim": "head_dim"}),
    Case(W._split_position, args=(4095,), bad=dict(m=ints(minimum=0),
                                                  coarse_step=ints(minimum=2))),
    Case(W._scaling_data, args=(4.0, 10_000, 4096),
         bad=dict(s=reals(minimum=1.0), b=reals(above=1.0), L0=ints(minimum=1),
                  beta_fast=reals(above=0.0) | st.just(0.5), truncate=flags(), **_RS),
         names=dict(beta_fast="beta_fast")),
    Case(W.scaling_explorer, args=(HEAD,), kwargs=dict(factor=4.0, n_train=4096),
         bad=dict(config=st.sampled_from(["Llama-9", 3, ["x"]]),
                  factor=reals(minimum=1.0, maximum=64.0), n_train=ints(minimum=2),
                  max_factor=reals(minimum=1.0), **{"config.rope_theta": reals(above=1.0, none_ok=True)}),
         names={"config.rope_theta": "rope_theta"}),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def test_scaling_explorer_refuses_a_yarn_config_without_its_trained_length():
    # It used to show L0 = max_position_embeddings (16,384) where rope_frequencies refuses: now
    # it reads rope.scaling_parameters, and says what rope_frequencies says, word for word.
    cfg = {"head_dim": 128, "max_position_embeddings": 16384,
           "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    with pytest.raises(ValueError) as compute:
        R.rope_frequencies(cfg)
    with pytest.raises(ValueError, match="original_max_position_embeddings is required") as explorer:
        W.scaling_explorer(cfg)
    assert str(explorer.value) == str(compute.value)


@pytest.mark.parametrize("name", ["Mistral-7B", "Gemma-3-27B"])
def test_scaling_explorer_refuses_a_config_that_records_no_trained_length(name):
    # default and linear read no L0: the explorer used to take max_position_embeddings for it
    # (Gemma 3's 131,072, the length after its 8x linear scaling, as if it were trained on it)
    with pytest.raises(ValueError, match=rf"config '{name}' has rope_type '(default|linear)', which "
                                         r"reads no trained length L0"):
        W.scaling_explorer(name)


def test_scaling_explorer_starts_a_dynamic_config_from_max_position_embeddings():
    # HF's dynamic rule scales past max_position_embeddings: that is its trained length
    cfg = {"head_dim": 128, "rope_theta": 1e4, "max_position_embeddings": 8192,
           "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}
    assert W.scaling_explorer(cfg).values == {"factor": 2.0, "b": 10_000, "n_train": 8192}
