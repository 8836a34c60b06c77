"""lessonlib.widgets.windows, driven headlessly: the window slider changes readout and pixels."""
import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from lessonlib.attention import MASK_HIDDEN, MASK_SINK, MASK_WINDOW, attention_mask, mask_codes
from lessonlib.models.configs import load_config
from lessonlib.kv_cache import kv_cache_bytes, layer_windows
from lessonlib.plots import windows as plots
from lessonlib.widgets import windows as ww

GPT_OSS = load_config("gpt-oss-20b")
LOCAL = np.array([w is not None for w in layer_windows(GPT_OSS)])


@pytest.fixture
def w():
    explorer = ww.window_explorer("gpt-oss-20b")
    yield explorer
    plt.close(explorer.fig)


def pixels(fig):
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def expected_entries(n, W, sinks):
    keep = int(attention_mask(1, n, causal=True, window=W, sink_tokens=sinks).sum())
    return np.where(LOCAL, keep, n), keep


def test_window_slider_is_an_intslider_named_window(w):
    slider = w.controls["window"]
    assert isinstance(slider, ipywidgets.IntSlider) and slider.description == "window"
    # a key press moves one vLLM block (16 tokens): 0 to 512 in 32 presses, not 512; on the
    # track 16, 32, ..., 512, and n's values (16 apart) are all windows the slider reaches
    assert slider.step == ww.WINDOW_STEP == 16 and slider.min == 16 and slider.max == 512
    assert w.controls["context"].step == 16 and w.controls["context"].min == slider.min
    slider.value = 129  # any other value can be typed into the number beside the slider
    assert "window W = 129" in w.readout


def test_initial_state(w):
    n, W, sinks = 256, 128, 4
    visible = attention_mask(n, n, causal=True, window=W, sink_tokens=sinks)
    codes = plots._mask_drawn(w.artists["mask"], n)  # what the polygons cover
    np.testing.assert_array_equal(codes, w.artists["mask"]["codes"])
    np.testing.assert_array_equal(codes != MASK_HIDDEN, visible)
    np.testing.assert_array_equal(codes == MASK_WINDOW,
                                  attention_mask(n, n, causal=True, window=W))
    entries, keep = expected_entries(n, W, sinks)
    assert keep == 132
    assert plots.bar_heights(w.artists["bars"]) == entries.tolist()
    assert "newest query (p = 255) sees keys 128..255 (128 in the window) + sinks 0..3 = " \
           "132 of 256 keys" in w.readout


def test_window_slider_changes_readout_mask_bars_and_pixels(w):
    before_text, before_px = w.readout, pixels(w.fig)
    bars = w.artists["bars"]["local"]
    w.controls["window"].value = 129  # a typed value
    assert w.readout != before_text
    assert "window W = 129" in w.readout and "= 133 of 256 keys" in w.readout
    assert not np.array_equal(pixels(w.fig), before_px)
    entries, _ = expected_entries(256, 129, 4)
    assert w.artists["bars"]["local"] is bars  # updated in place
    assert plots.bar_heights(w.artists["bars"]) == entries.tolist()
    cfg = ww._with_window(GPT_OSS, 129)
    llama = kv_cache_bytes(cfg, 256, engine="llama.cpp").sliding_layers
    vllm = kv_cache_bytes(cfg, 256, engine="vllm").sliding_layers
    levels = w.artists["bars"]["levels"]
    assert levels["llama.cpp cells"].get_ydata()[0] == llama.cells
    assert levels["vLLM block slots"].get_ydata()[0] == vllm.cells
    assert f"vLLM {vllm.blocks} blocks x 16 = {vllm.cells} slots" in w.readout


def test_whole_cache_numbers_follow_the_engines(w):
    w.controls["context"].value = 512
    w.controls["window"].value = 100
    w.controls["sinks"].value = 0
    cfg = ww._with_window(GPT_OSS, 100)
    for engine, label in (("llama.cpp", "llama.cpp"), ("vllm", "vLLM")):
        mib = kv_cache_bytes(cfg, 512, engine=engine).total_mib
        assert f"{label} {mib:.2f} MiB" in w.readout
    full = kv_cache_bytes(cfg, 512, engine="ideal", swa_full=True).total_mib
    ideal = kv_cache_bytes(cfg, 512, engine="ideal").total_mib  # no sinks: exact tokens
    assert f"every layer global {full:.2f} MiB" in w.readout
    assert f"sinks + window {ideal:.2f} MiB" in w.readout
    np.testing.assert_array_equal(plots._mask_drawn(w.artists["mask"], 512),
                                  mask_codes(512, 100, 0))


def test_sinks_slider_adds_sink_columns(w):
    w.controls["sinks"].value = 8
    codes = plots._mask_drawn(w.artists["mask"], 256)
    assert (codes[200:, :8] == MASK_SINK).all()
    assert "+ sinks 0..7 = 136 of 256 keys" in w.readout
    assert not w.controls["sinks"].disabled
    w.controls["window"].value = 304  # the window covers everything: sinks add nothing
    assert ", sinks inside it" in w.readout
    assert not (plots._mask_drawn(w.artists["mask"], 256) == MASK_SINK).any()
    assert w.controls["sinks"].disabled  # a control with no effect is disabled
    w.controls["context"].value = 320  # now keys 0..15 lie outside the window again
    assert not w.controls["sinks"].disabled
    assert (plots._mask_drawn(w.artists["mask"], 320)[-1, :8] == MASK_SINK).all()


def test_the_figure_fits_and_its_keys_are_off_the_data(w):
    """920 px wide at 100 dpi (a laptop's output area), text of at least 8 points, and every
    key (mask colours, bars, engines' lines) in a legend under its panel, drawn once."""
    width, height = w.fig.get_size_inches() * w.fig.dpi
    assert width <= 930 and height <= 400
    assert w.smallest_text_px() >= 8 * w.fig.dpi / 72 - 1e-9
    w.fig.canvas.draw()
    ax_mask, ax_bars = w.axes
    assert len(w.fig.legends) == 2 and ax_mask.get_legend() is None
    for legend in w.fig.legends:
        box = legend.get_window_extent()
        for ax in w.axes:
            assert not box.overlaps(ax.get_window_extent())  # under the axes, off every bar
        assert box.x0 >= 0 and box.x1 <= width and box.y0 >= 0
    for ax in w.axes:  # nothing drawn outside the figure (no panel or layer lost)
        tight = ax.get_tightbbox(w.fig.canvas.get_renderer())
        assert tight.x0 >= 0 and tight.x1 <= width and tight.y1 <= height


def test_a_window_step_redraws_only_what_moves(w):
    """The step that costs: a blitted frame, no full redraw of the background."""
    w.controls["window"].value = 144  # the first change of the title: the background once
    background = w._background
    for value in (160, 176, 144):
        w.controls["window"].value = value
        assert w._background is background


def test_a_model_without_windows_is_refused():
    with pytest.raises(ValueError, match="no sliding-window layers"):
        ww.window_explorer("Llama-3.1-8B")


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, bad_input_tests, ints  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(ww._with_window, args=(GPT_OSS, 64),
         bad=dict(config=st.sampled_from(["gpt-9", 3, None]), window=ints(minimum=1))),
    Case(ww.window_explorer, args=("gpt-oss-20b",), kwargs=dict(n=64, window=32, max_n=128),
         bad=dict(config=st.sampled_from(["gpt-9", 3, None, "Llama-3.1-8B"]),
                  n=ints(minimum=16, maximum=128), window=ints(minimum=1, maximum=128),
                  sinks=ints(minimum=0, maximum=16), max_n=ints(minimum=16),
                  n_ubatch=ints(minimum=1), block_size=ints(minimum=1))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)


def _luminance(rgb):
    c = np.asarray(rgb[:3], dtype=float)
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(c @ [0.2126, 0.7152, 0.0722])


def contrast(a, b):
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_text_reads_at_wcag_aa_on_white(w):
    """No text sits on a coloured cell: titles, ticks and keys are on the white figure, and
    each is dark enough there (WCAG AA, 4.5:1)."""
    from matplotlib.colors import to_rgba
    from matplotlib.text import Text
    white = to_rgba(w.fig.get_facecolor())
    assert white[:3] == (1.0, 1.0, 1.0)
    texts = [t for t in w.fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts
    for t in texts:
        assert contrast(to_rgba(t.get_color()), white) >= 4.5, t.get_text()
    w.fig.canvas.draw()
    for ax in w.axes:  # and none lies over the data
        for t in texts:
            if t.axes is ax and t is not ax.title:
                assert not t.get_window_extent().overlaps(ax.bbox.padded(-3)), t.get_text()
