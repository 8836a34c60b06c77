"""Notebook 04's widget, driven headlessly: it must show what lessonlib.kernel_plan computes
(itself checked against the kernel in test_kernel_plan.py) for every slider setting."""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from _support import needs  # noqa: E402

from lessonlib import kernel_plan as KP  # noqa: E402
from lessonlib.plots import triton as P  # noqa: E402
from lessonlib.widgets import triton as W  # noqa: E402


@needs("triton")
def test_widget_default_map_is_the_kernels():
    from lessonlib import triton_attention as ta
    w = W.tile_map_explorer()
    opts = dict(causal=True, window=256, sink_tokens=4, block_m=64, block_n=64)
    np.testing.assert_array_equal(w.artists["map"].get_array(),
                                  ta.kernel_tile_map(1024, 1024, **opts))


# ------------------------------------------------------------------ the widget

def counts(n, **opts):
    return sum(KP.kernel_tile_counts(n, n, **opts))


def test_explorer_starts_at_the_notebooks_setting():
    w = W.tile_map_explorer()
    assert set(w.controls) == {"n", "block", "window", "sinks", "causal"}
    assert w.values == dict(n=1024, block=64, window=256, sinks=4, causal=True)
    codes = KP.kernel_tile_plan(1024, 1024, causal=True, window=256, sink_tokens=4)
    computed = int((codes != P.TILE_SKIPPED).sum())
    assert "grid axis 0 = cdiv(1024, 64) = 16 programs" in w.readout
    assert f"{computed:,} of 256 tiles computed" in w.readout
    causal = counts(1024, causal=True)
    assert f"causal alone would compute {causal:,}" in w.readout
    assert f"{computed / 256:.1%} of dense" in w.readout
    assert "last program (pid_m = 15) visits key blocks: sink blocks 0 | window edge 11" \
        in w.readout
    assert "linear in n" in w.readout
    assert "Tiles of one head: 16 programs x 16 key blocks" == w.axes[0].get_title()


def test_moving_the_window_redraws_map_curves_and_readout_in_place():
    w = W.tile_map_explorer()
    image, line = w.artists["map"], w.artists["work"]["lines"]["current settings"]
    w.controls["window"].value = 100
    opts = dict(causal=True, window=100, sink_tokens=4, block_m=64, block_n=64)
    codes = KP.kernel_tile_plan(1024, 1024, **opts)
    assert w.artists["map"] is image
    np.testing.assert_array_equal(image.get_array(), codes)
    assert f"{int((codes != 0).sum()):,} of 256 tiles computed" in w.readout
    assert "window W = 100, 4 sink tokens" in w.readout
    assert w.artists["work"]["lines"]["current settings"] is line
    np.testing.assert_array_equal(line.get_xdata(), [256, 512, 1024, 2048, 4096])
    np.testing.assert_array_equal(line.get_ydata(),
                                  [counts(n, **opts) for n in (256, 512, 1024, 2048, 4096)])
    assert list(w.artists["work"]["markers"]["current settings"].get_data()[1]) == \
        [counts(1024, **opts)]
    assert w.data["codes"] is not None and w.data["options"]["window"] == 100


def test_window_zero_means_no_window_and_causal_switches_off():
    w = W.tile_map_explorer()
    w.controls["window"].value = 0
    assert "no window (sink tokens only count with a window)" in w.readout
    assert "136 of 256 tiles computed (16 with the mask, 120 without), 120 skipped" \
        in w.readout
    np.testing.assert_array_equal(w.artists["map"].get_array(),
                                  KP.kernel_tile_plan(1024, 1024, causal=True))
    w.controls["causal"].value = False
    assert "256 of 256 tiles computed (0 with the mask, 256 without), 0 skipped" in w.readout
    assert (w.artists["map"].get_array() == P.TILE_FULL).all()
    dense = w.artists["work"]["lines"]["no mask (dense)"].get_ydata()
    np.testing.assert_array_equal(w.artists["work"]["lines"]["current settings"].get_ydata(),
                                  dense)
    w.controls["window"].value = 300  # a window alone still sees every later key
    assert "still lets every query see all later keys" in w.readout


def test_block_and_n_change_the_grid_and_an_off_grid_n_joins_the_curves():
    w = W.tile_map_explorer()
    w.controls["block"].value = 32
    w.controls["n"].value = 1000  # not a multiple of 32: a ragged last block
    assert "cdiv(1000, 32) = 32 programs per (batch x head), 32 key blocks (the last block " \
           "holds 8)" in w.readout
    assert w.artists["map"].get_array().shape == (32, 32)
    assert w.artists["map"].get_extent() == [-0.5, 31.5, 31.5, -0.5]
    opts = dict(causal=True, window=256, sink_tokens=4, block_m=32, block_n=32)
    line = w.artists["work"]["lines"]["current settings"]
    np.testing.assert_array_equal(line.get_xdata(), [256, 512, 1000, 1024, 2048, 4096])
    assert list(w.artists["work"]["markers"]["current settings"].get_data()[0]) == [1000]
    assert list(w.artists["work"]["cursor"].get_xdata()) == [1000, 1000]
    ratio = counts(2000, **opts) / counts(1000, **opts)
    assert f"current settings x{ratio:.2f}" in w.readout


def test_windowed_work_doubles_with_n_while_causal_work_quadruples():
    w = W.tile_map_explorer()
    w.controls["block"].value = 16
    w.controls["window"].value = 64
    w.controls["n"].value = 4096
    opts = dict(causal=True, window=64, sink_tokens=4, block_m=16, block_n=16)
    ratio = counts(8192, **opts) / counts(4096, **opts)
    assert 1.95 < ratio < 2.05
    assert f"current settings x{ratio:.2f}" in w.readout
    assert "causal x3.99" in w.readout and "dense x4.00" in w.readout
    y = w.artists["work"]["lines"]["current settings"].get_ydata()
    np.testing.assert_allclose(y[-1] / y[-2], 2.0, rtol=0.02)  # slope 1 on the log-log plot


def test_sinks_add_sink_blocks_to_every_program_past_the_window():
    w = W.tile_map_explorer()
    w.controls["sinks"].value = 100  # keys 0..99: key blocks 0 and 1 (BLOCK_N = 64)
    codes = w.artists["map"].get_array()
    assert (codes[8:, :2] == P.TILE_MASKED).all()  # late programs visit both sink blocks
    assert "sink blocks 0..1" in w.readout


def test_ui_holds_the_controls_the_canvas_area_and_the_readout():
    w = W.tile_map_explorer()
    ui = w.ui
    assert len(ui.children) == 4  # controls, figure, readout, the page helper
    assert ui.children[0].layout.flex_flow == "row wrap"
    assert list(ui.children[0].children) == list(w.controls.values())
    assert w.readout in ui.children[2].value.replace("&gt;", ">").replace("&lt;", "<")


def test_explorer_rejects_a_block_off_the_slider():
    with pytest.raises(ValueError, match="block must be one of"):
        W.tile_map_explorer(block=48)


# ------------------------------------------------------------------ bad inputs
# The factory's arguments fail before any figure is drawn, naming the argument (tests/_bad.py);
# a slider's starting value off its range is an error, not a value ipywidgets clamps silently.
from _bad import Case, bad_input_tests, flags, ints  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

BAD_INPUTS = [
    Case(W.tile_map_explorer, kwargs=dict(n=256, lengths=(256, 512)),
         bad=dict(n=ints(minimum=128, maximum=512), block=ints(minimum=1) | st.just(48),
                  window=ints(minimum=0, maximum=1024), sinks=ints(minimum=0, maximum=128),
                  causal=flags(), lengths=st.sampled_from([(), (64,), (256.0,), None]))),
]
test_valid_call, test_bad_input = bad_input_tests(BAD_INPUTS)
