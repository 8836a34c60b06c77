"""Notebook 04's widget, driven headlessly: it must show what lessonlib.kernel_plan computes
(itself checked against the kernel in test_kernel_plan.py) for every slider setting."""
import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (make test exports it too)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from _support import needs  # noqa: E402

from lessonlib import kernel_plan as KP  # noqa: E402
from lessonlib.attention import TILE_FULL, TILE_MASKED, TILE_SKIPPED  # noqa: E402
from lessonlib.plots import triton as P  # noqa: E402
from lessonlib.widgets import triton as W  # noqa: E402


@needs("triton")
def test_widget_default_map_is_the_kernels():
    from lessonlib import triton_attention as ta
    w = W.tile_map_explorer()
    opts = dict(causal=True, window=256, sink_tokens=4, block_m=64, block_n=64)
    np.testing.assert_array_equal(w.artists["map"]["image"].get_array(),
                                  ta.kernel_tile_map(1024, 1024, **opts))


# ------------------------------------------------------------------ the widget

def counts(n, **opts):
    return sum(KP.kernel_tile_counts(n, n, **opts))


@pytest.mark.parametrize("block", [16, 32, 64, 128])
def test_vectorised_tile_counts_equal_the_kernel_plans(block):
    # every program's loop bounds at once (numpy) against kernel_plan, one program at a time
    for n in (128, 200, 1000, 1088):
        for causal in (True, False):
            for window in (0, 1, 16, 100, 256, 1024):
                for sinks in ((0, 4, 70, 128) if window else (0,)):
                    opts = dict(causal=causal, window=window or None, sink_tokens=sinks,
                                block_m=block, block_n=block)
                    assert W._tile_counts(n, causal, window, sinks, block) == \
                        KP.kernel_tile_counts(n, n, **opts), (n, opts)


def test_explorer_starts_at_the_notebooks_setting():
    w = W.tile_map_explorer()
    assert set(w.controls) == {"n", "block", "window", "sinks", "causal"}
    assert w.values == dict(n=1024, block=64, window=256, sinks=4, causal=True)
    codes = KP.kernel_tile_plan(1024, 1024, causal=True, window=256, sink_tokens=4)
    computed = int((codes != TILE_SKIPPED).sum())
    assert "grid axis 0 = cdiv(1024, 64) = 16 programs, 16 key blocks of 64" in w.readout
    masked = int((codes == TILE_MASKED).sum())
    assert f"causal, W = 256, 4 sinks: {computed:,} of 256 tiles computed " \
        f"({computed / 256:.1%})\n{masked} of them with the mask, {computed - masked} " \
        "without (interior blocks)" in w.readout
    # causal alone: the work plot's causal curve, its marker at n
    causal = counts(1024, causal=True)
    assert list(w.artists["work"]["markers"]["causal only"].get_data()[1]) == [causal]
    assert "pid_m = 15 (the last) visits: sinks 0 | window edge 11 | interior 12..14 | " \
        "diagonal 15" in w.readout
    assert "(linear: a fixed-width band)" in w.readout
    assert w.axes[0].get_title() == "16 x 16 tiles: causal, W = 256, 4 sinks"
    assert not w.controls["sinks"].disabled


def test_moving_the_window_redraws_map_curves_and_readout_in_place():
    w = W.tile_map_explorer()
    image, line = w.artists["map"]["image"], w.artists["work"]["lines"]["current settings"]
    edges = w.artists["map"]["edges"].get_xydata().copy()
    w.controls["window"].value = 100
    opts = dict(causal=True, window=100, sink_tokens=4, block_m=64, block_n=64)
    codes = KP.kernel_tile_plan(1024, 1024, **opts)
    assert w.artists["map"]["image"] is image
    np.testing.assert_array_equal(image.get_array(), codes)
    assert f"{int((codes != 0).sum()):,} of 256 tiles computed" in w.readout
    assert w.axes[0].get_title() == "16 x 16 tiles: causal, W = 100, 4 sinks"
    assert "causal, W = 100, 4 sinks: " in w.readout  # every step changes the readout
    # the mask's exact edges follow the window token by token, even inside one block
    moved = w.artists["map"]["edges"].get_xydata()
    assert moved.shape == edges.shape and not np.allclose(moved, edges, equal_nan=True)
    np.testing.assert_allclose(moved, np.column_stack(P._mask_edges(
        1024, 64, causal=True, window=100, sink_tokens=4)))
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
    assert w.axes[0].get_title() == "16 x 16 tiles: causal, no window"
    assert "sinks" not in w.readout
    assert w.controls["sinks"].disabled  # sink tokens only count with a window
    assert "causal, no window: 136 of 256 tiles computed (53.1%)\n" \
        "16 of them with the mask, 120 without" in w.readout
    np.testing.assert_array_equal(w.artists["map"]["image"].get_array(),
                                  KP.kernel_tile_plan(1024, 1024, causal=True))
    w.controls["causal"].value = False
    assert "not causal, no window: 256 of 256 tiles computed (100.0%)\n" \
        "0 of them with the mask, 256 without" in w.readout
    assert (w.artists["map"]["image"].get_array() == TILE_FULL).all()
    assert len(w.artists["map"]["edges"].get_xdata()) == 0  # no mask, no edge
    dense = w.artists["work"]["lines"]["no mask (dense)"].get_ydata()
    np.testing.assert_array_equal(w.artists["work"]["lines"]["current settings"].get_ydata(),
                                  dense)
    w.controls["window"].value = 300  # a window alone still sees every later key
    assert "(quadratic: all later keys)" in w.readout
    assert w.axes[0].get_title() == "16 x 16 tiles: not causal, W = 300, 4 sinks"
    assert not w.controls["sinks"].disabled


def test_block_and_n_change_the_grid_and_an_off_grid_n_joins_the_curves():
    w = W.tile_map_explorer()
    w.controls["block"].value = 32
    w.controls["n"].value = 1000  # not a multiple of 32: a ragged last block
    assert "cdiv(1000, 32) = 32 programs, 32 key blocks of 32 (the last holds 8)" in w.readout
    assert w.artists["map"]["image"].get_array().shape == (32, 32)
    assert w.artists["map"]["image"].get_extent() == [0.0, 1.0, 1.0, 0.0]  # fixed axes
    assert [t.get_text() for t in w.artists["map"]["index"]["x"][1]] == ["0", "16", "31"]
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
    codes = w.artists["map"]["image"].get_array()
    assert (codes[8:, :2] == TILE_MASKED).all()  # late programs visit both sink blocks
    assert "visits: sinks 0..1 | window edge" in w.readout


def test_ui_holds_the_controls_the_canvas_area_and_the_readout():
    w = W.tile_map_explorer()
    ui = w.ui
    assert len(ui.children) == 4  # controls, figure, readout, the page helper
    assert ui.children[0].layout.flex_flow == "row wrap"
    assert list(ui.children[0].children) == list(w.controls.values())
    assert w.readout in ui.children[2].value.replace("&gt;", ">").replace("&lt;", "<")


def test_controls_step_as_the_text_asks_and_labels_show_in_full():
    w = W.tile_map_explorer()
    assert w.controls["window"].step == W.WINDOW_STEP == 16  # one smallest block per press
    assert w.controls["sinks"].step == W.SINK_STEP == 4  # StreamingLLM's 4 sinks per press
    causal = w.controls["causal"]
    assert causal.indent is False and causal.layout.width == "auto"  # label never cut
    assert not w.controls["sinks"].disabled
    w.controls["window"].value = 0
    assert w.controls["sinks"].disabled
    w.controls["window"].value = W.WINDOW_STEP  # one press back
    assert not w.controls["sinks"].disabled


@pytest.mark.parametrize("moves", [
    {}, dict(window=0), dict(causal=False), dict(block=16, n=4096, window=64),
    dict(block=128, n=128, window=0), dict(causal=False, window=0, block=16, n=4096),
])
def test_legends_stay_off_the_curves_and_the_map(moves):
    from lessonlib.plots.kv_cache import _legend_clear_of_data
    w = W.tile_map_explorer()
    for name, value in moves.items():
        w.controls[name].value = value
    fig = w.fig
    width, _ = fig.get_size_inches()
    assert width <= 9.3  # ~930 px at 100 dpi (a laptop's output area), ~1210 at 130
    fig.canvas.draw()
    ax_map, ax_work = w.axes
    work_legend, map_legend = sorted(fig.legends, key=lambda lg: -lg.get_window_extent().x0)
    work = w.artists["work"]
    assert _legend_clear_of_data(work_legend, list(work["lines"].values())
                                + list(work["markers"].values()))
    assert not map_legend.get_window_extent().overlaps(ax_map.bbox)
    # text no smaller than 8 pt: 11 px at 100 dpi, 14 px at the presenter's 130
    assert w.smallest_text_px() >= 8 * fig.dpi / 72 - 1e-9


@pytest.mark.parametrize("block", [16, 128])
def test_one_key_press_on_any_slider_changes_the_readout_and_the_map(block):
    # the browser suite presses each slider once and wants new pixels and a new readout, also
    # where a step of the window or the sinks changes no tile (block 128)
    w = W.tile_map_explorer(block=block)
    for name in ("n", "window", "sinks"):
        before, edges = w.readout, w.artists["map"]["edges"].get_xydata().copy()
        w.controls[name].value += w.controls[name].step
        after = w.artists["map"]["edges"].get_xydata()
        assert w.readout != before, name
        assert after.shape != edges.shape or not np.allclose(after, edges, equal_nan=True), name


def test_readout_lines_fit_the_page_unbroken():
    # ~107 monospace characters fit the laptop's output area and the presenter's page: longer
    # lines wrap (mid-word where no space is near), so no setting may write one.
    w = W.tile_map_explorer()
    extremes = [dict(block=128, n=1216), dict(block=16, n=4032, window=1008, sinks=100),
                dict(causal=False, block=16, n=4096, window=1008, sinks=128),
                dict(window=0, block=16, n=4032)]
    for moves in extremes:
        for name, value in moves.items():
            w.controls[name].value = value
        assert max(len(line) for line in w.readout.splitlines()) <= W.READOUT_CHARS, w.readout


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
