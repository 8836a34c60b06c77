"""lessonlib.widgets.windows, driven headlessly: the window slider changes readout and pixels."""
import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from lessonlib.attention import attention_mask
from lessonlib.configs import load_config
from lessonlib.kv_cache import kv_cache_bytes, layer_windows
from lessonlib.plots import windows as plots
from lessonlib.widgets import windows as ww

GPT_OSS = load_config("gpt-oss-20b")
LOCAL = np.array([w is not None for w in layer_windows(GPT_OSS)])


@pytest.fixture
def w():
    explorer = ww.window_explorer()
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
    assert slider.step == 1


def test_initial_state(w):
    n, W, sinks = 256, 128, 4
    visible = attention_mask(n, n, causal=True, window=W, sink_tokens=sinks)
    codes = np.asarray(w.artists["mask"].get_array())
    np.testing.assert_array_equal(codes != plots.MASK_HIDDEN, visible)
    np.testing.assert_array_equal(codes == plots.MASK_WINDOW,
                                  attention_mask(n, n, causal=True, window=W))
    entries, keep = expected_entries(n, W, sinks)
    assert keep == 132
    assert [b.get_height() for b in w.artists["bars"]["bars"]] == entries.tolist()
    assert "newest query (p = 255) sees keys 128..255 (128 in the window) + sinks 0..3 = " \
           "132 of 256 keys" in w.readout


def test_window_slider_changes_readout_mask_bars_and_pixels(w):
    before_text, before_px = w.readout, pixels(w.fig)
    bars = w.artists["bars"]["bars"]
    w.controls["window"].value = 129  # one keyboard step
    assert w.readout != before_text
    assert "window W = 129" in w.readout and "= 133 of 256 keys" in w.readout
    assert not np.array_equal(pixels(w.fig), before_px)
    entries, _ = expected_entries(256, 129, 4)
    assert w.artists["bars"]["bars"] is bars
    assert [b.get_height() for b in bars] == entries.tolist()
    cfg = ww.with_window(GPT_OSS, 129)
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
    cfg = ww.with_window(GPT_OSS, 100)
    for engine, label in (("llama.cpp", "llama.cpp"), ("vllm", "vLLM")):
        mib = kv_cache_bytes(cfg, 512, engine=engine).total_mib
        assert f"{label} {mib:.2f} MiB" in w.readout
    full = kv_cache_bytes(cfg, 512, engine="ideal", swa_full=True).total_mib
    ideal = kv_cache_bytes(cfg, 512, engine="ideal").total_mib  # no sinks: exact tokens
    assert f"every layer global {full:.2f} MiB" in w.readout
    assert f"sinks + window {ideal:.2f} MiB" in w.readout
    assert np.asarray(w.artists["mask"].get_array()).shape == (512, 512)


def test_sinks_slider_adds_sink_columns(w):
    w.controls["sinks"].value = 8
    codes = np.asarray(w.artists["mask"].get_array())
    assert (codes[200:, :8] == plots.MASK_SINK).all()
    assert "+ sinks 0..7 = 136 of 256 keys" in w.readout
    w.controls["window"].value = 300  # the window covers everything: sinks add nothing
    assert "(the sinks are inside the window)" in w.readout
    assert not (np.asarray(w.artists["mask"].get_array()) == plots.MASK_SINK).any()


def test_mask_codes_match_the_contract():
    codes = ww.mask_codes(10, 4, 2)
    assert codes[9].tolist() == [2, 2, 0, 0, 0, 0, 1, 1, 1, 1]
    assert codes[3].tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_a_model_without_windows_is_refused():
    with pytest.raises(ValueError, match="no sliding-window layers"):
        ww.window_explorer("Llama-3.1-8B")


# ------------------------------------------------------------------ bad inputs
# A factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, bad_input_tests, ints  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(ww.with_window, args=(GPT_OSS, 64),
         bad=dict(config=st.sampled_from(["gpt-9", 3, None]), window=ints(minimum=1))),
    Case(ww.mask_codes, args=(32, 8, 2),
         bad=dict(n=ints(minimum=1), window=ints(minimum=1, none_ok=True),
                  sinks=ints(minimum=0)),
         names=dict(sinks="sink_tokens")),
    Case(ww.window_explorer, kwargs=dict(n=64, window=32, max_n=128),
         bad=dict(config=st.sampled_from(["gpt-9", 3, None, "Llama-3.1-8B"]),
                  n=ints(minimum=16, maximum=128), window=ints(minimum=1, maximum=128),
                  sinks=ints(minimum=0, maximum=16), max_n=ints(minimum=16),
                  n_ubatch=ints(minimum=1), block_size=ints(minimum=1))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
